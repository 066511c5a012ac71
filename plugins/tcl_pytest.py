"""pytest plugin: `pytest --tcl` lints the code under test; `pytest --tcl-record` records real inputs.

Registered through the `pytest11` entry point, so pytest loads this module in every session of an
environment that has tcl installed. Without its options it must cost nothing: only the standard
library is imported here; the engine (libcst) and torch are imported when an option asks for them.

`--tcl` runs tcl's engine once per session, in process, through the runner `tcl check` uses
(`[tool.tcl]`, `# noqa`, per-file ignores and the cache behave the same), prints the findings in
the terminal summary in `tcl check`'s one-line format and makes the session fail (exit status 1)
when there are findings or files it could not analyse. What it checks, first match wins:
`--tcl-path` options; `tcl_paths` in pytest's ini configuration; otherwise the packages of the
code under test, found from the modules imported under pytest's rootdir once the tests are
collected (each module's top-level package directory, or the module file itself), falling back to
`src/` or the rootdir's top-level packages and modules when the tests import nothing from it. The
automatic choice leaves out the tests: files matching `python_files` (test_*.py, *_test.py),
conftest.py and directories named tests/ or test/. Test code deliberately builds odd inputs and
is not what gets compiled in production; name it with `--tcl-path` to check it too. Explicit
paths are checked as given, exactly as `tcl check PATH...` would. Under pytest-xdist only the
controller checks.

`--tcl-record[=PATH]` (default `.tcl/recorded_inputs.zip` under the rootdir) records, while the
tests run, the first successful call of each `nn.Module` subclass defined in the project (its
source file under the rootdir or a `--tcl-path`, outside site-packages and the environment):
the module instance as it was just before that call, and the call's positional and keyword
arguments. `tcl verify --replay PATH` runs each recording as an example of the file that defines
the class. How:

* Two global module hooks (`torch.nn.modules.module.register_module_forward_pre_hook` and
  `register_module_forward_hook(with_kwargs=True)`), removed at session end. The global pre-hook
  receives no keyword arguments; it reads them from the `_call_impl` frame that calls it (checked
  to be the call of that very module), else the keyword arguments are taken after the call.
* The snapshot is taken before `forward` runs (a forward that updates BatchNorm statistics or a
  step counter must not change what is replayed) and kept only once the call has returned, so a
  call that raised (`pytest.raises`) is not an example; the next call is tried instead.
* The instance is saved whole with `torch.save` (pickle: the class by module and qualname, its
  parameters, buffers and plain attributes), rather than a state_dict, because a state_dict says
  nothing about how to construct the module, and its constructor arguments are gone by the time
  `forward` is called. Tensor arguments are detached (requires_grad kept); everything is loaded
  back on the CPU and moved to the verify device there. Inputs that are not real data (meta
  tensors, FakeTensors, functorch-wrapped tensors under vmap/grad) are skipped; the next call is
  tried. A class that cannot be pickled (defined inside a function, holding a lock or a
  generator) is reported in the terminal summary and not retried.
* Calls Dynamo traces are never recorded (the hooks return at once under
  `torch.compiler.is_compiling()`, which also keeps them out of the user's graphs); a module
  compiled with `torch.compile(module)` is recorded through the `OptimizedModule` wrapper, whose
  hooks run eagerly. PyTorch warns about global hooks on every `OptimizedModule` call; that
  warning is filtered (a `-W error` on the command line still turns it into an error).
* Problems never fail a test: they are collected and shown in the terminal summary. Recording
  happens only in the process that started it (not in forked DataLoader workers). Under
  pytest-xdist each worker records its own part and the controller merges them.

The recording is a zip file: `index.json` (what was recorded: class, file, test, arguments) and
one `torch.save` file per class. Loading those executes pickled code: replay only recordings you
made.

`--tcl-record` also records the compiled entries: every callable the tests hand to
`torch.compile` (directly or as `@torch.compile` / `@torch.compile(...)`), named as an entry spec
`module:Qual.name` by tcl.entry_recording, with a count and up to 5 ids of the tests that compiled
it, in `recorded_entries.json` beside the recording (`.tcl/recorded_entries.json` by default),
for `tcl check` to start its analysis from. `torch.compile` is replaced by a recording wrapper
from session start to session end (code that bound it earlier, `from torch import compile` in a
conftest, is not seen); entries from installed packages are recorded too. Callables that cannot
be named (defined inside a function, lambdas, built-ins) are listed as problems. Under
pytest-xdist each worker writes a part and the controller merges them (counts added).
"""

from __future__ import annotations

import os
import sys

# Standard library only at import time (torch is imported when recording starts).
from tcl.recording import NOT_PROJECT_DIRS, Recorder, merge_parts, one_line, project_file, under

DEFAULT_RECORDING = os.path.join(".tcl", "recorded_inputs.zip")
ENTRIES_FILE = "recorded_entries.json"  # beside the recording: what went through torch.compile
# Directory names that never hold the project's own code, whatever their place under the rootdir.
_TEST_DIRS = {"tests", "test"}
_OPTIMIZED_MODULE_WARNING = (
    r"ignore:Using `torch\.compile\(module\)` when there are global hooks:UserWarning"
)


def pytest_addoption(parser) -> None:
    group = parser.getgroup("tcl", "tcl, the torch.compile linter")
    group.addoption(
        "--tcl", action="store_true", default=False,
        help="run `tcl check` once over the code under test and fail the session on findings",
    )
    group.addoption(
        "--tcl-path", action="append", default=[], metavar="PATH",
        help="what --tcl checks (repeatable; default: tcl_paths from the ini file, else the "
        "packages the tests import, tests excluded)",
    )
    group.addoption("--tcl-select", default=None, metavar="CODES",
                    help="comma-separated codes or prefixes --tcl reports (default: [tool.tcl] select)")
    group.addoption("--tcl-ignore", default=None, metavar="CODES",
                    help="comma-separated codes or prefixes --tcl skips, added to [tool.tcl] ignore")
    group.addoption("--tcl-no-cache", action="store_true", default=False,
                    help="--tcl analyses every file; neither reads nor writes .tcl_cache")
    group.addoption(
        "--tcl-record", nargs="?", const=DEFAULT_RECORDING, default=None, metavar="PATH",
        help="record the first call of each of the project's nn.Module classes for "
        f"`tcl verify --replay` (default PATH: {DEFAULT_RECORDING} under the rootdir; write "
        f"--tcl-record=PATH), and every callable given to torch.compile in {ENTRIES_FILE} beside "
        "it. Needs torch.",
    )
    parser.addini("tcl_paths", type="paths", default=[],
                  help="what `pytest --tcl` checks, relative to the ini file (default: the packages "
                  "the tests import)")


def pytest_configure(config) -> None:
    recording = config.getoption("tcl_record")
    if recording is not None:
        import pytest

        if os.path.isdir(recording) or recording.endswith(".py") or "::" in recording:
            # argparse gave the next argument (a test path) to the optional PATH.
            raise pytest.UsageError(
                f"--tcl-record {recording}: that is a test path, not where to write the recording; "
                f"write --tcl-record=PATH, or put --tcl-record after the test paths")
        config.addinivalue_line("filterwarnings", _OPTIMIZED_MODULE_WARNING)
        config.pluginmanager.register(_RecordSession(config, recording), "tcl-record")
    if config.getoption("tcl"):
        # Registered last, so its hooks run first: the findings come before the recording.
        config.pluginmanager.register(_CheckSession(config), "tcl-check")


def _worker_id(config) -> str | None:
    """The pytest-xdist worker id ("gw0") in a worker process, None elsewhere."""
    workerinput = getattr(config, "workerinput", None)
    return workerinput.get("workerid") if isinstance(workerinput, dict) else None


def _is_xdist_controller(config) -> bool:
    return _worker_id(config) is None and config.pluginmanager.hasplugin("dsession")


# --------------------------------------------------------------------------- --tcl


class _CheckSession:
    def __init__(self, config) -> None:
        self.config = config
        self.done = False
        self.findings: list = []
        self.errors: list = []
        self.failure: str | None = None  # a configuration or internal error
        self.paths: list[str] = []
        self.files = 0
        self.automatic = ""  # how the paths were chosen when nobody named them

    # The engine runs right after collection (the modules the tests import are known, and the
    # process is still small if the engine forks workers), else at session end (an xdist
    # controller collects nothing).
    def pytest_collection_finish(self, session) -> None:
        if _worker_id(self.config) is None:
            self._run()

    def pytest_sessionfinish(self, session, exitstatus) -> None:
        import pytest

        if _worker_id(self.config) is not None:
            return
        if not self.done:
            self._run()
        if (self.findings or self.errors or self.failure) and session.exitstatus in (
                pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.done:
            return
        from tcl.report import text_line

        tr = terminalreporter
        tr.write_sep("=", "tcl check")
        if self.failure:
            tr.write_line(f"tcl: {self.failure}", red=True, bold=True)
            return
        for finding in self.findings:
            tr.write_line(text_line(finding))
        for error in self.errors:
            tr.write_line(str(error), red=True)
        where = " ".join(self.paths) or "nothing"
        how = f" ({self.automatic}; --tcl-path chooses)" if self.automatic else ""
        checked = f"{self.files} file{'s' if self.files != 1 else ''} checked in {where}{how}"
        if not self.paths:
            tr.write_line("tcl: found no code to check under the rootdir; name it with --tcl-path "
                          "or tcl_paths", yellow=True)
        elif self.findings or self.errors:
            parts = [f"{len(self.findings)} finding{'s' if len(self.findings) != 1 else ''}"]
            if self.errors:
                parts.append(f"{len(self.errors)} file{'s' if len(self.errors) != 1 else ''} not analysed")
            tr.write_line(f"tcl: {', '.join(parts)}; {checked}", red=True, bold=True)
        else:
            tr.write_line(f"tcl: no findings; {checked}", green=True)

    def _run(self) -> None:
        self.done = True
        imported = list(sys.modules.items())  # before tcl's own imports join them
        try:
            with _chdir(str(self.config.invocation_params.dir)):
                self._check(imported)
        except Exception as exc:  # noqa: BLE001 -- shown in the summary; the session fails
            from tcl.config import ConfigError

            self.failure = one_line(str(exc) if isinstance(exc, ConfigError) else f"{type(exc).__name__}: {exc}")

    def _check(self, imported) -> None:
        import argparse

        from tcl.cli import resolve_config
        from tcl.runner import collect_files, run

        paths = self._paths(imported)
        self.paths = paths
        if not paths:
            return
        options = argparse.Namespace(
            no_config=False, config=None, select=self.config.getoption("tcl_select"), extend_select=None,
            ignore=self.config.getoption("tcl_ignore"), exclude=None, torch_version=None, mode=None,
        )
        config = resolve_config(options, paths)
        root = str(config.source.parent) if config.source else "."
        files, problems = collect_files(paths, config, root)
        if self.automatic:
            files = [f for f in files if not self._is_test_file(os.path.realpath(f), paths)]
        self.files = len(files)
        cache = None
        if not self.config.getoption("tcl_no_cache"):
            from tcl.cache import Cache, default_cache_dir

            cache = Cache(default_cache_dir(config, paths))
        result = run(files, config, root=root, cache=cache, file_timeout=20.0) if files else None
        self.findings = sorted(result.findings, key=lambda f: f.sort_key()) if result else []
        self.errors = problems + (result.all_errors if result else [])

    # -- what to check -------------------------------------------------------------------
    def _paths(self, imported) -> list[str]:
        """Paths relative to the invocation directory (so that output and per-file ignores
        read as `tcl check` run from there), deduplicated, in a stable order."""
        given = self.config.getoption("tcl_path") or [str(p) for p in self.config.getini("tcl_paths")]
        if given:
            return [_relative(os.path.abspath(p)) for p in dict.fromkeys(given)]
        rootdir = os.path.realpath(str(self.config.rootpath))
        roots = self._imported_roots(imported, rootdir)
        self.automatic = "the packages the tests import"
        if not roots:
            roots = self._layout_roots(rootdir)
            self.automatic = "the rootdir's packages"
        # A package inside another root (both imported) is checked once, through its parent.
        roots = sorted(set(roots))
        roots = [r for r in roots if not any(o != r and under(r, o) for o in roots)]
        return [_relative(r) for r in roots]

    def _imported_roots(self, imported, rootdir: str) -> list[str]:
        roots = []
        for name, module in imported:
            file = getattr(module, "__file__", None)
            # Some extension-backed modules (torch._ops) carry a bare relative __file__.
            if not isinstance(file, str) or not file.endswith(".py") or not os.path.isabs(file) \
                    or name in ("__main__", __name__):
                continue
            path = os.path.realpath(file)
            if not os.path.isfile(path) or not self._isproject_file(path, rootdir) \
                    or self._is_test_file(path, [rootdir]):
                continue
            roots.append(_top_level(path, name))
        return roots

    def _layout_roots(self, rootdir: str) -> list[str]:
        src = os.path.join(rootdir, "src")
        if os.path.isdir(src):
            return [src]
        roots = []
        try:
            entries = sorted(os.scandir(rootdir), key=lambda e: e.name)
        except OSError:
            return []
        for entry in entries:
            if entry.name.startswith(".") or entry.name in NOT_PROJECT_DIRS | _TEST_DIRS:
                continue
            if entry.is_dir() and os.path.isfile(os.path.join(entry.path, "__init__.py")):
                roots.append(entry.path)
            elif entry.is_file() and entry.name.endswith(".py") and not self._is_test_file(entry.path, [rootdir]):
                roots.append(entry.path)
        return roots

    def _isproject_file(self, path: str, rootdir: str) -> bool:
        return project_file(path, [rootdir])

    def _is_test_file(self, path: str, roots: list[str]) -> bool:
        import fnmatch

        name = os.path.basename(path)
        if name == "conftest.py" or any(fnmatch.fnmatch(name, pattern)
                                        for pattern in self.config.getini("python_files")):
            return True
        rootdir = os.path.realpath(str(self.config.rootpath))
        bases = [os.path.realpath(r) for r in roots] + [rootdir]
        base = next((b for b in bases if under(path, b)), None)
        if base is None:
            return False
        parts = os.path.relpath(path, base).split(os.sep)[:-1]
        if os.path.basename(base) in _TEST_DIRS and base != rootdir:
            parts.insert(0, os.path.basename(base))
        return any(part in _TEST_DIRS for part in parts)


def _top_level(path: str, dotted: str) -> str:
    """The directory of `dotted`'s top-level package, or the module file itself."""
    depth = dotted.count(".") + (1 if os.path.basename(path) == "__init__.py" else 0)
    if depth == 0:
        return path
    directory = path
    for _ in range(depth):
        directory = os.path.dirname(directory)
    # Names that do not follow the file layout (importlib mode, runpy) give the module alone.
    return directory if os.path.basename(directory) == dotted.split(".")[0] else path


def _relative(path: str) -> str:
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


class _chdir:
    """Run the engine from the invocation directory even if a test changed the cwd."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.previous: str | None = None

    def __enter__(self):
        self.previous = os.getcwd()
        if self.previous != self.directory:
            os.chdir(self.directory)

    def __exit__(self, *exc) -> None:
        if self.previous and self.previous != self.directory:
            os.chdir(self.previous)


# --------------------------------------------------------------------------- --tcl-record


class _RecordSession:
    def __init__(self, config, recording: str) -> None:
        self.config = config
        explicit = recording != DEFAULT_RECORDING
        base = str(config.invocation_params.dir) if explicit else str(config.rootpath)
        self.path = os.path.abspath(os.path.join(base, recording))
        self.worker = _worker_id(config)
        self.recorder: Recorder | None = None
        self.written: dict | None = None  # the index written at session end
        self.failure: str | None = None
        self.started = 0.0
        self.entries_path = os.path.join(os.path.dirname(self.path), ENTRIES_FILE)
        self.entries = None  # tcl.entry_recording.CompileRecorder, in the processes that run tests
        self.entries_written: dict | None = None
        self.entries_failure: str | None = None

    def _part(self, worker: str) -> str:
        return f"{self.path}.{worker}.part"

    def pytest_sessionstart(self, session) -> None:
        import time

        self.started = time.time()
        if _is_xdist_controller(self.config):
            return  # the workers run the tests; the controller merges their parts
        rootdir = os.path.realpath(str(self.config.rootpath))
        roots = [os.path.realpath(os.path.abspath(str(p))) for p in
                 (self.config.getoption("tcl_path") or self.config.getini("tcl_paths"))]
        target = self._part(self.worker) if self.worker else self.path
        try:
            self.recorder = Recorder(target, [rootdir, *roots], rootdir)
            self.recorder.start()
        except Exception as exc:  # noqa: BLE001 -- no torch, an unwritable path: say so, run the tests
            self.recorder = None
            self.failure = one_line(f"{type(exc).__name__}: {exc}")
        try:
            from tcl.entry_recording import CompileRecorder

            entries = f"{self.entries_path}.{self.worker}.part" if self.worker else self.entries_path
            self.entries = CompileRecorder(entries, [rootdir, *roots]).start()
        except Exception as exc:  # noqa: BLE001
            self.entries = None
            self.entries_failure = one_line(f"{type(exc).__name__}: {exc}")

    def pytest_runtest_logstart(self, nodeid, location) -> None:
        for recorder in (self.recorder, self.entries):
            if recorder is not None:
                recorder.current_test = nodeid

    def pytest_runtest_logfinish(self, nodeid, location) -> None:
        for recorder in (self.recorder, self.entries):
            if recorder is not None:
                recorder.current_test = None

    def pytest_sessionfinish(self, session) -> None:
        controller = _is_xdist_controller(self.config)
        try:
            if self.recorder is not None:
                self.written = self.recorder.finish()
            elif controller:
                self.written = merge_parts(self.path, _glob_parts(self.path, self.started),
                                            os.path.realpath(str(self.config.rootpath)))
        except Exception as exc:  # noqa: BLE001
            self.failure = one_line(f"{type(exc).__name__}: {exc}")
        try:
            if self.entries is not None:
                self.entries_written = self.entries.finish()
            elif controller:
                parts = _glob_parts(self.entries_path, self.started)
                if parts:
                    from tcl.entry_recording import merge_entry_files

                    self.entries_written = merge_entry_files(parts, self.entries_path)
                    for part in parts:
                        os.remove(part)
        except Exception as exc:  # noqa: BLE001
            self.entries_failure = one_line(f"{type(exc).__name__}: {exc}")

    def pytest_unconfigure(self, config) -> None:
        # A session that ended before sessionfinish (an internal error) still unhooks torch.
        if self.recorder is not None:
            self.recorder.unhook()
        if self.entries is not None:
            self.entries.stop()

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if self.worker:
            return
        tr = terminalreporter
        tr.write_sep("=", "tcl record")
        if self.failure:
            tr.write_line(f"tcl: recording failed: {self.failure}", red=True)
        self._summarize_inputs(tr)
        if self.entries_failure:
            tr.write_line(f"tcl: recording the compiled entries failed: {self.entries_failure}", red=True)
        entries = self.entries_written
        if entries is not None:
            count = len(entries["entries"])
            noun = "entry" if count == 1 else "entries"
            tr.write_line(f"tcl: recorded {count} compiled {noun} to {_display_path(self.entries_path)}")
            for problem in entries["problems"]:
                tr.write_line(f"tcl: could not record a compiled entry: {problem['why']}", yellow=True)

    def _summarize_inputs(self, tr) -> None:
        index = self.written
        if index is None:
            return
        records = index["records"]
        shown = _display_path(self.path)
        noun = "class" if len(records) == 1 else "classes"
        tr.write_line(f"tcl: recorded the first call of {len(records)} nn.Module {noun} in {shown}")
        for record in records:
            tr.write_line(f"  {record['class']}({record['signature']})  from {record['test']}")
        for problem in index["problems"]:
            tr.write_line(f"tcl: could not record {problem['class']}: {problem['error']}", yellow=True)
        if records:
            targets = sorted({_display_path(_top_level(r["file"], r["module"])) for r in records})
            tr.write_line(f"replay: tcl verify --replay {shown} {' '.join(targets)}")


def _display_path(path: str) -> str:
    return _relative(path)


def _glob_parts(path: str, since: float) -> list[str]:
    """This session's worker parts (a crashed earlier session may have left its own), by worker."""
    import glob

    parts = [p for p in glob.glob(glob.escape(path) + ".*.part") if os.path.getmtime(p) >= since - 1]
    return sorted(parts, key=lambda p: (len(p), p))  # gw2 before gw10
