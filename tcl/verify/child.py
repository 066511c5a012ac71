"""The child process of `tcl verify`: imports user code, runs its examples, reports as JSON lines.

Started by tcl/verify/examples.py as ``python -m tcl.verify.child JOB.json`` (a fresh interpreter, never a
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
from tcl.verify.common import _describe, package_root
from tcl.verify.recompiles import _recompiles, compile_options

# Errors after which a CUDA context cannot be trusted: the rest of the examples go to a new child.
_POISON = re.compile(
    r"device-side assert|CUDA error|CUBLAS_STATUS|CUDNN_STATUS|illegal memory access|"
    r"out of memory|cudaError|NCCL error",
    re.IGNORECASE,
)


class _Events:
    def __init__(self, path: str) -> None:
        self._file = open_append(path)  # made by the parent in its private directory; never a link

    def emit(self, **fields) -> None:
        self._file.write(json.dumps(fields, default=str) + "\n")
        self._file.flush()  # the parent reads as we go; a crash must not lose finished examples


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


def _load_module(source: dict):
    if source["kind"] == "module":
        if os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        return importlib.import_module(source["module"])
    path = source["path"]
    root, dotted = package_root(path)
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


# --------------------------------------------------------------------------- one example


_DEVICE_MISMATCH = re.compile(r"Expected all tensors to be on the same device|found at least two devices")


def _run_example(example, job) -> dict:
    import torch

    started = time.perf_counter()
    try:
        target, args, kwargs = _split_example(example)
    except Exception as exc:  # noqa: BLE001
        return {"error": f"bad example: {_describe(exc)}", "seconds": round(time.perf_counter() - started, 3)}
    # The recompile exploration compiles the function the way its decorator did (dynamic=False
    # guards every size), and stops exploring when its share of the timeout is spent.
    job = dict(job, compile_options=compile_options(target), example_started=time.monotonic())
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
              "recompiles": [], "recompile_error": None, "exploration": None, "eager_error": None,
              "warning": None}
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
            result["recompiles"], result["recompile_error"], result["exploration"] = _recompiles(
                target, args, kwargs, job)
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
