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
"""

from __future__ import annotations

import os
import sys

DEFAULT_RECORDING = os.path.join(".tcl", "recorded_inputs.zip")
RECORDING_FORMAT = "tcl-recorded-inputs"
RECORDING_VERSION = 1
# Directory names that never hold the project's own code, whatever their place under the rootdir.
_NOT_PROJECT_DIRS = {"site-packages", "dist-packages", ".venv", "venv", ".tox", ".nox", "node_modules",
                     "__pycache__", "build", "dist", ".git"}
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
        "--tcl-record=PATH). Needs torch.",
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


def _under(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


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

            self.failure = _one_line(str(exc) if isinstance(exc, ConfigError) else f"{type(exc).__name__}: {exc}")

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
        roots = [r for r in roots if not any(o != r and _under(r, o) for o in roots)]
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
            if not os.path.isfile(path) or not self._is_project_file(path, rootdir) \
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
            if entry.name.startswith(".") or entry.name in _NOT_PROJECT_DIRS | _TEST_DIRS:
                continue
            if entry.is_dir() and os.path.isfile(os.path.join(entry.path, "__init__.py")):
                roots.append(entry.path)
            elif entry.is_file() and entry.name.endswith(".py") and not self._is_test_file(entry.path, [rootdir]):
                roots.append(entry.path)
        return roots

    def _is_project_file(self, path: str, rootdir: str) -> bool:
        return _project_file(path, [rootdir])

    def _is_test_file(self, path: str, roots: list[str]) -> bool:
        import fnmatch

        name = os.path.basename(path)
        if name == "conftest.py" or any(fnmatch.fnmatch(name, pattern)
                                        for pattern in self.config.getini("python_files")):
            return True
        rootdir = os.path.realpath(str(self.config.rootpath))
        bases = [os.path.realpath(r) for r in roots] + [rootdir]
        base = next((b for b in bases if _under(path, b)), None)
        if base is None:
            return False
        parts = os.path.relpath(path, base).split(os.sep)[:-1]
        if os.path.basename(base) in _TEST_DIRS and base != rootdir:
            parts.insert(0, os.path.basename(base))
        return any(part in _TEST_DIRS for part in parts)


def _project_file(path: str, roots: list[str]) -> bool:
    """Whether `path` (real) is the project's own code: under one of `roots`, and not in a
    virtual environment, build output or installed package below it."""
    root = next((r for r in roots if _under(path, r)), None)
    if root is None:
        return False
    parts = os.path.relpath(path, root).split(os.sep)[:-1]
    if any(p in _NOT_PROJECT_DIRS or p.endswith(".egg-info") for p in parts):
        return False
    for prefix in {sys.prefix, sys.base_prefix, sys.exec_prefix}:
        prefix = os.path.realpath(prefix)
        if prefix != root and _under(prefix, root) and _under(path, prefix):
            return False  # an environment inside the project, whatever its name
    return True


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


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


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
        self.recorder: _Recorder | None = None
        self.written: dict | None = None  # the index written at session end
        self.failure: str | None = None
        self.started = 0.0

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
            self.recorder = _Recorder(target, [rootdir, *roots], rootdir)
            self.recorder.start()
        except Exception as exc:  # noqa: BLE001 -- no torch, an unwritable path: say so, run the tests
            self.recorder = None
            self.failure = _one_line(f"{type(exc).__name__}: {exc}")

    def pytest_runtest_logstart(self, nodeid, location) -> None:
        if self.recorder is not None:
            self.recorder.current_test = nodeid

    def pytest_runtest_logfinish(self, nodeid, location) -> None:
        if self.recorder is not None:
            self.recorder.current_test = None

    def pytest_sessionfinish(self, session) -> None:
        try:
            if self.recorder is not None:
                self.written = self.recorder.finish()
            elif _is_xdist_controller(self.config):
                self.written = _merge_parts(self.path, _glob_parts(self.path, self.started),
                                            os.path.realpath(str(self.config.rootpath)))
        except Exception as exc:  # noqa: BLE001
            self.failure = _one_line(f"{type(exc).__name__}: {exc}")

    def pytest_unconfigure(self, config) -> None:
        # A session that ended before sessionfinish (an internal error) still unhooks torch.
        if self.recorder is not None:
            self.recorder.unhook()

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if self.worker:
            return
        tr = terminalreporter
        tr.write_sep("=", "tcl record")
        if self.failure:
            tr.write_line(f"tcl: recording failed: {self.failure}", red=True)
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


class _Pending:
    __slots__ = ("module_id", "frame", "payload", "kwargs_known", "signature")

    def __init__(self, module_id, frame, payload, kwargs_known, signature) -> None:
        self.module_id = module_id
        self.frame = frame
        self.payload = payload
        self.kwargs_known = kwargs_known
        self.signature = signature


class _Recorder:
    """The global module hooks and the zip file they write to."""

    def __init__(self, path: str, roots: list[str], rootdir: str) -> None:
        import threading

        self.path = path
        self.roots = roots
        self.rootdir = rootdir
        self.pid = os.getpid()
        self.lock = threading.RLock()
        self.current_test: str | None = None
        self.classes: dict[type, dict | None] = {}  # class -> its description, None: not the project's
        self.done: set[type] = set()
        self.failed: set[type] = set()
        self.pending: dict[type, _Pending] = {}
        self.records: list[dict] = []
        self.problems: list[dict] = []
        self.handles: list = []
        self.archive = None
        self.temp = f"{path}.{self.pid}.tmp"
        self.busy = False

    def start(self) -> None:
        import zipfile

        import torch
        from torch.nn.modules import module as nn_module

        self.torch = torch
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        self.archive = zipfile.ZipFile(self.temp, "w", compression=zipfile.ZIP_STORED, allowZip64=True)
        is_compiling = torch.compiler.is_compiling
        recorder = self

        # Plain functions whose first statement Dynamo folds to a constant when it traces a
        # module call: nothing of the recorder enters a user's graph.
        def before(module, args):
            if is_compiling():
                return None
            recorder.before(module, args, sys._getframe(1))
            return None

        def after(module, args, kwargs, output):
            if is_compiling():
                return None
            recorder.after(module, kwargs, sys._getframe(1))
            return None

        self.handles = [nn_module.register_module_forward_pre_hook(before),
                        nn_module.register_module_forward_hook(after, with_kwargs=True)]

    # -- the hooks -------------------------------------------------------------------------
    def _target(self, module):
        inner = getattr(module, "_orig_mod", None)
        if inner is not None and type(module).__name__ == "OptimizedModule":
            return inner
        return module

    def before(self, module, args, frame) -> None:
        if self.busy or os.getpid() != self.pid:
            return
        target = self._target(module)
        cls = type(target)
        if cls in self.done or cls in self.failed or self.classes.get(cls, True) is None:
            return  # every call of every module pays for this hook: the common case stays short
        self.busy = True
        try:
            with self.lock:
                description = self._describe(cls)
                if description is None or cls in self.done or cls in self.failed:
                    return
                pending = self.pending.get(cls)
                if pending is not None and _is_ancestor(pending.frame, frame):
                    return  # a call of the same class inside its first call
                kwargs = _call_kwargs(frame, module)
                if not _real_inputs(self.torch, target, args, kwargs or {}):
                    return
                payload = self._serialize({"module": target, "args": _detached(self.torch, tuple(args)),
                                           "kwargs": _detached(self.torch, dict(kwargs or {}))})
                self.pending[cls] = _Pending(id(module), frame, payload, kwargs is not None,
                                             _signature(self.torch, args, kwargs or {}))
        except Exception as exc:  # noqa: BLE001 -- recording must never break the test
            self._fail(cls, exc)
        finally:
            self.busy = False

    def after(self, module, kwargs, frame) -> None:
        if self.busy or os.getpid() != self.pid:
            return
        cls = type(self._target(module))
        pending = self.pending.get(cls)
        if pending is None or pending.module_id != id(module) or pending.frame is not frame:
            return
        self.busy = True
        try:
            with self.lock:
                del self.pending[cls]
                payload = pending.payload
                signature = pending.signature
                if not pending.kwargs_known:
                    # torch did not show the keyword arguments before the call: take them now.
                    payload = self._serialize({"module_args": payload,
                                               "kwargs": _detached(self.torch, dict(kwargs or {}))})
                    signature = _signature(self.torch, (), kwargs or {}, prefix=signature)
                entry = f"records/{len(self.records)}.pt"
                self.archive.writestr(entry, payload)
                self.records.append(dict(self.classes[cls], entry=entry, signature=signature,
                                         test=self.current_test or "(collection)"))
                self.done.add(cls)
        except Exception as exc:  # noqa: BLE001
            self._fail(cls, exc)
        finally:
            self.busy = False

    # -- helpers ---------------------------------------------------------------------------
    def _serialize(self, obj) -> bytes:
        import io

        buffer = io.BytesIO()
        self.torch.save(obj, buffer)
        return buffer.getvalue()

    def _fail(self, cls, exc: BaseException) -> None:
        with self.lock:
            self.failed.add(cls)
            self.pending.pop(cls, None)
            name = f"{cls.__module__}.{cls.__qualname__}"
            self.problems.append({"class": name, "test": self.current_test or "(collection)",
                                  "error": _one_line(f"{type(exc).__name__}: {exc}")[:300]})

    def _describe(self, cls) -> dict | None:
        if cls in self.classes:
            return self.classes[cls]
        description = None
        module = sys.modules.get(cls.__module__)
        file = getattr(module, "__file__", None)
        if isinstance(file, str) and file.endswith(".py") and os.path.isabs(file):
            path = os.path.realpath(file)
            if _project_file(path, self.roots):
                if "<locals>" in cls.__qualname__:
                    self.classes[cls] = None
                    self._fail(cls, TypeError("defined inside a function: pickle cannot import it, "
                                              "define it at module level to record it"))
                    return None
                forward = getattr(cls, "forward", None)
                code = getattr(forward, "__code__", None)
                description = {"class": f"{cls.__module__}.{cls.__qualname__}", "module": cls.__module__,
                               "qualname": cls.__qualname__, "file": path,
                               "relative": os.path.relpath(path, self.rootdir),
                               "forward_line": code.co_firstlineno if code else None}
        self.classes[cls] = description
        return description


    def unhook(self) -> None:
        for handle in self.handles:
            handle.remove()
        self.handles = []

    def finish(self) -> dict:
        self.unhook()
        with self.lock:
            index = _index(self.records, self.problems, self.rootdir, self.torch.__version__)
            _write_index(self.archive, index)
            self.archive.close()
            os.replace(self.temp, self.path)
        return index


def _index(records, problems, rootdir, torch_version) -> dict:
    return {"format": RECORDING_FORMAT, "version": RECORDING_VERSION, "torch": torch_version,
            "rootdir": rootdir, "records": records, "problems": problems}


def _write_index(archive, index: dict) -> None:
    import json

    archive.writestr("index.json", json.dumps(index, indent=2))


def _merge_parts(path: str, parts: list[str], rootdir: str) -> dict | None:
    """The controller's recording: each class's record from the first worker part that has it."""
    import json
    import zipfile

    if not parts:
        return None
    records, problems, seen, version = [], [], set(), None
    temp = f"{path}.{os.getpid()}.tmp"
    with zipfile.ZipFile(temp, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as out:
        for part in parts:
            with zipfile.ZipFile(part) as archive:
                index = json.loads(archive.read("index.json"))
                version = version or index.get("torch")
                for record in index["records"]:
                    if record["class"] in seen:
                        continue
                    seen.add(record["class"])
                    entry = f"records/{len(records)}.pt"
                    out.writestr(entry, archive.read(record["entry"]))
                    records.append(dict(record, entry=entry))
                problems.extend(p for p in index["problems"] if p["class"] not in seen)
        problems = [p for p in problems if p["class"] not in seen]
        index = _index(records, problems, rootdir, version)
        _write_index(out, index)
    os.replace(temp, path)
    for part in parts:
        os.remove(part)
    return index


def _is_ancestor(frame, current) -> bool:
    while current is not None:
        if current is frame:
            return True
        current = current.f_back
    return False


def _call_kwargs(frame, module):
    """The keyword arguments of the module call whose pre-hooks run now, or None if unknown.

    torch calls global pre-hooks from the `inner` closure of `Module._call_impl`, which holds the
    call's `self` and `kwargs`; the check on `self` makes sure it is this very call."""
    try:
        local = frame.f_locals
    except Exception:  # noqa: BLE001
        return None
    kwargs = local.get("kwargs")
    if local.get("self") is module and isinstance(kwargs, dict):
        return kwargs
    return None


def _real_inputs(torch, module, args, kwargs) -> bool:
    """False for calls on placeholders: meta or fake tensors, functorch transforms."""
    from torch.utils._pytree import tree_leaves

    is_wrapped = getattr(torch._C._functorch, "is_functorch_wrapped_tensor", lambda t: False)
    tensors = [t for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
    tensors += list(module.parameters()) + list(module.buffers())
    for t in tensors:
        if t.device.type == "meta" or type(t).__name__ == "FakeTensor" or is_wrapped(t):
            return False
    return True


def _detached(torch, tree):
    from torch.utils._pytree import tree_map_only

    def detach(t):
        copy = t.detach()
        if t.requires_grad:
            copy.requires_grad_(True)
        return copy

    return tree_map_only(torch.Tensor, detach, tree)


def _signature(torch, args, kwargs, prefix: str = "") -> str:
    """`Tensor[2, 4] float32, 3, scale=2.0`: what the call got, for the summary."""
    def show(value) -> str:
        if isinstance(value, torch.Tensor):
            dtype = str(value.dtype).replace("torch.", "")
            return f"Tensor{list(value.shape)} {dtype}"
        if isinstance(value, (list, tuple)) and len(value) <= 4:
            inner = ", ".join(show(v) for v in value)
            return f"[{inner}]" if isinstance(value, list) else f"({inner}{',' if len(value) == 1 else ''})"
        text = repr(value) if isinstance(value, (int, float, bool, str, type(None))) else type(value).__name__
        return text if len(text) <= 40 else text[:37] + "..."

    parts = ([prefix] if prefix else []) + [show(a) for a in args] + [f"{k}={show(v)}" for k, v in kwargs.items()]
    return ", ".join(parts)
