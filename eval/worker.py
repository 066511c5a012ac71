"""Runs one model through the compiler oracle and writes what it saw as JSON.

    python eval/worker.py NAME OUT.json

Started by run_eval.py in a subprocess of its own (a crash or hang costs one model only).
The output holds the eager run's executed lines of the library files, every default-mode
graph break (innermost library frame, GB id, reason) and, for each break, the chain of
library frames above it as the graph_breaks log printed them.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.dirname(HERE))  # the repository root: `tcl`

LEGACY_LIBRARIES = ("transformers", "timm", "torchvision")
_FRAME = re.compile(r'^\s*File "(.+?)", line (\d+), in (.+)$', re.MULTILINE)


def library_roots(library: str) -> dict[str, str]:
    """import name -> package folder, for the model's library (the three development
    libraries together: a transformers model may run timm code, and the reverse)."""
    import importlib

    roots = {}
    for name in (LEGACY_LIBRARIES if library in LEGACY_LIBRARIES else (library,)):
        try:
            module = importlib.import_module(name)
            # A namespace package (pytorch-tabnet ships no __init__.py) has no __file__: its folder
            # is its __path__. Without this its lines were never recorded as library code.
            folder = os.path.dirname(module.__file__) if module.__file__ else list(module.__path__)[0]
            roots[name] = os.path.realpath(folder)
        except Exception:  # a library that does not import is simply not user code
            pass
    return roots


def library_files(roots) -> set[str]:
    return {os.path.join(d, f) for root in roots.values() for d, _, fs in os.walk(root) for f in fs
            if f.endswith(".py")}


def versions(library: str) -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, packages_distributions, version

    out = {"python": sys.version.split()[0]}
    dists = list(packages_distributions().get(library, []))
    for dist in ["torch", "transformers", "timm", "torchvision", "tokenizers", "huggingface-hub", "libcst"] + dists:
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            pass
    return out


def main(name: str, out_path: str) -> int:
    import tv_stub

    started = time.time()
    stubbed = tv_stub.install()
    import torch

    if os.environ.get("TCL_EVAL_THREADS"):
        torch.set_num_threads(int(os.environ["TCL_EVAL_THREADS"]))
    import tcl.oracle as oracle
    from models import MODELS, SHAPED, SPLIT

    library, mode, builder = MODELS[name]
    roots = library_roots(library)
    user = library_files(roots)
    user_norm = {os.path.normcase(os.path.realpath(p)) for p in user}
    result = {"name": name, "library": library, "mode": mode, "split": SPLIT[name], "versions": versions(library),
              "torchvision_stubbed": stubbed, "roots": roots}

    # Keep the raw graph_breaks records: the oracle reduces each to its innermost user frame,
    # the evaluation also wants the library frames above it (who called the breaking helper,
    # and whether a caller's frame broke inside a loop / with / try).
    records: list[str] = []
    original_parse = oracle._parse_log

    def keep_records(recs, user_files):
        records.extend(recs)
        return original_parse(recs, user_files)

    oracle._parse_log = keep_records
    try:
        torch.manual_seed(0)
        model, args, kwargs = builder()
    except Exception as exc:
        result["build_error"] = f"{type(exc).__name__}: {exc}"
        result["traceback"] = traceback.format_exc()
        _write(out_path, result)
        return 0
    build_s = time.time() - started
    result.update(_entry(model))
    torch.manual_seed(0)
    eager_first = os.environ.get("TCL_EVAL_EAGER_FIRST") == "1"
    # A fresh copy per run: the compiled call is the model's first call, as in real use (the
    # eager run would otherwise have installed transformers' output-capture hooks already).
    res = oracle.probe(model, args, kwargs, user_files=user, collect_lines=True, modes=("default",),
                       fresh_target=not eager_first)
    oracle._parse_log = original_parse

    stacks = _stacks(records, user_norm)
    result.update(
        eager_first=eager_first,
        build_seconds=round(build_s, 2),
        seconds=round(time.time() - started, 2),
        exception=res.exception,
        breaks=[{"path": os.path.realpath(b.path), "line": b.line, "gb": b.gb, "reason": b.reason,
                 "stack": stacks.get((os.path.realpath(b.path), b.line, b.gb), [])} for b in res.breaks],
        executed={os.path.realpath(p): sorted(lines) for p, lines in res.executed_lines.items()},
    )
    result["recompiles"] = _three_shapes(builder if name in SHAPED else None, model, args, kwargs)
    result["seconds"] = round(time.time() - started, 2)
    _write(out_path, result)
    return 0


def _entry(model) -> dict:
    """What the evaluation compiles, as `tcl check` names an entry (tcl.entry_recording.entry_of;
    the copy _three_shapes compiles has the same class): {"entry": "module:Qual.name"}, or
    {"entry_problem": why} when it cannot be named."""
    try:
        from tcl.entry_recording import entry_of

        entry = entry_of(model)
    except Exception as exc:  # naming the model never costs its results
        return {"entry_problem": f"{type(exc).__name__}: {exc}"}
    return {"entry_problem": entry} if isinstance(entry, str) else {"entry": entry[0]}


def _three_shapes(builder, model, args, kwargs) -> dict:
    """One fresh compiled copy (backend="eager", default mode) called with shapes 0, 1, 2: every
    compilation with its failing guard and the lines that fixed a size (tcl.verify.compile_trace)."""
    import copy

    import torch

    import tcl.oracle as oracle
    from tcl.verify.compile_trace import CompileTrace, persistent

    calls = [(args, kwargs)]
    try:
        for shape in (1, 2):
            torch.manual_seed(0)
            if builder is None:
                calls.append(_grown(args, kwargs, shape))
            else:
                _, more_args, more_kwargs = builder(shape=shape)
                calls.append((more_args, more_kwargs))
    except Exception as exc:
        return {"error": f"building shape inputs: {type(exc).__name__}: {exc}"}
    target = copy.deepcopy(model) if isinstance(model, torch.nn.Module) else model
    torch._dynamo.reset()
    compiled = torch.compile(target, backend="eager")
    error = None
    with CompileTrace() as trace:
        for a, k in calls:
            trace.next_call()
            try:
                oracle._call(compiled, *oracle._fresh(a, k))
            except Exception as exc:  # the model's own failure on a shape: data, not a crash
                error = f"call {trace._call}: {type(exc).__name__}: {str(exc)[:300]}"
                break
    comps = trace.compilations
    torch._dynamo.reset()
    return {"error": error, "calls": len(calls), "compilations": [c.to_json() for c in comps],
            "persistent": [c.index for c in persistent(comps)]}


def _grown(args, kwargs, k):
    """Inputs of the development models (eval/models.py builders take no shape) grown the way
    their callers vary them: k more rows of batch (copies of the first row), and token-id
    tensors (2-D integer, the sequence in dim 1) 4*k more positions (copies of the last)."""
    import torch

    first = []

    def sizes(t):
        if not first and t.dim() >= 1:
            first.append(tuple(t.shape))

    _map((args, kwargs), sizes)
    batch = first[0][0] if first else None
    seq = next((shape[1] for shape in first if len(shape) == 2), None)

    def grow(t):
        if t.dim() >= 1 and t.shape[0] == batch:
            t = torch.cat([t] + [t[:1]] * k)
        if t.dim() == 2 and not t.is_floating_point() and seq and t.shape[1] == seq:
            t = torch.cat([t] + [t[:, -1:]] * (4 * k), dim=1)
        return t

    return _map((args, kwargs), grow)


def _map(obj, fn):
    import torch

    if isinstance(obj, torch.Tensor):
        out = fn(obj)
        return obj if out is None else out
    if isinstance(obj, tuple):
        return tuple(_map(o, fn) for o in obj)
    if isinstance(obj, list):
        return [_map(o, fn) for o in obj]
    if isinstance(obj, dict):
        return {k: _map(v, fn) for k, v in obj.items()}
    return obj


def _stacks(records, user_norm):
    """(innermost library path, line, gb) -> library frames outermost first, [path, line, function]."""
    import tcl.oracle as oracle

    out = {}
    for text in records:
        i = text.find("User code traceback:")
        if i < 0:
            continue
        frames = [(os.path.realpath(f), int(n), fn.strip()) for f, n, fn in _FRAME.findall(text[i:])]
        frames = [fr for fr in frames if os.path.normcase(fr[0]) in user_norm]
        if not frames:
            continue
        key = (frames[-1][0], frames[-1][1], oracle.gb_id_of(text))
        out.setdefault(key, [list(fr) for fr in frames])
    return out


def _write(path, data):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
