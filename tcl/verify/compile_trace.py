"""Which line made a compiled frame recompile: Dynamo's compilations and the sizes each fixed.

A frame compiled with automatic dynamic shapes recompiles on its next call only when a guard
fails. The failing guard (`CompilationMetrics.recompile_reason`) usually names an *input*
("tensor 'x' size mismatch at index 1. expected 8, actual 12"), not the line that caused it:
the size was symbolic after the first automatic-dynamic recompile, then some Python code
needed its exact value (`sizes.index(n)`, `range(n)`, `table[n]`) and Dynamo fixed it to a
constant. Dynamo logs that moment through the `torch.fx.experimental.symbolic_shapes` logger
at INFO: `eval Eq(s27, 8) [guard added] ...` followed by `set_replacement s27 = 8
(range_refined_to_singleton)`. `CompileTrace` listens to that logger while a compiled callable
runs, takes the user frame of each added guard from Dynamo's tracing context (full path and
line, which the log text shortens), and ties it to the compilation in progress, so a
recompile can be explained by the line that specialised it. Measured on torch 2.13: the
messages and the singleton replacement appear for `list.index`, dict lookups, `range()` trip
counts and `==` tests of a size.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass, field

SHAPES_LOGGER = "torch.fx.experimental.symbolic_shapes"
_GUARD = re.compile(r"\[guard added\]")
_EQ = re.compile(r"\bEq\((s\d+), (-?\d+)\)|\bEq\((-?\d+), (s\d+)\)")
# A guard on a Python value carries its source: "len(___stack0) == 3 # for l in t.tolist(): #
# pkg/mod.py:8 in fn" (the path shortened).
_GUARD_SOURCE = re.compile(r"#\s*(.+?)\s*#\s*(\S+?\.py):(\d+) in (\S+)")
USER_FRAME = re.compile(r'File "([^"]+)", line (\d+)')
_SINGLETON = re.compile(r"set_replacement (s\d+) = (-?\d+) \(range_refined_to_singleton\)")


@dataclass
class Specialisation:
    """A symbolic size that a line of user code forced to one value during a compilation."""

    path: str
    line: int
    source: str
    symbol: str
    value: int
    function: str = ""
    callers: list[tuple[str, int]] = field(default_factory=list)  # outer user frames, outermost first

    def to_json(self) -> dict:
        return {"path": self.path, "line": self.line, "source": self.source, "symbol": self.symbol,
                "value": self.value, "function": self.function, "callers": [list(c) for c in self.callers]}


@dataclass
class Compilation:
    """One Dynamo compilation of a frame, in the order they happened."""

    index: int
    function: str
    path: str
    first_line: int
    reason: str | None  # the first failing guard that caused it; None for a frame's first compile
    call: int  # which call of the compiled callable (0-based) triggered it
    specialisations: list[Specialisation] = field(default_factory=list)

    @property
    def frame(self) -> tuple[str, int, str]:
        return (self.path, self.first_line, self.function)

    def to_json(self) -> dict:
        return {"index": self.index, "function": self.function, "path": self.path,
                "first_line": self.first_line, "reason": self.reason, "call": self.call,
                "specialisations": [s.to_json() for s in self.specialisations]}


def guard_site_of(reason: str | None, path: str, files=()) -> tuple[str, int, str] | None:
    """(path, line, source) of the line a failing guard's text names: "... == 3 # src #
    pkg/mod.py:176 in step". The text shortens the path; it is resolved against the full paths
    of its "User stack trace", then the frame's own file, then `files` (paths ending so)."""
    match = _GUARD_SOURCE.search(reason or "")
    if not match:
        return None
    short, line, source = match.group(2).replace("/", os.sep), int(match.group(3)), match.group(1)
    for full, number in reversed(USER_FRAME.findall(reason or "")):
        if full.endswith(short) and int(number) == line:
            return os.path.abspath(full), line, source
    for full, _ in reversed(USER_FRAME.findall(reason or "")):
        if full.endswith(short):
            return os.path.abspath(full), line, source
    if path and (path.endswith(short) or (os.sep not in short and os.path.basename(path) == short)):
        return path, line, source
    for full in files:
        if full.endswith(os.sep + short):
            return full, line, source
    return None


def guard_expression(reason: str | None) -> str:
    """The failing guard with its numbers blanked: "opt.state[...]['step'] == N", so the
    recompiles of one frame on one changing value can be told apart from others."""
    text = (reason or "").split(": ", 1)[-1].split(" # ", 1)[0]
    return re.sub(r"\b\d+(\.\d+)?\b", "N", text).strip()


class _Listener(logging.Handler):
    def __init__(self, trace: "CompileTrace") -> None:
        super().__init__(logging.INFO)
        self.trace = trace

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.trace._on_message(record.getMessage())
        except Exception:  # noqa: BLE001 -- a tracing problem must never break the user's call
            pass


class _BelowLevel(logging.Filter):
    def __init__(self, level: int) -> None:
        super().__init__()
        self.level = level

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= self.level


def _user_stack() -> list:
    """The frames Dynamo is tracing now, outermost first, less torch's own (the polyfills Dynamo
    substitutes for `list.index` and friends): full paths."""
    try:
        import torch
        from torch._guards import TracingContext

        stack = TracingContext.extract_stack()
    except Exception:  # noqa: BLE001
        return []
    torch_dir = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
    return [f for f in stack if not os.path.abspath(f.filename).startswith(torch_dir)]


METRICS_LIMIT = 1_000_000  # compilations one trace keeps (Dynamo's default: 64)


class CompileTrace:
    """Context manager: `with CompileTrace() as trace: ...calls...; trace.compilations`.

    Call `trace.next_call()` before each call of the compiled callable so that every
    compilation knows which call caused it."""

    def __init__(self) -> None:
        self.compilations: list[Compilation] = []
        self._pending: dict[str, Specialisation] = {}  # symbol -> its latest Eq guard
        self._fixed: list[Specialisation] = []  # of the compilation in progress
        self._call = -1
        self._seen = 0

    # -- context manager
    def __enter__(self) -> "CompileTrace":
        from torch._dynamo import utils

        utils.clear_compilation_metrics()
        # Dynamo keeps only the last 64 compilations by default: a big model's calls compile
        # more than that, and the trace would silently miss the rest.
        self._metrics_limit = getattr(utils._compilation_metrics, "maxlen", None)
        utils.set_compilation_metrics_limit(METRICS_LIMIT)
        self._logger = logging.getLogger(SHAPES_LOGGER)
        self._saved = (self._logger.level, self._logger.propagate)
        self._handler = _Listener(self)
        self._logger.addHandler(self._handler)
        self._muted = []
        if not self._logger.isEnabledFor(logging.INFO):
            # Turned on for us alone: torch._logging gives this logger a stderr handler of its
            # own, which would print every INFO line the user did not ask for.
            threshold = self._logger.getEffectiveLevel()
            for handler in list(self._logger.handlers):
                if handler is not self._handler:
                    mute = _BelowLevel(threshold)
                    handler.addFilter(mute)
                    self._muted.append((handler, mute))
            self._logger.setLevel(logging.INFO)
        return self

    def __exit__(self, *exc) -> None:
        from torch._dynamo import utils

        self.collect()
        if self._metrics_limit is not None:
            utils.set_compilation_metrics_limit(self._metrics_limit)
        self._logger.removeHandler(self._handler)
        self._logger.setLevel(self._saved[0])
        for handler, mute in self._muted:
            handler.removeFilter(mute)

    def next_call(self) -> None:
        self.collect()
        self._call += 1

    # -- reading
    def _on_message(self, text: str) -> None:
        self._sync()
        if _GUARD.search(text):
            match = _EQ.search(text.split("[guard added]")[0])
            if match:
                symbol = match.group(1) or match.group(4)
                value = int(match.group(2) or match.group(3))
                stack = _user_stack()
                if stack:
                    frame = stack[-1]
                    self._pending[symbol] = Specialisation(
                        os.path.abspath(frame.filename), int(frame.lineno or 0), (frame.line or "").strip(),
                        symbol, value, frame.name,
                        [(os.path.abspath(f.filename), int(f.lineno or 0)) for f in stack[:-1]])
            return
        match = _SINGLETON.search(text)
        if match and match.group(1) in self._pending:
            spec = self._pending.pop(match.group(1))
            if spec.value == int(match.group(2)):
                self._fixed.append(spec)

    def _sync(self) -> None:
        """Close the compilations that finished since the last message."""
        from torch._dynamo import utils

        metrics = utils.get_compilation_metrics()
        while self._seen < len(metrics):
            entry = metrics[self._seen]
            reason = getattr(entry, "recompile_reason", None)
            self.compilations.append(Compilation(
                index=self._seen,
                function=getattr(entry, "co_name", "") or "",
                path=os.path.abspath(entry.co_filename) if getattr(entry, "co_filename", None) else "",
                first_line=int(getattr(entry, "co_firstlineno", 0) or 0),
                reason=" ".join(reason.split()) if reason else None,
                call=max(self._call, 0),
                specialisations=self._fixed,
            ))
            self._fixed = []
            self._pending = {}
            self._seen += 1

    def collect(self) -> list[Compilation]:
        self._sync()
        return self.compilations


def persistent(compilations: list[Compilation], first_varied_call: int = 1) -> list[Compilation]:
    """The recompilations that automatic dynamic shapes did not absorb: a frame recompiling on
    a call after one on which it already recompiled (calls from `first_varied_call` on).

    Counted per call, not per compilation: one call may recompile a frame several times
    without anything persistent (a helper shared by several module classes has a cache entry
    for each, and the first new shape recompiles every entry), and a frame first compiled on
    the first varied call (the code after a graph break that only dynamic sizes cause) has its
    automatic-dynamic recompile one call later."""
    out = []
    recompiled_on: dict[tuple[str, int, str], int] = {}  # frame -> first call that recompiled it
    for comp in compilations:
        if comp.reason is None or comp.call < first_varied_call:
            continue
        first = recompiled_on.setdefault(comp.frame, comp.call)
        if comp.call > first:
            out.append(comp)
    return out


def specialising_lines(compilations: list[Compilation], comp: Compilation) -> list[Specialisation]:
    """The lines that fixed a size in the compilations of `comp`'s frame before `comp`: why the
    graph it replaces no longer matched."""
    return [s for c in compilations if c.frame == comp.frame and c.index < comp.index for s in c.specialisations]
