"""The real-compiler oracle: ask the installed PyTorch where code graph-breaks.

Three compiled runs answer three questions (see shared/research/REPORT.md):

* "default"   -- plain ``torch.compile`` with the ``graph_breaks`` log artifact
                 captured.  The log is the only source that sees *every*
                 break (also those after the first, jump breaks and frame
                 skips that ``explain()`` and ``counters`` miss).
* "eogb"      -- ``torch._dynamo.error_on_graph_break(True)``: default-mode
                 semantics, raises at the first break.
* "fullgraph" -- ``fullgraph=True``.  NOT a faithful default-mode oracle: it
                 turns on capture_scalar_outputs / capture_dynamic_output_shape_ops,
                 so ``.item()``, ``nonzero`` and mask indexing do not raise, and a
                 data-dependent guard raises ``UserError`` without a GB id.

torch is imported lazily, inside functions, so the rest of tcl (and
``import tcl.oracle``) works without torch installed.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import importlib.util
import inspect
import logging
import os
import re
import sys
import tempfile
import uuid
import warnings
from dataclasses import dataclass, field

from .safe_files import open_new

__all__ = ["RuntimeBreak", "FrameSkip", "OracleResult", "probe", "probe_source", "gb_id_of"]

MODES = ("default", "eogb", "fullgraph")

# "https://.../compile-graph-break-site/gb/gb0170.html" -> "0170"
_GB_URL = re.compile(r"gb(\d{4})\.html", re.IGNORECASE)
_GB_ANY = re.compile(r"\bgb(\d{4})\b", re.IGNORECASE)
# First line of a log record, also the "(user stack suppressed due to
# duplicate graph break)" variant: "Graph break ... in user code at F:N".
_BREAK_AT = re.compile(r"Graph break\b.*? in user code at (.+):(\d+)\s*$", re.MULTILINE)
# A traceback frame line: '  File "/p/x.py", line 12, in forward'.  The ", in"
# part is required so "Stack variable source attribution" lines don't match.
_FRAME = re.compile(r'^\s*File "(.+?)", line (\d+), in (.+)$', re.MULTILINE)
_REASON_PREFIX = "Graph Break Reason:"
_MAX_REASON = 200


@dataclass(frozen=True)
class RuntimeBreak:
    path: str  # absolute path of the innermost user frame (else the innermost frame)
    line: int  # 1-based line; an error naming no frame points at the target's def line (0 if unknown)
    gb: str | None  # "GB0170" etc.; None if the message carries no GB id
    reason: str  # gb_type, or the first line of the message; one line
    mode: str  # "default" or "fullgraph"


@dataclass(frozen=True)
class FrameSkip:
    """A break Dynamo could not resume after ("Skipping the function and falling back to eager",
    or "cannot resume from ... skipping the rest of the function"):
    a break inside a for/while loop, a try or a with it cannot re-enter, also one in a helper
    called from there.  The skipped frame runs eagerly, so hazards later in it never reach Dynamo.
    """

    path: str  # the break, as in RuntimeBreak
    line: int
    gb: str | None
    stack: tuple[tuple[str, int], ...]  # user-file frames of the traceback, outermost first
    # "frame skipped: forward (/p/m.py line 62)" when Dynamo names the frame (loops): its code
    # name and first line (a resume function's first line lies inside the original function).
    skipped_name: str | None = None
    skipped_path: str | None = None
    skipped_line: int | None = None


@dataclass
class OracleResult:
    breaks: list[RuntimeBreak] = field(default_factory=list)  # every logged default-mode break
    first_error: RuntimeBreak | None = None  # error_on_graph_break(True): first default-mode break
    fullgraph_error: RuntimeBreak | None = None  # fullgraph=True (gb None for UserError)
    exception: str | None = None  # "Type: message" if the eager call failed
    # "Type: message" if the default-mode compiled call raised (a compiler or backend failure,
    # not a graph break: default mode runs breaks eagerly instead of raising)
    default_error: str | None = None
    executed_lines: dict[str, set[int]] = field(default_factory=dict)  # eager coverage of user files
    frame_skips: list[FrameSkip] = field(default_factory=list)  # default mode, from the same log


def gb_id_of(text: str | None) -> str | None:
    """The GB id in ``text`` ("GB0170"), preferring the gbNNNN.html url."""
    if not text:
        return None
    m = _GB_URL.search(text) or _GB_ANY.search(text)
    return f"GB{m.group(1)}" if m else None


# --------------------------------------------------------------------------
# text parsing (pure; no torch needed)


def _norm(path: str) -> str:
    return os.path.normcase(os.path.realpath(path))


def _abs(path: str) -> str:
    # Pseudo-files such as "<stdin>" or "<string>" are names, not paths.
    return path if path.startswith("<") else os.path.abspath(path)


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MAX_REASON else text[: _MAX_REASON - 3] + "..."


def _frames_after(text: str, header: str) -> list[tuple[str, int]]:
    """(file, line) of the traceback frames listed after ``header``, outermost first.

    Only the part after the header is scanned: the explanation text above it
    can quote frames of its own (e.g. GB0170's "# File ..., in resume_in_f").
    """
    i = text.find(header)
    if i < 0:
        return []
    return [(f, int(n)) for f, n, _ in _FRAME.findall(text[i + len(header):])]


def _pick_frame(frames, user_files: set[str]):
    """The innermost frame whose file is a user file, else the innermost frame."""
    for path, line in reversed(frames):
        if _norm(path) in user_files:
            return path, line
    return frames[-1] if frames else None


def _reason_of(text: str) -> str:
    """gb_type of a Dynamo message: the line just above "Explanation:".

    Falls back to the first non-empty line (minus a "Graph Break Reason:" prefix).
    """
    lines = [ln.strip() for ln in text.splitlines()]
    for i, ln in enumerate(lines):
        if ln.startswith("Explanation:"):
            for prev in reversed(lines[:i]):
                if prev:
                    return _one_line(prev.removeprefix(_REASON_PREFIX))
    for ln in lines:
        if ln and not ln.startswith("Graph break"):
            return _one_line(ln.removeprefix(_REASON_PREFIX))
    return ""


def _parse_log(records: list[str], user_files: set[str]) -> list[RuntimeBreak]:
    """Turn graph_breaks log records into de-duplicated RuntimeBreaks, in order."""
    breaks: list[RuntimeBreak] = []
    seen: set[tuple[str, int, str | None]] = set()
    # Raw "at F:N" location -> user location, so that a later record whose
    # traceback is "suppressed due to duplicate graph break" still resolves
    # to the user frame found in the first, full record.
    resolved: dict[tuple[str, int, str | None], tuple[str, int]] = {}
    for text in records:
        m = _BREAK_AT.search(text)
        if not m:
            continue  # e.g. the W-level "Graph break from `Tensor.item()`" note
        gb = gb_id_of(text)
        raw = (m.group(1), int(m.group(2)), gb)
        loc = _pick_frame(_frames_after(text, "User code traceback:"), user_files)
        if loc is None:
            loc = resolved.get(raw, (m.group(1), int(m.group(2))))
        resolved.setdefault(raw, loc)
        key = (_abs(loc[0]), loc[1], gb)
        if key in seen:
            continue
        seen.add(key)
        breaks.append(RuntimeBreak(key[0], key[1], gb, _reason_of(text), "default"))
    return breaks


_SKIPPED = re.compile(r"frame skipped: (\S+) \((.+) line (\d+)\)")
# Both make the rest of the frame run eagerly: the first skips the whole function, the second
# ("... Compiling up to the previous resumable state, then skipping the rest of the function",
# torch 2.13 and 2.14: a slice bound read from a tensor) keeps the graph before the break.
_SKIP_PHRASES = ("Skipping the function and falling back to eager", "graph break that we cannot resume from")


def _parse_frame_skips(records: list[str], user_files: set[str]) -> list[FrameSkip]:
    """The graph_breaks records that made Dynamo skip a frame, de-duplicated."""
    skips: list[FrameSkip] = []
    for text in records:
        m = _BREAK_AT.search(text)
        if not m or (not any(p in text for p in _SKIP_PHRASES) and "frame skipped:" not in text):
            continue
        frames = _frames_after(text, "User code traceback:")
        loc = _pick_frame(frames, user_files) or (m.group(1), int(m.group(2)))
        stack = tuple((_abs(f), n) for f, n in frames if _norm(f) in user_files)
        named = _SKIPPED.search(text)
        skip = FrameSkip(
            _abs(loc[0]), loc[1], gb_id_of(text), stack,
            named.group(1) if named else None,
            _abs(named.group(2)) if named else None,
            int(named.group(3)) if named else None,
        )
        if skip not in skips:
            skips.append(skip)
    return skips


def _break_from_exception(exc: BaseException, user_files: set[str], mode: str,
                          fallback: tuple[str, int]) -> RuntimeBreak:
    """A RuntimeBreak describing an exception raised by a compiled run."""
    text = str(exc)
    loc = _pick_frame(_frames_after(text, "from user code:"), user_files)
    if loc is None:
        loc = _traceback_user_frame(exc, user_files)
    if loc is None:
        loc = fallback
    gb_type = getattr(exc, "gb_type", None)
    if gb_type:
        reason = _one_line(gb_type)
    else:
        # UserError (data-dependent guard) and non-Dynamo errors: keep the type
        # name, it is what tells them apart from a graph break.
        reason = _one_line(f"{type(exc).__name__}: {_reason_of(text)}")
    return RuntimeBreak(_abs(loc[0]), loc[1], gb_id_of(text), reason, mode)


def _traceback_user_frame(exc: BaseException, user_files: set[str]):
    """Innermost user frame of the Python traceback (errors raised while running user code)."""
    found = None
    tb = exc.__traceback__
    while tb is not None:
        if _norm(tb.tb_frame.f_code.co_filename) in user_files:
            found = (tb.tb_frame.f_code.co_filename, tb.tb_lineno)
        tb = tb.tb_next
    return found


def _describe(exc: BaseException) -> str:
    first = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), "")
    return _one_line(f"{type(exc).__name__}: {first}" if first else type(exc).__name__)


# --------------------------------------------------------------------------
# running


class _Capture(logging.Handler):
    """Keeps the formatted message of every record it sees."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.records.append(record.getMessage())
        except Exception:  # a broken record must not break the probe
            pass


def _drop_graph_break_records(record: logging.LogRecord) -> bool:
    return "__graph_breaks" not in record.name


@contextlib.contextmanager
def _graph_break_log():
    """Capture the graph_breaks artifact for the duration of the block.

    torch's own stream handlers on ``torch._dynamo`` would echo every record
    to stderr; they get a filter so that the oracle adds no noise.  The final
    ``set_logs()`` resets the log settings (keeping any TORCH_LOGS from the
    environment) and the filter is removed again.

    Dynamo logs the user traceback only for the first break per (gb_type,
    innermost location), for the life of the process (``torch._dynamo.reset()``
    keeps that memory).  The innermost location is often library code
    (``copy.py`` for every deepcopy), so a second deepcopy on another user
    line, or the same hazard in a later probe, would lose its user frame.
    The de-duplication is switched off while capturing.
    """
    import torch

    logger = logging.getLogger("torch._dynamo")
    capture = _Capture()
    checker = getattr(getattr(torch._dynamo, "utils", None), "graph_break_dup_warning_checker", None)
    torch._logging.set_logs(graph_breaks=True)
    filtered = list(logger.handlers)
    for handler in filtered:
        handler.addFilter(_drop_graph_break_records)
    logger.addHandler(capture)
    if checker is not None:
        checker.add = lambda key: True  # instance attribute shadows the method
    try:
        yield capture.records
    finally:
        if checker is not None:
            checker.__dict__.pop("add", None)
        logger.removeHandler(capture)
        torch._logging.set_logs()
        # set_logs() keeps a handler it already made when the settings it rebuilds from are
        # unchanged (a second probe in one process), so the filter is taken off by hand.
        for handler in filtered + logger.handlers:
            handler.removeFilter(_drop_graph_break_records)


@contextlib.contextmanager
def _line_tracer(user_files: set[str], out: dict[str, set[int]]):
    """Record executed lines of user files (sys.settrace; Python 3.11 has no sys.monitoring)."""
    norm_cache: dict[str, bool] = {}

    def is_user(filename: str) -> bool:
        if filename not in norm_cache:
            norm_cache[filename] = _norm(filename) in user_files
        return norm_cache[filename]

    def local(frame, event, arg):
        if event == "line":
            out.setdefault(_abs(frame.f_code.co_filename), set()).add(frame.f_lineno)
        return local

    def global_(frame, event, arg):
        # Returning None for non-user frames keeps library code untraced (fast).
        return local if is_user(frame.f_code.co_filename) else None

    previous = sys.gettrace()
    sys.settrace(global_)
    try:
        yield
    finally:
        sys.settrace(previous)


def _fresh(args, kwargs):
    """Copies of the inputs, so an in-place op in one run cannot change the next."""
    try:
        return copy.deepcopy(args), copy.deepcopy(kwargs)
    except Exception:  # uncopyable inputs: share them
        return args, kwargs


def _to_device(obj, device):
    if device is None:
        return obj
    if hasattr(obj, "to") and callable(obj.to):
        return obj.to(device)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_device(o, device) for o in obj)
    if isinstance(obj, dict):
        return {k: _to_device(v, device) for k, v in obj.items()}
    return obj


def _call(fn, args, kwargs):
    out = fn(*args, **kwargs)
    if inspect.isgenerator(out):  # a generator body only runs when consumed
        out = list(out)
    return out


def _definition(target) -> tuple[str, int] | None:
    """(file, first line) where ``target`` (or a module's ``forward``) is defined."""
    import torch

    obj = target
    if isinstance(obj, torch.nn.Module):
        obj = type(obj).forward
    while isinstance(obj, functools.partial):
        obj = obj.func
    if not (inspect.isroutine(obj) or inspect.isclass(obj)):
        obj = type(obj).__call__  # a callable instance
    obj = inspect.unwrap(obj)  # through functools.wraps decorators
    try:
        path = inspect.getsourcefile(obj) or inspect.getfile(obj)
    except (TypeError, OSError):
        return None
    code = getattr(obj, "__code__", None)
    return _abs(path), code.co_firstlineno if code else 0


def _fresh_target(target, enabled: bool):
    """A deep copy of an ``nn.Module`` target, so that state one run sets up (a lazily created
    parameter, a step counter) does not change which lines the next run executes."""
    import torch

    if not enabled or not isinstance(target, torch.nn.Module):
        return target
    try:
        return copy.deepcopy(target)
    except Exception:  # uncopyable module: share it
        return target


def _compile_and_run(target, args, kwargs, backend, fullgraph, eogb=False, compile_mode=None):
    """Run a fresh compiled copy; return the exception it raised, or None."""
    import torch

    torch._dynamo.reset()  # so caches from an earlier mode cannot hide a break
    guard = torch._dynamo.error_on_graph_break(True) if eogb else contextlib.nullcontext()
    extra = {"mode": compile_mode} if compile_mode and compile_mode != "default" else {}
    try:
        compiled = torch.compile(target, backend=backend, fullgraph=fullgraph, **extra)
        with guard:
            _call(compiled, args, kwargs)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 -- SystemExit, BdbQuit... are data here
        return exc
    return None


def probe(target, args=(), kwargs=None, *, user_files: set[str] | None = None,
          backend: str = "eager", device: str | None = None, collect_lines: bool = False,
          modes=MODES, compile_mode: str | None = None, fresh_target: bool = False) -> OracleResult:
    """Run ``target(*args, **kwargs)`` eagerly, then compiled in each of ``modes``.

    ``target`` is a callable or an ``nn.Module``.  Exceptions from the runs are
    recorded in the result, never raised (except KeyboardInterrupt).
    ``compile_mode`` is torch.compile's ``mode`` ("reduce-overhead", ...).
    ``fresh_target``: every run gets its own deep copy of an ``nn.Module``
    target (eager runs first and would otherwise change the state that the
    compiled runs start from).
    """
    import torch

    kwargs = dict(kwargs or {})
    unknown = set(modes) - set(MODES)
    if unknown:
        raise ValueError(f"unknown oracle modes: {sorted(unknown)}")
    definition = _definition(target)
    if user_files is None:
        user_files = {definition[0]} if definition else set()
    user = {_norm(p) for p in user_files}
    # Where to point an error that names no frame (e.g. GB0003, a generator
    # compiled with fullgraph=True): the target's own definition.
    fallback = definition or (next(iter(user_files), "<unknown>"), 0)

    target = _to_device(target, device) if isinstance(target, torch.nn.Module) else target
    args, kwargs = _to_device(tuple(args), device), _to_device(kwargs, device)
    result = OracleResult()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # user warnings would repeat once per mode

        a, k = _fresh(args, kwargs)
        tracer = _line_tracer(user, result.executed_lines) if collect_lines else contextlib.nullcontext()
        try:
            with tracer:
                _call(_fresh_target(target, fresh_target), a, k)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001
            result.exception = _describe(exc)

        if "default" in modes:
            with _graph_break_log() as records:
                exc = _compile_and_run(_fresh_target(target, fresh_target), *_fresh(args, kwargs),
                                       backend, fullgraph=False, compile_mode=compile_mode)
            result.breaks = _parse_log(records, user)
            result.frame_skips = _parse_frame_skips(records, user)
            if exc is not None:
                result.default_error = _describe(exc)

        if "eogb" in modes:
            if hasattr(torch._dynamo, "error_on_graph_break"):
                exc = _compile_and_run(_fresh_target(target, fresh_target), *_fresh(args, kwargs),
                                       backend, fullgraph=False, eogb=True, compile_mode=compile_mode)
                if exc is not None:
                    result.first_error = _break_from_exception(exc, user, "default", fallback)
            elif result.breaks:
                # Older torch lacks error_on_graph_break; the log's first break
                # agreed with it in all 138 calibration probes.
                result.first_error = result.breaks[0]

        if "fullgraph" in modes:
            exc = _compile_and_run(_fresh_target(target, fresh_target), *_fresh(args, kwargs),
                                   backend, fullgraph=True, compile_mode=compile_mode)
            if exc is not None:
                result.fullgraph_error = _break_from_exception(exc, user, "fullgraph", fallback)

        torch._dynamo.reset()  # leave no compiled code of a temp module behind
    return result


# --------------------------------------------------------------------------
# probing a source string


def _required_positional(fn) -> int:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return 1
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(1 for p in sig.parameters.values()
               if p.kind in kinds and p.default is inspect.Parameter.empty)


def _build_target(module, entry: str, source: str):
    import torch

    obj = getattr(module, entry)
    # A function decorated with @torch.compile: probe the original, each mode compiles it anew.
    obj = unwrap_compiled(obj)
    if not inspect.isclass(obj):
        return obj, obj
    instance = obj()
    if isinstance(instance, torch.nn.Module):
        # train()/eval() changes which branches run; respect an explicit .train().
        if not re.search(r"\.train\(", source):
            instance.eval()
        return instance, instance.forward
    return instance, instance


def _build_args(module, signature_of, args_expr: str | None, device: str | None):
    import torch
    import torch.nn.functional as F

    if args_expr is None:
        n = _required_positional(signature_of)
        return tuple(torch.randn(4, 4, device=device) for _ in range(n))
    scope = dict(vars(module))
    scope.update(torch=torch, F=F)
    value = eval(args_expr, scope)  # noqa: S307 -- the caller's own expression
    return value if isinstance(value, tuple) else (value,)


def probe_source(source: str, entry: str, args_expr: str | None = None, **kw) -> OracleResult:
    """``probe`` the function or class ``entry`` defined by ``source``.

    ``source`` is written to a real temporary ``.py`` file so that frames carry
    a filename and result lines are lines of ``source``.  Keyword arguments
    go to :func:`probe`; ``user_files`` is always that temporary file.
    """
    name = f"_tcl_probe_{uuid.uuid4().hex}"
    # A private directory, removed as a whole, also takes any __pycache__ with it.
    with tempfile.TemporaryDirectory(prefix="tcl_oracle_") as tmp:
        path = os.path.join(tmp, name + ".py")
        with open_new(path) as f:  # tcl.safe_files: created new, never through a link
            f.write(source)
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        # Registered while it runs: dataclasses and pickling look modules up by name.
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
            target, signature_of = _build_target(module, entry, source)
            args = _build_args(module, signature_of, args_expr, kw.get("device"))
            kw["user_files"] = {path}
            return probe(target, args, **kw)
        finally:
            sys.modules.pop(name, None)


def unwrap_compiled(target):
    """The original function or module behind torch.compile wrappers (several layers deep)."""
    import torch

    optimized = getattr(getattr(torch._dynamo, "eval_frame", None), "OptimizedModule", ())
    for _ in range(10):
        if optimized and isinstance(target, optimized):
            target = target._orig_mod
            continue
        original = getattr(target, "_torchdynamo_orig_callable", None)
        if original is not None and original is not target:
            target = original
            continue
        break
    return target
