"""Checks many files: discovery, reading, parallel workers, per-file ignores."""

from __future__ import annotations

import contextlib
import dataclasses
import fnmatch
import gc
import os
import warnings
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field

from .api_entries import is_api_reach
from .config import Config
from .engine import Analyzer, FileReport
from .files import DEFAULT_EXCLUDES, Excluder, Problem, SourceError, discover, package_of, read_source
from .findings import FileError
from .limits import AnalysisTimeout, interruption, time_limit  # noqa: F401  (AnalysisTimeout: tcl.lsp)
from .project import ProjectScan, scan
from .project_root import project_root, reaching_files

# Below this many files, starting worker processes costs more than it saves.
PARALLEL_THRESHOLD = 24
CHUNK = 8
DEFAULT_FILE_TIMEOUT = 20.0  # wall-clock seconds; `tcl check --file-timeout`
# A user's file checked with --follow-imports analyses what it compiles in installed packages
# too: compiling transformers' `generate` takes 16 s of analysis cold on a quiet machine
# (docs/accuracy.md, session 31), and a timeout reports nothing at all.
FOLLOW_IMPORTS_FILE_TIMEOUT = 120.0
WORKER_CRASHED = "internal error: the analysis crashed its worker process (native crash or out of memory)"


@dataclass
class RunResult:
    reports: list[FileReport] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    cached: int = 0  # reports taken from the cache

    @property
    def findings(self):
        """Every finding once: a helper reached from two files is reported by both analyses."""
        merged: dict[tuple, object] = {}
        # Functions some file's compiled entries reach: what they pass there decides, and the
        # public API reading of the same function (its own file's analysis) is not reported.
        compiled = {tuple(item) for report in self.reports for item in getattr(report, "compiled", ())}
        for report in self.reports:
            for finding in report.findings:
                if compiled and finding.reached_from and all(is_api_reach(r) for r in finding.reached_from) \
                        and (os.path.realpath(finding.path), finding.function) in compiled:
                    continue
                key = (finding.path, finding.line, finding.col, finding.code, finding.library)
                if key in merged:
                    merged[key] = _merge(merged[key], finding)
                else:
                    merged[key] = finding
        # A break in an installed package that a recorded entry reaches inside the package and
        # the user's compile call reaches too: once, at the user's line.
        at_user_lines = {(f.code, f.library) for f in merged.values() if f.library and not _in_library_file(f)}
        return [f for f in merged.values() if not (_in_library_file(f) and (f.code, f.library) in at_user_lines)]

    @property
    def all_errors(self):
        return self.errors + [e for report in self.reports for e in report.errors]

    @property
    def notes(self):
        return [n for report in self.reports for n in getattr(report, "notes", ())]


def _in_library_file(finding) -> bool:
    """Whether the finding is reported in the installed file it names (`library`), not at a
    user's line that reaches it."""
    location = finding.library or ""
    where, _, position = location.rpartition(":")
    file, _, line = where.rpartition(":")
    return bool(file) and finding.path.replace(os.sep, "/").endswith("/" + file) and line == str(finding.line)


def _merge(first, second):
    import dataclasses

    reached = set(first.reached_from) | set(second.reached_from)
    # Public API reach (tcl/api_entries.py) stands in for compiled callers only where there are
    # none: a helper another file's forward reaches is not "public API" there.
    compiled = {name for name in reached if not is_api_reach(name)}
    if compiled or not first.reached_from or not second.reached_from:
        reached = compiled
    return dataclasses.replace(first, reached_from=tuple(sorted(reached)))


_WORKER_ANALYZER: Analyzer | None = None


_WORKER_TIMEOUT: float | None = None


def _init_worker(config: Config, project: ProjectScan, timeout: float | None = None,
                 checked: frozenset[str] | None = None) -> None:
    global _WORKER_ANALYZER, _WORKER_TIMEOUT
    _quiet_about_checked_code()
    gc.set_threshold(*COLLECTION_THRESHOLDS)  # a worker process of tcl's own: for its lifetime
    _WORKER_ANALYZER = Analyzer(config, project)
    _WORKER_ANALYZER.checked = checked
    _WORKER_TIMEOUT = timeout


def check_file(path: str, analyzer: Analyzer, timeout: float | None = None) -> FileReport:
    try:
        source = read_source(path)
    except SourceError as exc:
        return FileReport(path, errors=[FileError(path, 0, str(exc))])
    return check_text(source, path, analyzer, timeout)


def _package(path: str) -> str:
    return package_of(path) if os.path.exists(path) else ""


def analyze_text(source: str, path: str, analyzer: Analyzer, timeout: float | None = None) -> FileReport:
    """The engine's report for one file, before per-file ignores (what the cache stores)."""
    try:
        with time_limit(timeout):
            return analyzer.check_source(source, path, _package(path))
    except AnalysisTimeout:
        return timed_out(path, timeout)
    except MemoryError:
        return FileReport(path, errors=[FileError(path, 0, "analysis ran out of memory")])
    except Exception as exc:  # an analyzer bug must not end the run
        stop = interruption(exc)
        if isinstance(stop, AnalysisTimeout):
            return timed_out(path, timeout)
        if stop is not None:
            raise stop from None
        return FileReport(path, errors=[FileError(path, 0, _one_line(f"internal error: {type(exc).__name__}: {exc}"))])


def timed_out(path: str, timeout: float | None) -> FileReport:
    return FileReport(path, errors=[FileError(path, 0, f"analysis timed out after {timeout:g} s (wall clock)")])


def _one_line(text: str) -> str:
    return " ".join(text.split()) or text


def check_text(source: str, path: str, analyzer: Analyzer, timeout: float | None = None) -> FileReport:
    report = analyze_text(source, path, analyzer, timeout)
    return _apply_ignores(report, analyzer.config)


def _apply_ignores(report: FileReport, config: Config) -> FileReport:
    if config.per_file_ignores:
        report.findings = [
            f for f in report.findings
            if not any(f.code.startswith(c) for c in _per_file_ignores(f.path, config))
        ]
    return report


def _read_and_analyze(path: str, analyzer: Analyzer, timeout: float | None) -> tuple[FileReport, str | None]:
    """(report before per-file ignores, content hash of what was analysed, None if unread)."""
    from .cache import content_hash

    try:
        source = read_bounded(path, timeout)
    except SourceError as exc:
        return FileReport(path, errors=[FileError(path, 0, str(exc))]), None
    return analyze_text(source, path, analyzer, timeout), content_hash(source)


def read_bounded(path: str, timeout: float | None) -> str:
    """read_source under the wall-clock limit: a read that blocks (a file swapped for a FIFO
    mid-run) is a SourceError after `timeout` seconds, not a hang."""
    try:
        with time_limit(timeout):
            return read_source(path)
    except AnalysisTimeout:
        raise SourceError(f"reading timed out after {timeout:g} s (wall clock)") from None


def _worker_check(paths: list[str]) -> list[tuple[str, FileReport, str | None]]:
    assert _WORKER_ANALYZER is not None
    return [(path, *_read_and_analyze(path, _WORKER_ANALYZER, _WORKER_TIMEOUT)) for path in paths]


def _per_file_ignores(path: str, config: Config) -> list[str]:
    normalized = path.replace(os.sep, "/")
    codes: list[str] = []
    for pattern, ignored in config.per_file_ignores.items():
        if fnmatch.fnmatchcase(normalized, pattern) or fnmatch.fnmatchcase(os.path.basename(normalized), pattern):
            codes.extend(ignored)
    return codes


def collect_files(paths: list[str], config: Config, root: str = ".") -> tuple[list[str], list[FileError]]:
    excluder = Excluder(list(config.exclude) + list(DEFAULT_EXCLUDES), root, config.respect_gitignore)
    files, errors = [], []
    for item in discover(paths, excluder):
        if isinstance(item, Problem):
            errors.append(FileError(item.path, 0, item.message))
        else:
            files.append(item)
    return unique_files(files), errors


def unique_files(files: list[str]) -> list[str]:
    """Each file once, under the first name it was given by: `good.py ./good.py`, a directory
    and a file inside it, or a symlink and its target are one file (normalized real path)."""
    seen: set[str] = set()
    unique = []
    for path in files:
        key = os.path.normcase(os.path.realpath(path))
        if key not in seen:
            seen.add(key)
            unique.append(path)
    return unique




def run(
    paths: list[str],
    config: Config,
    jobs: int | None = None,
    root: str = ".",
    cache=None,
    file_timeout: float | None = None,
) -> RunResult:
    """Check every file under `paths`. `cache`: a tcl.cache.Cache (None: no cache);
    `file_timeout`: wall-clock seconds one file's reading and analysis may take (None: no limit)."""
    with warnings.catch_warnings(), fewer_collections():
        _quiet_about_checked_code()
        return _run(paths, config, jobs, root, cache, file_timeout)


# Python's cycle collector runs every 700 new objects and, every so often, walks every object
# alive. A check keeps whole libcst trees alive (the parsed files other files call into) and
# makes millions of short-lived nodes, so that walk is paid over and over: a fifth of a cold
# check of torch/nn and torch/_dynamo (53.6 -> 42.6 s CPU with these thresholds, the findings
# identical). mypy collects this rarely for the same reason.
COLLECTION_THRESHOLDS = (200_000, 30, 30)


@contextlib.contextmanager
def fewer_collections():
    """The cycle collector at COLLECTION_THRESHOLDS for the duration; restored after."""
    previous = gc.get_threshold()
    gc.set_threshold(*COLLECTION_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*previous)


def _quiet_about_checked_code() -> None:
    """Python warns while parsing odd code (`1if x else 2`, "\\d"): one line per bad file is
    tcl's promise, and those warnings are about the checked code, not tcl."""
    warnings.simplefilter("ignore", SyntaxWarning)
    warnings.simplefilter("ignore", DeprecationWarning)


def _run(paths, config, jobs, root, cache, file_timeout) -> RunResult:
    files, errors = collect_files(paths, config, root)
    result = RunResult(errors=errors)
    jobs = jobs or os.cpu_count() or 1
    scanned, reaching = project_context(files, config, root)
    hashes: dict[str, str | None] = {}
    if cache is not None:
        from .cache import content_hash

        for path in scanned:
            try:
                hashes[path] = content_hash(read_bounded(path, file_timeout))
            except SourceError:
                hashes[path] = None
        project = (
            cache.scan([(p, hashes[p]) for p in scanned], lambda: scan(scanned)) if len(scanned) > 1 else ProjectScan()
        )
    else:
        project = scan(scanned) if len(scanned) > 1 else ProjectScan()
    analyzer = Analyzer(config, project)
    if analyzer.entry_specs or config.recorded_entries:
        from .entries import problems

        entry_errors, entry_files = problems(analyzer, files)
        result.errors.extend(entry_errors)
        files = files + entry_files  # a declared entry's file is reported like a checked one
    analyzer.checked = frozenset(os.path.realpath(path) for path in files)

    raw: dict[str, FileReport] = {}
    analysed = files + reaching
    todo: list[str] = analysed
    keys: dict[str, str] = {}
    if cache is not None:
        todo = _cached(analysed, analyzer, project, cache, hashes, keys, raw)
    serial = jobs <= 1 or len(todo) < PARALLEL_THRESHOLD
    if serial:
        for path in todo:
            raw[path], digest = _read_and_analyze(path, analyzer, file_timeout)
            _store(cache, path, keys, raw[path], digest, hashes)
    else:
        for path, (report, digest) in _parallel(todo, config, project, jobs, file_timeout, analyzer.checked).items():
            raw[path] = report
            _store(cache, path, keys, report, digest, hashes)
    if reaching:
        _keep_reach_into(files, [raw[path] for path in files], [raw.pop(path) for path in reaching])
    result.reports = [_apply_ignores(raw[path], config) for path in files]
    result.cached = cache.hits if cache is not None else 0
    return result


def project_context(files: list[str], config: Config, root: str = ".") -> tuple[list[str], list[str]]:
    """(the files, then the other files of their projects; those other files that may call into
    the files). Some files of a project: its other files give the cross-file facts
    (tcl.project_root), and those that may call into the checked files are analysed for what
    they reach there. `tcl check` and `tcl fix` read a project alike."""
    scanned = project_files_of(files, config, root)
    reaching = reaching_files(files, scanned[len(files):]) if len(scanned) > len(files) else []
    return scanned, reaching


MAX_PROJECT_FILES = 20_000  # a "project" larger than this (a marker in a home directory): not widened


def project_files_of(files: list[str], config: Config, root: str = ".") -> list[str]:
    """`files`, then the other files of the projects they belong to (tcl.project_root), named
    the way `tcl check` run from here names them, excludes applied."""
    known = {_same_file(path) for path in files}
    out = list(files)
    roots = sorted({r for r in (project_root(path) for path in files) if r is not None})
    excluder = Excluder(list(config.exclude) + list(DEFAULT_EXCLUDES), root, config.respect_gitignore)
    for project in roots:
        # Relative paths stay relative, so a file reads the same whether named or walked to.
        top = project if any(os.path.isabs(p) for p in files) else os.path.relpath(project)
        for path in discover([top], excluder):
            if isinstance(path, Problem):
                continue  # reported when that file is checked itself, if it ever is
            same = _same_file(path)
            if same not in known:
                known.add(same)
                out.append(path)
            if len(out) > MAX_PROJECT_FILES:  # stop walking: the run checks its own files only
                return list(files)
    return out


def _same_file(path: str) -> str:
    return os.path.normcase(os.path.abspath(path))


def _keep_reach_into(files: list[str], reports: list[FileReport], others: list[FileReport]) -> None:
    """Give each checked file the findings that other files' analyses made in it (a helper
    there reached from their compiled code), as a whole-tree run reports them."""
    by_file = {_same_file(path): report for path, report in zip(files, reports)}
    for other in others:
        for finding in other.findings:
            report = by_file.get(_same_file(finding.path))
            if report is not None:
                report.findings.append(dataclasses.replace(finding, path=report.path))


def _cached(files, analyzer, project, cache, hashes, keys, raw) -> list[str]:
    """Fill `raw` with stored reports; return the files that must be analysed."""
    from .cache import content_hash, no_dependencies, project_fingerprint, settings_fingerprint

    cache.open_bucket(settings_fingerprint(analyzer, project_fingerprint(project)))
    hook = getattr(analyzer, "dependency_fingerprint", None)
    if callable(hook):
        cache.hook = hook

    installed = analyzer.installed
    project_paths = set(project.module_paths and dict(project.module_paths).values())

    def file_hash(path: str) -> str | None:
        if path not in hashes and installed is not None and path not in project_paths and installed.owns(path):
            # An installed package's file changes only with the package: its version names it,
            # so a warm run reads nothing of the libraries it follows.
            hashes[path] = "installed:" + installed.version_of(path)
        if path not in hashes:
            try:
                hashes[path] = content_hash(read_source(path))
            except SourceError:
                hashes[path] = None
        return hashes[path]

    cache.file_hash = file_hash
    needs_source = cache.hook is not no_dependencies
    todo = []
    for path in files:
        if hashes.get(path) is None:
            todo.append(path)  # unreadable: reported by the analysis step
            continue
        source = ""
        if needs_source:  # only a dependency-fingerprint hook needs the text again
            try:
                source = read_source(path)
            except SourceError:
                todo.append(path)
                continue
        key = cache.key(path, _package(path), hashes[path], source)
        report = cache.get(path, key, file_hash) if key else None
        if report is not None and not _same_checked(report, analyzer.checked):
            report = None  # it traced another file's entries that this run checks, or the reverse
        if report is None:
            keys[path] = key
            todo.append(path)
        else:
            raw[path] = report
    return todo


def _same_checked(report: FileReport, checked: frozenset[str] | None) -> bool:
    """Whether a stored report's choices about other files' entries hold for this run's files."""
    return all((checked is not None and path not in checked) == traced
               for path, traced in report.other_entries.items())


def _store(cache, path: str, keys: dict[str, str], report: FileReport, digest: str | None, hashes) -> None:
    """Store a fresh report, unless the file changed between hashing and analysis."""
    if cache is None or digest is None or not keys.get(path) or digest != hashes.get(path):
        return
    cache.put(path, keys[path], report, cache.file_hash)


def _parallel(files: list[str], config: Config, project: ProjectScan, jobs: int, timeout: float | None,
              checked: frozenset[str] | None = None):
    """path -> (report, content hash), from worker processes. A worker that dies (a native crash,
    the OOM killer) costs only the file that killed it: the unfinished files are re-run in one
    worker, in order, to find that file, which is reported as an error; the rest go on."""
    results: dict[str, tuple[FileReport, str | None]] = {}
    remaining = list(files)
    try:
        return _parallel_passes(remaining, results, config, project, jobs, timeout, checked)
    except OSError:  # no processes to be had (a sandbox, a process limit): check serially
        analyzer = Analyzer(config, project)
        analyzer.checked = checked
        for path in files:
            if path not in results:
                results[path] = _read_and_analyze(path, analyzer, timeout)
        return results


def _parallel_passes(remaining, results, config, project, jobs, timeout, checked=None):
    while remaining:
        done, unfinished = _pool_pass(remaining, config, project, jobs, CHUNK, timeout, checked)
        results.update(done)
        if not unfinished:
            break
        done, unfinished = _pool_pass(unfinished, config, project, 1, 1, timeout, checked)
        results.update(done)
        if not unfinished:
            break
        culprit = unfinished[0]
        results[culprit] = (FileReport(culprit, errors=[FileError(culprit, 0, WORKER_CRASHED)]), None)
        remaining = unfinished[1:]
    return results


def _pool_pass(files, config, project, jobs, chunk, timeout, checked=None):
    chunks = [files[i:i + chunk] for i in range(0, len(files), chunk)]
    done: dict[str, tuple[FileReport, str | None]] = {}
    unfinished: list[str] = []
    try:
        with ProcessPoolExecutor(
            max_workers=min(jobs, len(chunks)), initializer=_init_worker, initargs=(config, project, timeout, checked)
        ) as pool:
            futures = [pool.submit(_worker_check, c) for c in chunks]
            for chunk_paths, future in zip(chunks, futures):
                try:
                    for path, report, digest in future.result():
                        done[path] = (report, digest)
                except BrokenProcessPool:
                    unfinished.extend(chunk_paths)
                except Exception as exc:  # e.g. a report that cannot be sent back
                    message = _one_line(f"internal error: {type(exc).__name__}: {exc}")
                    for path in chunk_paths:
                        done[path] = (FileReport(path, errors=[FileError(path, 0, message)]), None)
    except BrokenProcessPool:
        unfinished.extend(p for c in chunks for p in c if p not in done and p not in unfinished)
    return done, unfinished
