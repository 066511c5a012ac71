"""The child process of `tcl verify`: imports user code, runs its examples, reports as JSON lines.

Started by tcl/verify.py as ``python -m tcl.verify_child JOB.json`` (a fresh interpreter, never a
fork: CUDA does not survive fork).  It needs torch but not libcst, and does not import tcl's
static analyzer.  The parent watches the events file this writes, one JSON object a line:

    {"event": "hello", "torch": ..., "device": ...}      torch imported
    {"event": "loaded", "count": N, "names": [...]}      the examples function returned N examples
    {"event": "load_error", "error": ...}                importing the file or calling it failed
    {"event": "start", "index": i}                       example i begins
    {"event": "done", "index": i, "result": {...}}       example i finished (errors included)
    {"event": "poisoned", "index": i}                    a CUDA error: this process must not go on

A crash, a hang or a poisoned CUDA context in example i costs the parent one restart: it starts a
new child for the examples after i.  User prints go to /dev/null (stdout is not the channel);
faulthandler writes a Python traceback to stderr on a segfault, which the parent quotes.
"""

from __future__ import annotations

import faulthandler
import importlib
import importlib.util
import io
import json
import os
import re
import sys
import time
import traceback
import warnings

from tcl.oracle import unwrap_compiled
from tcl.safe_files import open_append

# Errors after which a CUDA context cannot be trusted: the rest of the examples go to a new child.
_POISON = re.compile(
    r"device-side assert|CUDA error|CUBLAS_STATUS|CUDNN_STATUS|illegal memory access|"
    r"out of memory|cudaError|NCCL error",
    re.IGNORECASE,
)
_MAX_TEXT = 400


class _Events:
    def __init__(self, path: str) -> None:
        self._file = open_append(path)  # made by the parent in its private directory; never a link

    def emit(self, **fields) -> None:
        self._file.write(json.dumps(fields, default=str) + "\n")
        self._file.flush()  # the parent reads as we go; a crash must not lose finished examples


def _one_line(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 3] + "..."


def _describe(exc: BaseException) -> str:
    first = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), "")
    return _one_line(f"{type(exc).__name__}: {first}" if first else type(exc).__name__)


def _quiet_debuggers() -> None:
    """breakpoint(), pdb.set_trace() and input() in user code must neither block nor take over.

    They still graph-break (Dynamo sees the same calls); what changes is what they do when they
    then run eagerly: stdin answers "c" (continue), and Bdb.set_trace does nothing, so a debugger
    cannot replace the line tracer that records which lines ran.
    """
    import bdb

    sys.stdin = io.StringIO("c\n" * 10000)
    bdb.Bdb.set_trace = lambda self, frame=None: None


# --------------------------------------------------------------------------- loading examples


def _package_root(path: str) -> tuple[str, str]:
    """(directory to put on sys.path, dotted module name) for a .py file inside packages."""
    directory, filename = os.path.split(path)
    parts = [os.path.splitext(filename)[0]]
    while os.path.isfile(os.path.join(directory, "__init__.py")):
        directory, package = os.path.split(directory)
        parts.insert(0, package)
    return directory, ".".join(parts)


def _load_module(source: dict):
    if source["kind"] == "module":
        if os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        return importlib.import_module(source["module"])
    path = source["path"]
    root, dotted = _package_root(path)
    if root not in sys.path:
        sys.path.insert(0, root)
    if "." in dotted:  # inside a package: import it properly, relative imports work
        return importlib.import_module(dotted)
    name = dotted
    if name in sys.modules or name in getattr(sys, "stdlib_module_names", ()):
        name = f"_tcl_verify_{name}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look modules up by name
    spec.loader.exec_module(module)
    return module


class _Recorded(tuple):
    """A recorded call as an example, named after its class and the test that made it."""

    title: str = ""


def _import_root(path: str, module: str) -> str:
    """The sys.path entry from which `module` imports as the file `path`."""
    depth = module.count(".") + (1 if os.path.basename(path) == "__init__.py" else 0)
    root = os.path.dirname(path)
    for _ in range(depth):
        root = os.path.dirname(root)
    return root


def _load_recorded(source: dict) -> list:
    """The calls `pytest --tcl-record` saved for classes defined in source["path"].

    torch.load with weights_only=False: the module instance is pickled whole (see
    plugins/tcl_pytest.py), which imports its class and can run code; the recording is the user's.
    """
    import zipfile

    import torch

    examples = []
    with zipfile.ZipFile(source["recording"]) as archive:
        records = {r["entry"]: r for r in json.loads(archive.read("index.json"))["records"]}
        for entry in source["entries"]:
            record = records[entry]
            root = _import_root(source["path"], record["module"])
            if root not in sys.path:
                sys.path.insert(0, root)
            try:
                data = torch.load(io.BytesIO(archive.read(entry)), map_location="cpu", weights_only=False)
                if "module_args" in data:  # keyword arguments saved after the call
                    kwargs = data["kwargs"]
                    data = torch.load(io.BytesIO(data["module_args"]), map_location="cpu", weights_only=False)
                    data["kwargs"] = kwargs
            except Exception as exc:
                raise RuntimeError(f"recorded {record['class']} ({entry}): {_describe(exc)}") from exc
            example = _Recorded((data["module"], tuple(data["args"]), dict(data["kwargs"])))
            example.title = f"{record['qualname']} from {record.get('test', '?')}"
            examples.append(example)
    return examples


def _load_examples(source: dict) -> list:
    if source["kind"] == "replay":
        return _load_recorded(source)
    module = _load_module(source)
    function = getattr(module, source["function"], None)
    if function is None:
        raise LookupError(f"{source['label']}: no function {source['function']!r}")
    if not callable(function):
        raise TypeError(f"{source['label']}: {source['function']!r} is not callable")
    return list(function())


def _target_name(target) -> str:
    import torch

    if isinstance(target, torch.nn.Module):
        inner = getattr(target, "_orig_mod", None)
        return type(inner if isinstance(inner, torch.nn.Module) else target).__name__
    target = getattr(target, "_torchdynamo_orig_callable", target)
    return getattr(target, "__qualname__", None) or getattr(target, "__name__", None) or type(target).__name__


def _split_example(example):
    if not isinstance(example, (tuple, list)) or len(example) not in (2, 3):
        raise TypeError(f"an example must be (callable, args, kwargs), got {type(example).__name__}")
    target, args = example[0], example[1]
    kwargs = example[2] if len(example) == 3 else {}
    if not callable(target):
        raise TypeError(f"example target {type(target).__name__} is not callable")
    args = tuple(args) if isinstance(args, (list, tuple)) else (args,)
    return target, args, dict(kwargs or {})


# --------------------------------------------------------------------------- recompiles


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


# --------------------------------------------------------------------------- one example


_DEVICE_MISMATCH = re.compile(r"Expected all tensors to be on the same device|found at least two devices")


def _run_example(example, job) -> dict:
    import torch

    started = time.perf_counter()
    try:
        target, args, kwargs = _split_example(example)
    except Exception as exc:  # noqa: BLE001
        return {"error": f"bad example: {_describe(exc)}", "seconds": round(time.perf_counter() - started, 3)}
    target = unwrap_compiled(target)
    result = _verify_once(target, args, kwargs, job)
    if job["device"] == "cuda" and _DEVICE_MISMATCH.search(result.get("eager_error") or ""):
        # Code written for the CPU creates tensors without a device (torch.arange(n) in forward):
        # say so, and verify it once more with CUDA as the default device.  Dynamo then traces
        # through that device mode, which can change a GB id (backward() reads GB0007, not GB0123).
        first = result["eager_error"]
        with torch.device("cuda"):
            result = _verify_once(target, args, kwargs, job)
        result["warning"] = (f"creates CPU tensors on a CUDA run ({first}); verified with "
                             "torch.device('cuda') as the default device")
        if result["error"]:
            result["error"] += f" (on the retry with torch.device('cuda'): {result['warning']})"
    try:
        torch._dynamo.reset()
    except Exception:  # noqa: BLE001
        pass
    result["seconds"] = round(time.perf_counter() - started, 3)
    return result


def _verify_once(target, args, kwargs, job) -> dict:
    import torch

    from tcl import oracle

    result = {"error": None, "breaks": [], "frame_skips": [], "fullgraph_error": None, "executed": {},
              "recompiles": [], "recompile_error": None, "eager_error": None, "warning": None}
    user_files = set(job["user_files"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            probe = oracle.probe(
                target, args, kwargs, user_files=user_files, backend=job["backend"],
                device=job["device"], collect_lines=True, modes=("default", "fullgraph"),
                compile_mode=job["mode"], fresh_target=True,
            )
            if job["device"] == "cuda":
                torch.cuda.synchronize()
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 -- e.g. moving the inputs to the device failed
            result["error"] = f"could not run: {_describe(exc)}"
            return result
        result["breaks"] = [{"path": b.path, "line": b.line, "gb": b.gb, "reason": b.reason}
                            for b in probe.breaks]
        result["frame_skips"] = [
            {"path": k.path, "line": k.line, "gb": k.gb, "stack": [list(frame) for frame in k.stack],
             "skipped_name": k.skipped_name, "skipped_path": k.skipped_path, "skipped_line": k.skipped_line}
            for k in getattr(probe, "frame_skips", [])
        ]
        if probe.fullgraph_error is not None:
            fg = probe.fullgraph_error
            result["fullgraph_error"] = {"path": fg.path, "line": fg.line, "gb": fg.gb, "reason": fg.reason}
        result["executed"] = {path: sorted(lines) for path, lines in probe.executed_lines.items()}
        result["eager_error"] = probe.exception
        if probe.exception:
            result["error"] = f"eager run raised {probe.exception}"
        elif probe.default_error:
            result["error"] = f"compiled run raised {probe.default_error}"
        if job.get("recompiles", True) and result["error"] is None:
            result["recompiles"], result["recompile_error"] = _recompiles(target, args, kwargs, job)
    return result


def _poisoned(result: dict, job: dict) -> bool:
    if job["device"] != "cuda":
        return False
    text = " ".join(str(result.get(k) or "") for k in ("error", "recompile_error"))
    return bool(_POISON.search(text))


# --------------------------------------------------------------------------- main


def _load_and_name(source: dict, events: _Events, started: float, number: int | None = None):
    """(examples, names), or None after emitting a load_error event."""
    try:
        examples = _load_examples(source)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001
        here = os.path.dirname(os.path.abspath(__file__))
        frames = [fr for fr in traceback.extract_tb(exc.__traceback__)
                  if os.path.dirname(os.path.abspath(fr.filename)) != here and "importlib" not in fr.filename]
        where = f"{frames[-1].filename}:{frames[-1].lineno}" if frames else ""
        events.emit(event="load_error", source=number, error=_describe(exc) + (f" (at {where})" if where else ""))
        return None
    names = []
    for example in examples:
        if getattr(example, "title", None):
            names.append(example.title)
            continue
        try:
            names.append(_target_name(example[0]))
        except Exception:  # noqa: BLE001
            names.append(type(example).__name__)
    return examples, names


def main(argv: list[str]) -> int:
    with open(argv[1], encoding="utf-8") as f:
        job = json.load(f)
    events = _Events(job["events"])
    faulthandler.enable(file=sys.stderr, all_threads=False)
    _quiet_debuggers()
    started = time.perf_counter()
    import torch

    device_name = "cpu"
    if job["device"] == "cuda":
        device_name = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cuda (unavailable)"
    events.emit(event="hello", torch=torch.__version__, device=device_name,
                seconds=round(time.perf_counter() - started, 3))
    if job.get("discover_only"):  # --shard: count every source's examples, run none
        for number, source in enumerate(job["sources"]):
            events.emit(event="discovering", source=number)
            loaded = _load_and_name(source, events, started, number)
            if loaded is not None:
                events.emit(event="loaded", source=number, count=len(loaded[0]), names=loaded[1])
        return 0
    loaded = _load_and_name(job["source"], events, started)
    if loaded is None:
        return 4
    examples, names = loaded
    events.emit(event="loaded", count=len(examples), names=names,
                seconds=round(time.perf_counter() - started, 3))
    indices = job.get("indices")
    for index in (range(len(examples)) if indices is None else indices):
        events.emit(event="start", index=index)
        if not 0 <= index < len(examples):
            result = {"error": f"example {index} does not exist (the examples function now returns {len(examples)})",
                      "seconds": 0.0}
        else:
            result = _run_example(examples[index], job)
        events.emit(event="done", index=index, result=result)
        if _poisoned(result, job):
            events.emit(event="poisoned", index=index)
            return 3
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
