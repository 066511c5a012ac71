"""Checks many files: discovery, reading, parallel workers, per-file ignores."""

from __future__ import annotations

import fnmatch
import os
import re
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Iterable

from .config import Config
from .engine import Analyzer, FileReport
from .files import Excluder, Problem, SourceError, discover, package_of, read_source
from .findings import FileError
from .project import ProjectScan, scan

# Below this many files, starting worker processes costs more than it saves.
PARALLEL_THRESHOLD = 24
CHUNK = 8


@dataclass
class RunResult:
    reports: list[FileReport] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)

    @property
    def findings(self):
        """Every finding once: a helper reached from two files is reported by both analyses."""
        merged: dict[tuple, object] = {}
        for report in self.reports:
            for finding in report.findings:
                key = (finding.path, finding.line, finding.col, finding.code)
                if key in merged:
                    merged[key] = _merge(merged[key], finding)
                else:
                    merged[key] = finding
        return list(merged.values())

    @property
    def all_errors(self):
        return self.errors + [e for report in self.reports for e in report.errors]


def _merge(first, second):
    import dataclasses

    reached = tuple(sorted(set(first.reached_from) | set(second.reached_from)))
    message = re.sub(r"reached from [^)]*\)$", f"reached from {', '.join(reached)})", first.message)
    return dataclasses.replace(first, reached_from=reached, message=message)


_WORKER_ANALYZER: Analyzer | None = None


def _init_worker(config: Config, project: ProjectScan) -> None:
    global _WORKER_ANALYZER
    _WORKER_ANALYZER = Analyzer(config, project)


def check_file(path: str, analyzer: Analyzer) -> FileReport:
    try:
        source = read_source(path)
    except SourceError as exc:
        return FileReport(path, errors=[FileError(path, 0, str(exc))])
    return check_text(source, path, analyzer)


def check_text(source: str, path: str, analyzer: Analyzer) -> FileReport:
    try:
        report = analyzer.check_source(source, path, package_of(path) if os.path.exists(path) else "")
    except Exception as exc:  # an analyzer bug must not end the run
        return FileReport(path, errors=[FileError(path, 0, f"internal error: {type(exc).__name__}: {exc}")])
    if analyzer.config.per_file_ignores:
        report.findings = [
            f for f in report.findings
            if not any(f.code.startswith(c) for c in _per_file_ignores(f.path, analyzer.config))
        ]
    return report


def _worker_check(paths: list[str]) -> list[FileReport]:
    assert _WORKER_ANALYZER is not None
    return [check_file(path, _WORKER_ANALYZER) for path in paths]


def _per_file_ignores(path: str, config: Config) -> list[str]:
    normalized = path.replace(os.sep, "/")
    codes: list[str] = []
    for pattern, ignored in config.per_file_ignores.items():
        if fnmatch.fnmatchcase(normalized, pattern) or fnmatch.fnmatchcase(os.path.basename(normalized), pattern):
            codes.extend(ignored)
    return codes


def collect_files(paths: list[str], config: Config, root: str = ".") -> tuple[list[str], list[FileError]]:
    excluder = Excluder(list(config.exclude) + list(_default_excludes()), root)
    files, errors = [], []
    for item in discover(paths, excluder):
        if isinstance(item, Problem):
            errors.append(FileError(item.path, 0, item.message))
        else:
            files.append(item)
    return list(dict.fromkeys(files)), errors


def _default_excludes() -> Iterable[str]:
    from .files import DEFAULT_EXCLUDES

    return DEFAULT_EXCLUDES


def run(paths: list[str], config: Config, jobs: int | None = None, root: str = ".") -> RunResult:
    files, errors = collect_files(paths, config, root)
    result = RunResult(errors=errors)
    project = scan(files) if len(files) > 1 else ProjectScan()
    jobs = jobs or os.cpu_count() or 1
    if jobs <= 1 or len(files) < PARALLEL_THRESHOLD:
        analyzer = Analyzer(config, project)
        result.reports = [check_file(path, analyzer) for path in files]
        return result
    chunks = [files[i:i + CHUNK] for i in range(0, len(files), CHUNK)]
    with ProcessPoolExecutor(max_workers=jobs, initializer=_init_worker, initargs=(config, project)) as pool:
        for reports in pool.map(_worker_check, chunks):
            result.reports.extend(reports)
    return result
