"""One file's `tcl fix` under a wall-clock and a memory limit, in a child process.

Fixing costs more than checking (each round re-parses and rebuilds the tree): unbounded, a 10 MB
line grew to 18.6 GB and a 1 MB line took 105 s. So `tcl fix` runs each file's fix in a forked
child (tcl.limits.run_bounded): RLIMIT_AS caps its address space, the parent kills it at the
deadline (native code cannot postpone SIGKILL, as it can a Python-level alarm), and a segfault
costs the child only. A file over a limit is one error line and is left untouched; the run goes
on. The child sends back a FixSummary of plain values (text, findings, descriptions), never
libcst nodes. Without fork (Windows) the fix runs in-process under the wall-clock alarm alone.
The cross-file first pass (which functions of a file other files' compiled code reaches) is
`tcl check`'s analysis and is bounded as `tcl check -j1` is: the pre-parse guards and the
wall-clock alarm.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..findings import FileError, Finding
from ..limits import AnalysisTimeout, Bounded, interruption, run_bounded, time_limit

DEFAULT_FILE_TIMEOUT = 20.0  # wall-clock seconds per file, as `tcl check --file-timeout`
DEFAULT_FILE_MEMORY_MB = 4096  # address space one file's fix may add to what tcl already holds


@dataclass
class FixSummary:
    """What run_fix needs of a FileFix, as values that pickle."""

    path: str
    original: str
    fixed: str
    diff: str = ""
    applied: list[str] = field(default_factory=list)  # each applied fix's description
    # (code, line, col, safety label) of each applied fix, in the order of `applied`
    applied_keys: list[tuple[str, int, int, str]] = field(default_factory=list)
    remaining: list[Finding] = field(default_factory=list)
    pending: list[tuple[str, str, str]] = field(default_factory=list)  # (safety label, description, diff)
    errors: list[FileError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    before: int = 0  # the file's findings before any fix

    @property
    def changed(self) -> bool:
        return self.fixed != self.original


def summarize(result) -> FixSummary:
    return FixSummary(
        result.path, result.original, result.fixed, result.diff() if result.changed else "",
        [fix.describe() for fix in result.applied],
        [(fix.code, fix.line, fix.col, fix.safety.label) for fix in result.applied], list(result.remaining),
        [(fix.safety.label, fix.describe(), diff) for fix, diff in zip(result.pending, result.pending_diffs)],
        list(result.errors), list(result.warnings), len(result.before),
    )


def fix_file(text: str, path: str, analyzer, *, unsafe: bool, package: str, ignored: tuple[str, ...],
             timeout: float | None, memory_mb: int | None, unsafe_keys: frozenset | None = None,
             observed: dict | None = None) -> FixSummary:
    """fix_source for one file under the limits; over one: an error, the text unchanged.
    `unsafe_keys`: with `unsafe`, apply only the unsafe fixes with these (code, line, col);
    `observed`: the settings the examples call for at run time (fix_source)."""
    from .apply import fix_source

    outcome = run_bounded(
        lambda: summarize(fix_source(text, path, analyzer, unsafe=unsafe, package=package, ignored=ignored,
                                     unsafe_keys=unsafe_keys, observed=observed)),
        timeout, memory_mb,
    )
    if outcome.kind == "ok":
        return outcome.value
    return FixSummary(path, text, text, errors=[FileError(path, 0, _why(outcome, timeout, memory_mb))])


def _why(outcome: Bounded, timeout: float | None, memory_mb: int | None) -> str:
    if outcome.kind == "timeout":
        return f"fix timed out after {timeout:g} s (wall clock); file left unchanged"
    if outcome.kind == "memory":
        return f"fix needed more than {memory_mb:,} MiB of memory; file left unchanged"
    if outcome.kind == "crash":
        return f"internal error: the fix crashed its process ({outcome.detail}); file left unchanged"
    return f"internal error: {outcome.detail}; file left unchanged"


def read_within(path: str, timeout: float | None):
    """tcl.fixing.writer.read under the wall-clock limit: a read that blocks is a SourceError."""
    from ..files import SourceError
    from .writer import read

    try:
        with time_limit(timeout):
            return read(path)
    except AnalysisTimeout:
        raise SourceError(f"reading timed out after {timeout:g} s (wall clock)") from None


def note_reach(text: str, path: str, analyzer, package: str, timeout: float | None) -> set[str]:
    """Teach the analyzer which functions of other files `path`'s compiled code reaches, and
    return the paths of the other files it has findings in. This is `tcl check`'s analysis,
    bounded as check -j1 bounds it (the guards and the wall-clock alarm), and it runs here so
    that the caches it warms (other files' parsed helpers, settled helper results) are inherited
    by every fix's child; over the limit it teaches nothing."""
    try:
        with time_limit(timeout):
            nodes = analyzer.check_source_with_nodes(text, path, package)
            analyzer.note_reached(nodes)
            return {finding.path for finding, _ in nodes.foreign}
    except AnalysisTimeout:
        return set()
    except Exception as exc:  # reported when the file itself is fixed
        stop = interruption(exc)
        if stop is not None and not isinstance(stop, AnalysisTimeout):
            raise stop from None
        return set()
