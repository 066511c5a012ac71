"""Recompile exploration, in the child process: call a fresh compiled copy of an example again with
its inputs varied (batch size, int arguments, list lengths, train()/eval()) and report every
recompile with the guard that failed; and `count_compiles`, the runtime truth for the
recompile-hazard rules' examples (a counting backend sees one call per graph Dynamo compiles).
Needs torch, imported lazily; never tcl's static analyzer."""

from __future__ import annotations

import os

from .common import _describe, _one_line


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


def _batch_size(args, kwargs) -> int | None:
    """dim 0 of the first tensor argument that has one."""
    found = []

    def look(t):
        if not found and t.dim() >= 1:
            found.append(int(t.shape[0]))
        return t

    _map_tensors((args, kwargs), look)
    return found[0] if found and found[0] > 0 else None


def _grow_batch(args, kwargs, batch: int, extra: int):
    """Every tensor whose dim 0 is the batch gets `extra` more rows (copies of its first row, so
    that index and label tensors stay valid)."""
    import torch

    def grow(t):
        if t.dim() == 0 or t.shape[0] != batch:
            return t
        with torch.no_grad():
            bigger = torch.cat([t] + [t[:1]] * extra)
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


def _metrics():
    from torch._dynamo import utils

    get = getattr(utils, "get_compilation_metrics", None)
    clear = getattr(utils, "clear_compilation_metrics", None)
    return get, clear


def _recompiles(target, args, kwargs, job) -> tuple[list[dict], str | None]:
    """`_probe_recompiles` with the job's backend; if the example fails there (inductor's donated
    buffers refuse a second backward through `autograd.grad(create_graph=True)`), again with the
    eager backend: recompiles come from Dynamo's guards, which do not depend on the backend."""
    found, error = _probe_recompiles(target, args, kwargs, job, job["backend"])
    if error is not None and job["backend"] != "eager":
        retry, retry_error = _probe_recompiles(target, args, kwargs, job, "eager")
        if retry_error is None:
            return retry, None
    return found, error


def _probe_recompiles(target, args, kwargs, job, backend) -> tuple[list[dict], str | None]:
    """Call a fresh compiled copy with the example's inputs, then with the batch dimension grown by
    one and by two, then with its Python int arguments raised by one and by two, then with its
    list arguments one element longer, then with train()/eval() toggled; return the recompiles
    that caused."""
    import torch

    from tcl import oracle

    get, clear = _metrics()
    if get is None or clear is None:
        return [], "this torch has no torch._dynamo.utils.get_compilation_metrics()"
    device = job["device"]
    torch._dynamo.reset()
    if isinstance(target, torch.nn.Module):
        target = oracle._fresh_target(oracle._to_device(target, device), True)
    args, kwargs = oracle._fresh(oracle._to_device(tuple(args), device), oracle._to_device(kwargs, device))
    extra = {"mode": job["mode"]} if job["mode"] != "default" and backend == job["backend"] else {}
    compiled = torch.compile(target, backend=backend, **extra)

    # Identical inputs again: a recompile here comes from state the call itself changed (an int
    # counter on the module, a global), which no input change explains.
    steps = [("first call", lambda: (args, kwargs)), ("same inputs again", lambda: (args, kwargs))]
    batch = _batch_size(args, kwargs)
    if batch:
        steps.append((f"batch {batch}->{batch + 1}", lambda: _grow_batch(args, kwargs, batch, 1)))
        steps.append((f"batch {batch + 1}->{batch + 2}", lambda: _grow_batch(args, kwargs, batch, 2)))
    ints = _int_arguments(args, kwargs)
    if ints:
        names = ", ".join(ints)
        steps.append((f"int {names} +1", lambda: _bump_ints(args, kwargs, 1)))
        steps.append((f"int {names} +2", lambda: _bump_ints(args, kwargs, 2)))
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

    found: list[dict] = []
    for trigger, make_inputs in steps:
        clear()
        try:
            a, k = make_inputs()
            oracle._call(compiled, a, k)
            if device == "cuda":
                torch.cuda.synchronize()
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 -- the example's own failure is data
            return found, f"{trigger}: {_describe(exc)}"
        for entry in get():
            reason = getattr(entry, "recompile_reason", None)
            if not reason:
                continue
            reason = _one_line(reason)
            # By design, once: the first batch change makes Dynamo recompile every frame that saw
            # the batch (tensor sizes, or ints taken from them and passed to resume functions)
            # with a dynamic batch dimension; a train()/eval() toggle recompiles on `training`.
            # A recompile on the second batch change, or on any other guard, is a real cost.
            # The same holds for the first change of a Python int argument.
            first_int = next((name for name, _ in steps if name.startswith("int ")), None)
            first_batch = next((name for name, _ in steps if name.startswith("batch ")), None)
            expected = trigger == first_batch or trigger == first_int or (
                trigger.endswith("()") and "training" in reason)
            found.append({
                "trigger": trigger,
                "reason": reason,
                "path": os.path.abspath(entry.co_filename) if getattr(entry, "co_filename", None) else None,
                "line": getattr(entry, "co_firstlineno", None),
                "function": getattr(entry, "co_name", None),
                "expected": bool(expected),
            })
    return found, None


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
