"""flake8 plugin: `flake8 --select TCL PATHS` reports what `tcl check PATHS` reports.

A thin adapter over tcl's one engine: same codes, lines, columns and messages, fix hint included
(`TCL101 print() ... [GB0059] -> guard it ...`), so each `flake8 --select TCL` line is byte for
byte the `tcl check` line. Columns are yielded 0-based; flake8 adds 1.

How it stays equal to `tcl check` although flake8 hands a plugin one file at a time: tcl's
analysis crosses files (a class is an nn.Module because its base in another file is; a helper in
utils.py is reported because compiled code in model.py calls it). So once per flake8 process, in
`parse_options` (before flake8 forks its `-j` workers, which inherit the result), the plugin runs
the engine over the same files `tcl check` would check for flake8's path arguments (tcl's own
discovery, `[tool.tcl]` exclude included, tcl's cache in `.tcl_cache/` shared with `tcl check`),
and each file then gets its own findings. The run has the cross-file facts of each file's whole
project (tcl.project_root), so `flake8 one_file.py` reports what `flake8 .` reports for it. A file
whose text is not what was analysed (stdin, an editor's unsaved buffer, a file changed meanwhile)
is analysed on its own from flake8's text, with the same project facts.

Cost: flake8 runs every installed plugin on every file even under `--select F`, so nothing
heavy is imported at import time (no torch, no libcst, no engine); when the selection cannot
include a TCL code (`--select F`), the plugin does nothing at all; and when no file under the
paths contains the word "torch", it stops after reading them, before the engine is imported.
Every finding needs a traced function, which the engine only recognises through names it
resolves to `torch.` (torch.compile, torch.nn.Module bases), which needs an import that spells
"torch" somewhere in the checked tree.

Configuration: `[tool.tcl]` in the pyproject.toml `tcl check` would use (the nearest above the
first path) for select, ignore, exclude, torch-version, mode and per-file-ignores; then flake8's
--select, --ignore, --extend-select, --per-file-ignores and `# noqa` apply on top (tcl's own noqa
handling already drops findings whose `# noqa` sits on any line of a multi-line expression).
`--tcl-torch-version`, `--tcl-mode`, `--tcl-config`, `--tcl-no-cache` (also in .flake8 / setup.cfg
as `tcl-torch-version = 2.14`, ...) override it.

A file tcl cannot analyse (libcst cannot parse it, or an internal error) is reported as one
`TCL000` line at the place tcl names, instead of failing the flake8 run; `tcl check` writes the
same message to stderr and exits 2.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any, Iterator

from tcl import __version__  # tcl/__init__.py imports nothing

ERROR_CODE = "TCL000"
CODE_PREFIX = "TCL"
REQUIRED_WORD = "torch"
STDIN_NAMES = ("-", "stdin")
FILE_TIMEOUT = 20.0  # seconds, as `tcl check --file-timeout` defaults


class TclChecker:
    name = "tcl"
    version = __version__

    # Set by parse_options (class attributes, so that forked -j workers inherit them).
    torch_version: str | None = None
    mode: str | None = None
    config_path: str | None = None
    use_cache: bool = True
    selected: bool = True
    session: "_Session | None" = None
    stdin_name: str | None = None  # the file name flake8 gives stdin's text, when it reads stdin

    def __init__(self, tree: Any, lines: list[str], filename: str) -> None:
        # `tree` makes flake8 treat this as an AST plugin; tcl parses with libcst itself.
        self.lines = lines
        self.filename = filename

    @classmethod
    def add_options(cls, manager: Any) -> None:
        manager.add_option(
            "--tcl-torch-version", parse_from_config=True, default=None,
            help="tcl: torch release to target, X.Y (default: [tool.tcl] torch-version, else the installed torch)",
        )
        manager.add_option(
            "--tcl-mode", parse_from_config=True, default=None, choices=("default", "fullgraph"),
            help="tcl: what the code is compiled with (default: [tool.tcl] mode, else default)",
        )
        manager.add_option(
            "--tcl-config", parse_from_config=True, default=None,
            help="tcl: pyproject.toml to read [tool.tcl] from (default: the nearest above the first path)",
        )
        manager.add_option(
            "--tcl-no-cache", parse_from_config=True, action="store_true", default=False,
            help="tcl: neither read nor write tcl's .tcl_cache/",
        )

    @classmethod
    def parse_options(cls, options: Any) -> None:
        cls.torch_version = getattr(options, "tcl_torch_version", None)
        cls.mode = getattr(options, "tcl_mode", None)
        cls.config_path = getattr(options, "tcl_config", None)
        cls.use_cache = not getattr(options, "tcl_no_cache", False)
        paths = list(getattr(options, "filenames", None) or ["."])
        cls.stdin_name = (getattr(options, "stdin_display_name", None) or "stdin") if "-" in paths else None
        cls.selected = _tcl_selected(options)
        cls.session = None
        if cls.selected:
            cls.session = _Session(paths, cls.torch_version, cls.mode, cls.config_path, cls.use_cache,
                                   _jobs(getattr(options, "jobs", None)), stdin_name=cls.stdin_name)

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        if not self.selected:
            return
        try:
            yield from self._run()
        except Exception as exc:  # never take flake8 down with us
            yield 1, 0, f"{ERROR_CODE} tcl could not analyse this file: internal error: {type(exc).__name__}: {exc}", type(self)

    def _run(self) -> Iterator[tuple[int, int, str, type]]:
        source = "".join(self.lines)
        session = type(self).session
        if session is None:  # used without flake8's option parsing: this file alone
            if REQUIRED_WORD not in source:
                return
            session = type(self).session = _Session([self.filename], self.torch_version, self.mode,
                                                    self.config_path, self.use_cache, 1, run_now=False)
        if session.config_error is not None:
            if REQUIRED_WORD in source:
                yield 1, 0, f"{ERROR_CODE} tcl configuration error: {session.config_error}", type(self)
            return
        if not session.has_torch and REQUIRED_WORD not in source:
            return
        report = session.report_for(self.filename, source, self._is_stdin())
        if report is None:
            return
        from tcl.report import finding_text

        findings, errors = report
        for finding in findings:
            yield finding.line, finding.col - 1, finding_text(finding), type(self)
        for error in errors:
            yield max(error.line, 1), 0, f"{ERROR_CODE} tcl could not analyse this file: {error.message}", type(self)

    def _is_stdin(self) -> bool:
        return self.filename == self.stdin_name


def _tcl_selected(options: Any) -> bool:
    """False when flake8 will drop every TCL code anyway (`--select F`): then do nothing."""
    select = getattr(options, "select", None)
    if select is None:  # flake8's default selection: every installed plugin's codes
        return True
    chosen = list(select) + list(getattr(options, "extend_select", None) or [])
    return any(code.startswith(CODE_PREFIX) or CODE_PREFIX.startswith(code) for code in chosen if code)


def _jobs(jobs: Any) -> int | None:
    """tcl's worker count for flake8's -j: "auto" -> all cores; none inside a daemon worker."""
    import multiprocessing

    if multiprocessing.current_process().daemon:
        return 1
    if getattr(jobs, "is_auto", False) or jobs is None:
        return None
    try:
        return int(getattr(jobs, "n_jobs", jobs))
    except (TypeError, ValueError):
        return None


def _key(path: str) -> str:
    return os.path.normcase(os.path.normpath(os.path.abspath(path)))


def _hash(text: str) -> str:
    """Of the text with newlines normalised: flake8 reads files with universal newlines."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()


class _Session:
    """What `tcl check PATHS` would find, computed once per flake8 process, by file."""

    def __init__(self, paths: list[str], torch_version: str | None, mode: str | None,
                 config_path: str | None, use_cache: bool, jobs: int | None, run_now: bool = True,
                 stdin_name: str | None = None) -> None:
        self.paths = [p for p in paths if p not in STDIN_NAMES]
        self.use_cache = use_cache
        self.jobs = jobs
        self.config_error: str | None = None
        self.files: dict[str, str] = {}  # key -> path as given
        self.hashes: dict[str, str] = {}  # key -> hash of the text analysed
        self.has_torch = False
        self.findings: dict[str, list] = {}
        self.errors: dict[str, list] = {}
        self.analyzed = False
        self._analyzer = None
        from tcl.config import ConfigError

        try:
            self.config, self.root = _resolve_config(self.paths or ["."], torch_version, mode, config_path)
        except ConfigError as exc:
            self.config_error = str(exc)
            return
        if not run_now:
            return
        if self.paths:
            self._discover(self.paths)
            if self.has_torch:
                try:
                    self._analyze()
                except Exception:  # a tcl bug must not stop flake8: each file is analysed alone
                    self.findings, self.errors, self.analyzed = {}, {}, False
        elif stdin_name and os.path.isfile(stdin_name):
            # An editor's buffer: know its directory's classes (`class M(Base)`, Base elsewhere).
            self._discover([os.path.dirname(stdin_name) or "."])

    def _discover(self, paths: list[str]) -> None:
        """The files `tcl check` would check (tcl.runner.collect_files, without importing the
        engine), and whether any of them mentions torch."""
        from tcl.files import DEFAULT_EXCLUDES, Excluder, Problem, SourceError, discover, read_source

        excluder = Excluder(list(self.config.exclude) + list(DEFAULT_EXCLUDES), self.root, self.config.respect_gitignore)
        for item in discover(paths, excluder):
            if isinstance(item, Problem):
                continue  # flake8 reports missing paths itself
            key = _key(item)
            if key in self.files:
                continue
            self.files[key] = item
            try:
                text = read_source(item)
            except SourceError:
                continue
            self.hashes[key] = _hash(text)
            if REQUIRED_WORD in text:
                self.has_torch = True

    def _analyze(self) -> None:
        from tcl.runner import run

        cache = None
        if self.use_cache:
            from tcl.cache import Cache, default_cache_dir

            cache = Cache(default_cache_dir(self.config, self.paths or ["."]))
        result = run(self.paths, self.config, jobs=self.jobs, root=self.root, cache=cache, file_timeout=FILE_TIMEOUT)
        for finding in result.findings:
            self.findings.setdefault(_key(finding.path), []).append(finding)
        for error in result.all_errors:
            self.errors.setdefault(_key(error.path), []).append(error)
        for findings in self.findings.values():
            findings.sort(key=lambda f: f.sort_key())
        self.analyzed = True

    def report_for(self, filename: str, source: str, is_stdin: bool):
        """(findings, errors) for one file flake8 checks, or None when tcl would not check it."""
        if not is_stdin:
            key = _key(filename)
            if self.analyzed and key in self.files and self.hashes.get(key) == _hash(source):
                return self.findings.get(key, []), self.errors.get(key, [])
            if key not in self.files and self._excluded(filename):
                return None
        return self._alone(filename, source)

    def _excluded(self, filename: str) -> bool:
        """Whether `tcl check` would skip this file while walking the paths."""
        from tcl.files import DEFAULT_EXCLUDES, Excluder

        excluder = Excluder(list(self.config.exclude) + list(DEFAULT_EXCLUDES), self.root, self.config.respect_gitignore)
        absolute = os.path.abspath(filename)
        relative = os.path.relpath(absolute, os.path.abspath(self.root))
        if relative.startswith(os.pardir):
            return False
        parts = relative.split(os.sep)
        return any(
            excluder.excluded(os.path.join(self.root, *parts[:depth]), True) for depth in range(1, len(parts))
        ) or excluder.excluded(absolute, False)

    def _alone(self, filename: str, source: str):
        """This text on its own, with the facts of its whole project (tcl.project_root: its
        nn.Module classes, and what other files' compiled code reaches in it), as `tcl check`
        would analyse it, keeping the findings in this file."""
        from tcl.project_root import note_reach_into
        from tcl.runner import check_text, project_files_of

        if self._analyzer is None:
            from tcl.engine import Analyzer
            from tcl.project import ProjectScan, scan

            self._project_files = project_files_of(list(self.files.values()) or [filename], self.config, self.root)
            files = self._project_files
            self._analyzer = Analyzer(self.config, scan(files) if len(files) > 1 else ProjectScan())
            self._noted: set[str] = set()
        if os.path.isfile(filename):
            note_reach_into(self._analyzer, filename, self._project_files, self._noted)
        report = check_text(source, filename, self._analyzer, FILE_TIMEOUT)
        findings = sorted((f for f in report.findings if _key(f.path) == _key(filename)), key=lambda f: f.sort_key())
        return findings, report.errors


def _resolve_config(paths: list[str], torch_version: str | None, mode: str | None, config_path: str | None):
    """tcl.cli.resolve_config for flake8's options: (Config, the directory excludes are relative to)."""
    from pathlib import Path

    from tcl.config import ConfigError, find_pyproject, load, validate

    if config_path:
        pyproject = Path(config_path)
        if not pyproject.is_file():
            raise ConfigError(f"{config_path}: no such file")
    else:
        pyproject = find_pyproject(Path(paths[0]))
    config = load(pyproject)
    if torch_version:
        config.torch_version = torch_version
    if mode:
        config.mode = mode
    validate(config, "flake8 options")
    return config, str(config.source.parent) if config.source else "."
