"""Recompile exploration, in the child process: call a fresh compiled copy of an example again and
again with its inputs varied, one quantity at a time, under `CompileTrace` (compile_trace.py), so
that every recompile comes with the guard that failed and the user lines that fixed a size.  The
phases, each on a new compiled copy after ``torch._dynamo.reset()``: the example's inputs three times,
then the batch (dim 0 of the tensor arguments) +1, +2, +3; each other dimension d of the first
tensor argument (every tensor argument whose dim d has the same size grows with it) +1, +2, +3,
or, where the example raises on those sizes, +g, +2g, +3g with g the largest power of two (at
most 8) dividing the size, and where it raises again the dimension is dropped with a note; the
int arguments +1, +2, +3; the list arguments one longer and train()/eval() toggled.  In a phase
that varies a size or an int, a frame's first recompile is automatic dynamic shapes at work (by
design: ``expected``); every later one is ``persistent``: something pins the value.  The
exploration stops when 60% of the per-example timeout is spent.  `count_compiles` is the runtime
truth for the recompile-hazard rules' examples.  Needs torch, imported lazily; never tcl's static
analyzer.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field

from .common import STATE_PHASE, _describe, _one_line
from .compile_trace import USER_FRAME

# The share of the per-example timeout (the parent kills the child past it) that recompile
# exploration may use, counted from the start of the example.
EXPLORE_SHARE = 0.6
GROWTH = (1, 2, 3)


def _map_tensors(obj, fn):
    import torch

    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # namedtuple
        return type(obj)(*(_map_tensors(o, fn) for o in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_map_tensors(o, fn) for o in obj)
    if isinstance(obj, dict):
        return type(obj)((k, _map_tensors(v, fn)) for k, v in obj.items())
    return obj


def _first_tensor_shape(args, kwargs) -> tuple[int, ...] | None:
    """The shape of the first tensor argument with at least one dimension."""
    found = []

    def look(t):
        if not found and t.dim() >= 1:
            found.append(tuple(int(n) for n in t.shape))
        return t

    _map_tensors((args, kwargs), look)
    return found[0] if found else None


def _grow_dim(args, kwargs, dim: int, size: int, new: int):
    """Every tensor whose dim `dim` has `size` entries gets `new` (copies of its first slice along
    that dim, so that index, label and mask tensors stay valid)."""
    import torch

    def grow(t):
        if t.dim() <= dim or t.shape[dim] != size:
            return t
        with torch.no_grad():
            index = torch.cat([torch.arange(size), torch.zeros(new - size, dtype=torch.long)]).to(t.device)
            bigger = t.index_select(dim, index)
        if t.requires_grad and t.is_leaf:
            bigger.requires_grad_()
        return bigger

    return _map_tensors((args, kwargs), grow)


def _int_arguments(args, kwargs) -> list[str]:
    """Names of the top-level Python int arguments (bools excluded): "arg2", "n"."""
    names = [f"arg{i}" for i, a in enumerate(args) if isinstance(a, int) and not isinstance(a, bool)]
    return names + [k for k, v in kwargs.items() if isinstance(v, int) and not isinstance(v, bool)]


def _bump_ints(args, kwargs, extra: int):
    def bump(value):
        return value + extra if isinstance(value, int) and not isinstance(value, bool) else value

    return tuple(bump(a) for a in args), {k: bump(v) for k, v in kwargs.items()}


def _list_arguments(args, kwargs) -> list[str]:
    """Names of the top-level non-empty list arguments: "arg0", "chunks"."""
    names = [f"arg{i}" for i, a in enumerate(args) if isinstance(a, list) and a]
    return names + [k for k, v in kwargs.items() if isinstance(v, list) and v]


def _grow_lists(args, kwargs):
    """Every top-level list argument gets one more element (a copy of its last one)."""
    def grow(value):
        return value + value[-1:] if isinstance(value, list) and value else value

    return tuple(grow(a) for a in args), {k: grow(v) for k, v in kwargs.items()}


def _modules_in(target, args, kwargs) -> list:
    import torch

    if isinstance(target, torch.nn.Module):
        return [target]
    found = []

    def walk(obj):
        if isinstance(obj, torch.nn.Module):
            found.append(obj)
        elif isinstance(obj, (list, tuple)):
            for o in obj:
                walk(o)
        elif isinstance(obj, dict):
            for o in obj.values():
                walk(o)

    walk((args, kwargs))
    return found


def compile_options(target) -> dict:
    """torch.compile keywords of a compiled example that change guards: ``dynamic`` as the user's
    ``@torch.compile(dynamic=False)`` set it (read from Dynamo's context, which the compiled
    function holds in its closure and an OptimizedModule as ``dynamo_ctx``); {} when unknown."""
    for _ in range(10):
        contexts = [getattr(target, "dynamo_ctx", None)]
        contexts += [cell.cell_contents for cell in (getattr(target, "__closure__", None) or ())
                     if _has_contents(cell)]
        for context in contexts:
            dynamic = getattr(context, "_dynamic", None)
            if isinstance(dynamic, bool):
                return {"dynamic": dynamic}
        inner = getattr(target, "_orig_mod", None) or getattr(target, "_torchdynamo_orig_callable", None)
        if inner is None or inner is target:
            return {}
        target = inner
    return {}


def _has_contents(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:  # an empty cell
        return False
    return True


def recompile_limit() -> int | None:
    from torch._dynamo import config

    for name in ("recompile_limit", "cache_size_limit"):
        value = getattr(config, name, None)
        if isinstance(value, int):
            return value
    return None


# --------------------------------------------------------------------------- phases


@dataclass
class Phase:
    """Calls of one fresh compiled copy: steps[0] the example's inputs, then the variations."""

    name: str  # "batch", "dim 1", "int n", "lists and train/eval"
    label: str  # what changes, for "recompiles on every new ...": "batch size", "size of dim 1"
    steps: list  # (trigger, make_inputs)
    first_varied: int = 1
    varies_value: bool = True  # a size or an int: automatic dynamic shapes should absorb it
    sizes: list = field(default_factory=list)  # the values it goes through, for the report


def _size_phase(name, label, args, kwargs, dim, size, news, prefix, base_steps=()):
    steps = list(base_steps) or [("first call", lambda: (args, kwargs))]
    first_varied = len(steps)
    previous = size
    for new in news:
        steps.append((f"{prefix} {previous}->{new}", lambda new=new: _grow_dim(args, kwargs, dim, size, new)))
        previous = new
    return Phase(name, label, steps, first_varied, True, [size, *news])


def _fallback_sizes(size: int) -> list[int] | None:
    """+g, +2g, +3g with g the largest power of two (at most 8) dividing `size`: sizes that keep
    the divisibility `view(b, n // 2, 2)`-style code needs; None when g would be 1."""
    step = min(size & -size, 8)
    return [size + k * step for k in GROWTH] if step > 1 else None


def _run_phase(phase: Phase, make_compiled, device: str, deadline: float):
    """(compilations, number of steps run, (failed step, error) or None, stopped for time)."""
    import torch

    from tcl import oracle

    from .compile_trace import CompileTrace

    torch._dynamo.reset()
    compiled = make_compiled()
    failure, done, stopped = None, 0, False
    with CompileTrace() as trace:
        for index, (trigger, make_inputs) in enumerate(phase.steps):
            if time.monotonic() > deadline:
                stopped = True
                break
            trace.next_call()
            try:
                a, k = make_inputs()
                oracle._call(compiled, a, k)
                if device == "cuda":
                    torch.cuda.synchronize()
            except KeyboardInterrupt:
                raise
            except BaseException as exc:  # noqa: BLE001 -- the example's own failure is data
                failure = (index, f"{trigger}: {_describe(exc)}", _frames(exc))
                break
            done += 1
    return trace.compilations, done, failure, stopped


_USER_CODE_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def _frames(exc: BaseException) -> list[tuple[str, int]]:
    """(absolute path, line) of each frame of the error's traceback, innermost last; an error
    Dynamo raised while tracing adds the frames its message names ("from user code:"), which
    lie deeper than the Python traceback's."""
    import traceback

    frames = [(os.path.abspath(f.filename), f.lineno or 0) for f in traceback.extract_tb(exc.__traceback__)]
    text = str(exc)
    if "from user code:" in text:
        tail = text.split("from user code:", 1)[1]
        frames += [(os.path.abspath(path), int(line)) for path, line in _USER_CODE_FRAME.findall(tail)]
    return frames


def compiled_crash(phase: Phase, failure, user_files, target) -> dict | None:
    """A compiled call that raised after an earlier call of the same phase ran, on inputs the
    uncompiled target runs without error: the compiler's own failure, placed on the innermost
    user line (TCL601's f-strings: the first call runs, a call whose numbers differ raises)."""
    if failure is None or failure[0] < 1 or len(failure) < 3:
        return None
    wanted = {os.path.abspath(p) for p in user_files}
    where = [f for f in failure[2] if f[0] in wanted]
    if not where:
        return None
    from tcl import oracle

    try:
        args, kwargs = phase.steps[failure[0]][1]()
        oracle._call(target, args, kwargs)
    except Exception:  # noqa: BLE001 -- eager fails too: the inputs' fault, not the compiler's
        return None
    path, line = where[-1]
    return {"path": path, "line": line, "trigger": phase.steps[failure[0]][0], "error": failure[1],
            "call": failure[0] + 1}


# Guards that a new size or int value fails: a size, a stride or a numeric comparison, or any
# check of a tensor input (with several graphs cached, the one Dynamo reports can be another
# graph's `requires_grad mismatch`).
_VALUE_GUARD = re.compile(r"size mismatch|stride mismatch|\.size\(\)|tensor '|(==|!=|<=|>=|<|>)\s*-?\d+\b")
_SHORT_FRAME = re.compile(r"([^\s#'\"]+\.py):(\d+) in [\w<>]+")


def _guard_origin(reason: str, frame_path: str, user_files) -> dict:
    """The user line a guard comes from, read from Dynamo's full reason text (before it is cut
    to one short line): ``guard # source line # short/path.py:N in fn [User stack trace: File
    "/full/path.py", line N ...]``."""
    parts = [p.strip() for p in reason.split(" # ")]
    source = parts[1][:200] if len(parts) >= 3 else None
    # The guard's own line first (`short/path.py:85 in <lambda>`: the line whose source the reason
    # quotes, a hook's lambda say), then the innermost user frame of the stack, which Dynamo
    # prints outermost first (line 91, the forward that called the hooked layer).
    def short_frame(text: str):
        for fragment, line in _SHORT_FRAME.findall(text):
            fragment = fragment.lstrip(".")
            for path in [frame_path, *user_files]:
                if path and os.path.abspath(path).endswith(fragment):
                    return path, line
        return None

    frames = [(path, line) for path, line in USER_FRAME.findall(reason)
              if os.path.isabs(path) and "site-packages" not in path]
    found = (short_frame(reason.split("User stack trace", 1)[0]) or (frames[-1] if frames else None)
             or short_frame(reason))
    if found is None:
        return {"guard_path": None, "guard_line": None, "guard_source": source}
    return {"guard_path": os.path.abspath(found[0]), "guard_line": int(found[1]), "guard_source": source}


# The value a guard tests: `self.step` in `0/0: self.step == 2 # ...`.
_GUARD_SUBJECT = re.compile(
    r"^\s*(?:\d+/\d+:\s*)?(?P<subject>(?:len\()?[A-Za-z_][\w.\[\]'\"]*\)?)\s*(?:==|!=|<=|>=|<|>)\s*-?\d")


def _guard_subject(reason: str | None) -> str | None:
    found = _GUARD_SUBJECT.match(reason or "")
    return found.group("subject") if found else None


def _entries(phase: Phase, comps, dynamic_off: bool, user_files=(), keep_before: int | None = None,
             state: set | None = None) -> list[dict]:
    """One record per recompile of the phase (of calls < keep_before only, when given).

    In a phase that varies a size or an int, the recompiles of a frame at the first varied call
    where it recompiled are automatic dynamic shapes making the value symbolic (by design,
    ``expected``), when one of them is a size or value guard (a frame can hold several graphs,
    say for inputs with and without requires_grad, and each goes dynamic); every later one, or
    one that guards on something else (an object id, a string), is ``persistent``: some code
    pinned the value.  With dynamic=False nothing is made symbolic: every one is persistent.

    A guard on a value that failed on identical inputs (`self.step == 2`: a counter the call
    itself moves) fails on every call whatever the phase varies: such a recompile is named after
    that value, not after the phase's change, and is persistent.  `state` collects those values
    across the phases of one example (the first phase calls the same inputs twice).
    """
    from .compile_trace import specialising_lines

    state = state if state is not None else set()
    for comp in comps:
        if comp.reason and 0 < comp.call < phase.first_varied:  # a call with the same inputs again
            subject = _guard_subject(_one_line(comp.reason))
            if subject:
                state.add(subject)

    kept = [c for c in comps if c.reason and (keep_before is None or c.call < keep_before)]
    by_frame: dict[tuple, list] = {}
    for comp in kept:
        by_frame.setdefault(comp.frame, []).append(comp)
    first_call, absorbs, same_inputs, varied_calls = {}, {}, {}, {}
    for frame, frame_comps in by_frame.items():
        varied = sorted({c.call for c in frame_comps if c.call >= phase.first_varied})
        varied_calls[frame] = varied
        if varied:
            first_call[frame] = varied[0]
            absorbs[frame] = not dynamic_off and any(
                _VALUE_GUARD.search(c.reason) for c in frame_comps if c.call == varied[0])
        same_inputs[frame] = any(0 < c.call < phase.first_varied for c in frame_comps)
    # A frame that recompiled on every new value from the second on (from the first, when
    # nothing absorbed it) reaches the recompile limit and then runs eagerly.
    last = len(phase.steps)
    found = []
    for comp in kept:
        reason = _one_line(comp.reason)
        trigger = phase.steps[comp.call][0] if comp.call < len(phase.steps) else "?"
        frame = comp.frame
        subject = _guard_subject(reason)
        varied_label, phase_name = phase.label, phase.name
        if subject in state:
            # The call itself moved the value: every call recompiles, identical inputs included.
            # `___stack0` is Dynamo's name for a value on the stack: say what it is instead.
            named = "a value it reads" if subject.startswith("___") else subject
            trigger, varied_label = f"every call ({named} changed)", f"value of {named}"
            phase_name = STATE_PHASE  # one report for it, whichever phase ran into it
            expected, persistent, every = False, True, True
        else:
            if phase.varies_value and comp.call >= phase.first_varied:
                expected = absorbs[frame] and comp.call == first_call[frame]
                persistent = not expected
            else:
                expected = trigger.endswith("()") and "training" in reason  # the train/eval toggle
                persistent = False
            needed = list(range(phase.first_varied + (1 if absorbs.get(frame) else 0), last))
            every = persistent and len(needed) >= 2 and set(needed) <= set(varied_calls.get(frame, ()))
        seen, specs = set(), []
        for spec in specialising_lines(comps, comp):
            if (spec.path, spec.line) not in seen:
                seen.add((spec.path, spec.line))
                specs.append(spec.to_json())
        found.append({
            "trigger": trigger, "reason": reason,
            "path": comp.path or None, "line": comp.first_line or None, "function": comp.function or None,
            "expected": bool(expected), "persistent": persistent, "phase": phase_name, "varied": varied_label,
            "call": comp.call, "specialised_by": specs, "every_new_value": bool(every),
            "on_same_inputs": bool(same_inputs.get(frame)) or subject in state,
            **_guard_origin(comp.reason, comp.path, user_files),
        })
    return found


def _recompiles(target, args, kwargs, job) -> tuple[list[dict], str | None, dict]:
    """`explore` with the job's backend; if the example fails there (inductor's donated buffers
    refuse a second backward through `autograd.grad(create_graph=True)`), again with the eager
    backend: recompiles come from Dynamo's guards, which do not depend on the backend."""
    found, error, notes = explore(target, args, kwargs, job, job["backend"])
    if error is not None and job["backend"] != "eager":
        retry, retry_error, retry_notes = explore(target, args, kwargs, job, "eager")
        if retry_error is None:
            return retry, None, retry_notes
    return found, error, notes


def explore(target, args, kwargs, job, backend) -> tuple[list[dict], str | None, dict]:
    """Run the phases (module docstring); return (recompiles, error of the example's own inputs
    called twice or None, notes: what was varied, what could not be, whether time ran out)."""
    import torch

    from tcl import oracle

    device = job["device"]
    options = dict(job.get("compile_options") or {})
    dynamic_off = options.get("dynamic") is False
    user_files = list(job.get("user_files") or ())
    started = job.get("example_started", time.monotonic())
    deadline = started + EXPLORE_SHARE * float(job.get("timeout") or 300.0)
    if isinstance(target, torch.nn.Module):
        target = oracle._fresh_target(oracle._to_device(target, device), True)
    args, kwargs = oracle._fresh(oracle._to_device(tuple(args), device), oracle._to_device(kwargs, device))
    extra = {"mode": job["mode"]} if job["mode"] != "default" and backend == job["backend"] else {}

    def make_compiled():
        return torch.compile(target, backend=backend, **extra, **options)

    notes = {"varied": [], "not_varied": [], "stopped": None, "recompile_limit": recompile_limit(), "crashes": [],
             "dynamic": options.get("dynamic")}
    found: list[dict] = []
    state: set[str] = set()  # values that changed on identical inputs (_entries)
    # Identical inputs again: a recompile there comes from state the call itself changed (an int
    # counter on the module, a global), which no input change explains.
    # Three calls: state set up on the first call (a hook installed once) shows its own recompile
    # on the second, and what then changes on every call shows on the third.
    same = [("first call", lambda: (args, kwargs)), ("same inputs again", lambda: (args, kwargs)),
            ("same inputs again", lambda: (args, kwargs))]
    shape = _first_tensor_shape(args, kwargs)
    phases: list[tuple[Phase, Phase | None]] = []
    if shape:
        for dim, size in enumerate(shape):
            if size == 0:
                continue
            name, label, prefix = ("batch", "batch size", "batch") if dim == 0 else (
                f"dim {dim}", f"size of dim {dim}", f"dim {dim}")
            news = [size + k for k in GROWTH]
            base = same if dim == 0 else ()
            first = _size_phase(name, label, args, kwargs, dim, size, news, prefix, base)
            fallback = _fallback_sizes(size)
            second = _size_phase(name, label, args, kwargs, dim, size, fallback, prefix) if fallback else None
            phases.append((first, second))
    else:
        phases.append((Phase("inputs", "inputs", same, len(same), False), None))
    ints = _int_arguments(args, kwargs)
    if ints:
        names = ", ".join(ints)
        steps = [("first call", lambda: (args, kwargs))]
        steps += [(f"int {names} +{k}", lambda k=k: _bump_ints(args, kwargs, k)) for k in GROWTH]
        phases.append((Phase(f"int {names}", f"value of {names}", steps, 1, True), None))
    steps = [("first call", lambda: (args, kwargs))]
    lists = _list_arguments(args, kwargs)
    if lists:
        # Dynamo guards on a list's length: every new length is a new graph (TCL504).
        steps.append((f"list {', '.join(lists)} length +1", lambda: _grow_lists(args, kwargs)))
    modules = _modules_in(target, args, kwargs)
    if modules:
        before = "train" if modules[0].training else "eval"
        after = "eval" if before == "train" else "train"

        def toggled():
            for module in modules:
                module.train(not module.training)
            return args, kwargs

        steps.append((f"{before}()->{after}()", toggled))
    if len(steps) > 1:
        phases.append((Phase("lists and train/eval", "list length or training mode", steps, 1, False), None))

    for number, (phase, fallback) in enumerate(phases):
        if time.monotonic() > deadline:
            left = ", ".join(p.name for p, _ in phases[number:])
            notes["stopped"] = (f"time limit: not varied {left} ({time.monotonic() - started:.0f}s of the "
                                f"{float(job.get('timeout') or 300.0):g}s per-example timeout spent)")
            break
        comps, done, failure, stopped = _run_phase(phase, make_compiled, device, deadline)
        crash = compiled_crash(phase, failure, user_files, target)
        if crash is not None:
            notes["crashes"].append(crash)
        if failure is not None and failure[0] < phase.first_varied:
            # The example's own inputs failed: nothing to learn about recompiles from it.
            found += _entries(phase, comps, dynamic_off, user_files, keep_before=failure[0], state=state)
            return found, failure[1], notes
        if failure is not None and fallback is not None:
            found += _entries(phase, comps, dynamic_off, user_files, keep_before=phase.first_varied, state=state)
            first_error = failure[1]
            phase = fallback
            comps, done, failure, stopped = _run_phase(phase, make_compiled, device, deadline)
            if failure is not None:
                failure = (failure[0], f"{first_error}; and with sizes {', '.join(map(str, phase.sizes[1:]))}")
        elif failure is not None:
            found += _entries(phase, comps, dynamic_off, user_files, keep_before=phase.first_varied, state=state)
        if failure is not None:
            notes["not_varied"].append({"what": phase.name, "why": failure[1]})
            continue
        found += _entries(phase, comps, dynamic_off, user_files, state=state)
        notes["varied"].append({"what": phase.name, "values": phase.sizes or None, "calls": done})
        if stopped:
            notes["stopped"] = (f"time limit: stopped in {phase.name} ({time.monotonic() - started:.0f}s of "
                                f"the {float(job.get('timeout') or 300.0):g}s per-example timeout spent)")
            break
    torch._dynamo.reset()
    return found, None, notes


def count_compiles(target, calls, **options) -> int:
    """Compile `target` once and call it with each args tuple in `calls`; graphs compiled.

    `options`: torch.compile keywords that change guards (`dynamic=False`), as the checked
    code passes them; the backend is always the counting one."""
    import torch

    compiled = 0

    def counting_backend(graph_module, example_inputs):
        nonlocal compiled
        compiled += 1
        return graph_module.forward

    torch._dynamo.reset()
    fn = torch.compile(target, backend=counting_backend, **options)
    for args in calls:
        fn(*args)
    torch._dynamo.reset()
    return compiled
