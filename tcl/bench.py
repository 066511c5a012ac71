"""`tcl bench`: what fixing the findings buys. For each example, times eager, compiled as
written, and compiled after `tcl fix` (applied to a temporary copy), with CUDA-synchronised
timing, warm-up excluded and the first call (compilation) timed on its own.

Imports and runs the user's code (like `tcl verify`); each file runs in a child process with a
timeout.

An example is `(target, args, kwargs)` or `(target, args, kwargs, options)` with options:
  clean  a hand-written clean version of target (same call signature; an nn.Module gets the
         target's state_dict): timed compiled too, so "after fix" can be compared with it;
  train  run with autograd on and call `.backward()` on the (scalar) output each step, gradients
         cleared between steps: a training step instead of inference.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from .safe_files import open_new, private_temp_dir, read_regular, remove_tree

CHILD_TIMEOUT = int(os.environ.get("TCL_BENCH_TIMEOUT", "900"))  # seconds per file


def add_parser(commands) -> None:
    bench = commands.add_parser(
        "bench",
        help="time eager vs compiled as written vs compiled after `tcl fix` (imports and RUNS the code)",
        description="Times each example of files defining tcl_examples(): eager, torch.compile as "
        "written, and torch.compile after `tcl fix --apply` on a temporary copy. Imports and runs "
        "the code it benchmarks.",
    )
    bench.add_argument("paths", nargs="+", help="files defining tcl_examples()")
    bench.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto")
    bench.add_argument("--modes", default="default,reduce-overhead", help="torch.compile modes, comma-separated")
    bench.add_argument("--backend", default="inductor")
    bench.add_argument("--iters", type=int, default=50, help="timed calls per repeat")
    bench.add_argument("--repeats", type=int, default=5,
                       help="repeats of --iters calls per measurement: the median is reported, with min and max")
    bench.add_argument("--warmup", type=int, default=5)
    bench.add_argument("--json", dest="json_out", help="write the results here")
    bench.add_argument("--plot", help="write a PNG bar chart here (needs matplotlib)")
    bench.add_argument("--unsafe-fixes", action="store_true", help="apply unsafe fixes too before timing")


def cmd_bench(args) -> int:
    device = args.device
    results = []
    tmp = private_temp_dir("tcl_bench_")
    try:
        for number, path in enumerate(args.paths):
            try:
                fixed = copy_for_fixing(path, tmp, number)
            except OSError as exc:
                sys.stderr.write(f"{path}: cannot read: {exc.strerror or exc}\n")
                continue
            fix = subprocess.run(
                [sys.executable, "-m", "tcl", "fix", "--apply", "--no-config", fixed]
                + (["--unsafe-fixes"] if args.unsafe_fixes else []),
                capture_output=True, text=True, timeout=300,
            )
            if fix.returncode == 2:
                sys.stderr.write(f"{path}: tcl fix failed: {fix.stderr.strip()}\n")
            command = [
                sys.executable, "-m", "tcl.bench", "--child", path, fixed, device, args.modes,
                args.backend, str(args.iters), str(args.warmup), str(max(args.repeats, 1)),
            ]
            start = time.perf_counter()
            try:
                child = subprocess.run(command, capture_output=True, text=True, timeout=CHILD_TIMEOUT)
            except subprocess.TimeoutExpired as timeout:
                captured = timeout.stderr or b""
                if isinstance(captured, bytes):  # on POSIX the partial capture is never decoded
                    captured = captured.decode(errors="replace")
                progress = captured.strip().splitlines()[-3:]
                sys.stderr.write(f"{path}: timed out after {CHILD_TIMEOUT} s; last progress: {progress}\n")
                continue
            sys.stderr.write(f"{path}: {time.perf_counter() - start:.1f} s\n")
            if child.returncode != 0:
                tail = (child.stderr.strip().splitlines() or ["no output"])[-1]
                sys.stderr.write(f"{path}: benchmark failed: {tail}\n")
                continue
            results.extend(json.loads(child.stdout))
    finally:
        remove_tree(tmp)
    print(format_table(results))
    if args.json_out:
        with open(args.json_out, "w") as handle:
            json.dump(results, handle, indent=2)
    if args.plot:
        plot(results, args.plot)
    return 0 if results else 1


def copy_for_fixing(path: str, tmp: str, number: int) -> str:
    """A copy of `path` that `tcl fix --apply` may rewrite: in its own directory of the private
    `tmp` (two files of one name do not collide), created new, never through a link; the source
    is read only if it is a regular file (a FIFO does not block)."""
    directory = os.path.join(tmp, str(number))
    os.mkdir(directory, 0o700)
    fixed = os.path.join(directory, os.path.basename(path))
    data = read_regular(path)
    with open_new(fixed, "wb") as handle:
        handle.write(data)
    return fixed


def format_table(results: list[dict]) -> str:
    """ms per call as `median±spread` (half the min-max range over the repeats, in % of the
    median); the speed-up of the fixed version is marked `~` when the two ranges overlap."""
    header = (
        f"{'example':34} {'mode':16} {'eager ms':>12} {'as written':>12} {'after fix':>12} "
        f"{'breaks':>7} {'recovered':>10} {'clean ms':>9} {'vs clean':>8} {'compile s':>10} {'same out':>8}"
    )
    lines = [header, "-" * len(header)]
    for r in results:
        recovered = r["written_ms"] / r["fixed_ms"] if r["fixed_ms"] else float("nan")
        noise = "~" if within_noise(r, "written", "fixed") else " "
        clean = r.get("clean_ms")
        clean_text = f"{clean:9.3f} {clean / r['fixed_ms']:7.0%}" if clean else f"{'-':>9} {'-':>8}"
        lines.append(
            f"{r['example']:34} {r['mode']:16} {_spread(r, 'eager'):>12} {_spread(r, 'written'):>12} "
            f"{_spread(r, 'fixed'):>12} {r['breaks_written']:>3}->{r['breaks_fixed']:<3} "
            f"{noise}{recovered:8.2f}x {clean_text} {r['compile_fixed_s']:10.1f} {str(r['outputs_match']):>8}"
        )
    if any(within_noise(r, "written", "fixed") for r in results):
        lines.append("~: as written and after fix are within noise (their min-max ranges overlap)")
    return "\n".join(lines)


def within_noise(row: dict, a: str, b: str) -> bool:
    """Whether two timings of a row cannot be told apart: their min-max ranges overlap."""
    a_range, b_range = row.get(f"{a}_ms_range"), row.get(f"{b}_ms_range")
    if not a_range or not b_range:
        return False
    return a_range[0] <= b_range[1] and b_range[0] <= a_range[1]


def _spread(row: dict, label: str) -> str:
    median, span = row[f"{label}_ms"], row.get(f"{label}_ms_range")
    if not span or not median:
        return f"{median:.3f}"
    return f"{median:.3f}±{(span[1] - span[0]) / 2 / median:.0%}"


def plot(results: list[dict], path: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.stderr.write("--plot needs matplotlib\n")
        return
    labels = [f"{r['example']}\n{r['mode']}" for r in results]
    xs = range(len(results))
    width = 0.21
    fig, ax = plt.subplots(figsize=(max(8, len(results) * 1.3), 5))
    ax.bar([x - 1.5 * width for x in xs], [r["eager_ms"] for r in results], width, label="eager")
    ax.bar([x - 0.5 * width for x in xs], [r["written_ms"] for r in results], width, label="compiled as written")
    ax.bar([x + 0.5 * width for x in xs], [r["fixed_ms"] for r in results], width, label="compiled after tcl fix")
    ax.bar([x + 1.5 * width for x in xs], [r.get("clean_ms") or 0 for r in results], width,
           label="compiled hand-written clean version")
    ax.set_xticks(list(xs))
    ax.set_xticklabels(labels, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("ms per call (lower is better)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


# -- the child: imports the user's code ------------------------------------------------------
def _load(path: str, name: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _to(value, device):
    import torch

    if isinstance(value, torch.Tensor):
        # .to() of a leaf that requires grad is not a leaf: keep it one (it gets the gradients).
        return value.detach().to(device).requires_grad_(value.requires_grad) if value.is_leaf else value.to(device)
    if isinstance(value, torch.nn.Module):
        return value.to(device)  # a model passed to a step function
    if isinstance(value, (list, tuple)):
        return type(value)(_to(v, device) for v in value)
    if isinstance(value, dict):
        return {k: _to(v, device) for k, v in value.items()}
    return value


def _examples(module, device):
    import torch

    make = getattr(module, "tcl_bench_examples", None) or module.tcl_examples
    prepared = []
    for example in make():
        target, args, kwargs = example[:3]
        options = dict(example[3]) if len(example) > 3 else {}
        if isinstance(target, torch.nn.Module):
            target = target.to(device)
        clean = options.get("clean")
        if isinstance(clean, torch.nn.Module):
            if isinstance(target, torch.nn.Module):
                clean.load_state_dict(target.state_dict())
            options["clean"] = clean.to(device)
        prepared.append((target, _to(tuple(args), device), _to(dict(kwargs or {}), device), options))
    return prepared


def _time(fn, args, kwargs, iters, warmup, sync, step=lambda: None, repeats: int = 5) -> list[float]:
    """ms per call for each of `repeats` runs of `iters` calls, after `warmup` calls."""
    for _ in range(warmup):
        step()
        fn(*args, **kwargs)
    sync()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(iters):
            step()
            fn(*args, **kwargs)
        sync()
        samples.append((time.perf_counter() - start) / iters * 1000)
    return samples


def _record(row: dict, label: str, samples: list[float]) -> None:
    """`{label}_ms`: the median of the repeats; `{label}_ms_range`: [min, max]."""
    ordered = sorted(samples)
    middle = len(ordered) // 2
    median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    row[f"{label}_ms"] = median
    row[f"{label}_ms_range"] = [ordered[0], ordered[-1]]


def _training(fn, parameters):
    """One training step around fn: forward, backward of its scalar output, gradients cleared."""

    def step(*args, **kwargs):
        for p in parameters:
            p.grad = None
        out = fn(*args, **kwargs)
        out.backward()
        return out

    return step


def _parameters(*targets):
    import torch

    return [p for t in targets if isinstance(t, torch.nn.Module) for p in t.parameters()]


def _detach(value):
    """A copy that survives later calls (CUDA graphs reuse their output buffers)."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, (list, tuple)):
        return type(value)(_detach(v) for v in value)
    if isinstance(value, dict):
        return {k: _detach(v) for k, v in value.items()}
    return value


def _breaks(fn, args, kwargs) -> int:
    """Default-mode breaks from the graph_breaks log (explain() misses frame skips)."""
    from tcl.oracle import probe

    return len(probe(fn, args, kwargs, modes=("default",)).breaks)


def _same(a, b) -> bool:
    import torch

    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.shape == b.shape and torch.allclose(a.float(), b.float(), rtol=1e-3, atol=1e-3, equal_nan=True)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b or not isinstance(a, (torch.Tensor, list, tuple, dict))


def child(path, fixed, device, modes, backend, iters, warmup, repeats=5) -> list[dict]:
    import torch

    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    original = _load(path, "tcl_bench_original")
    repaired = _load(fixed, "tcl_bench_fixed")
    results = []
    base = os.path.splitext(os.path.basename(path))[0]
    for i, ((target, args, kwargs, options), (target_fixed, _, _, _)) in enumerate(
        zip(_examples(original, device), _examples(repaired, device))
    ):
        if isinstance(target, torch.nn.Module) and isinstance(target_fixed, torch.nn.Module):
            target_fixed.load_state_dict(target.state_dict())
        name = f"{base}[{i}] {getattr(target, '__name__', type(target).__name__)}"
        variants = [("written", target), ("fixed", target_fixed)]
        if options.get("clean") is not None:
            variants.append(("clean", options["clean"]))
        train = bool(options.get("train"))
        # A training step differentiates through the call; inference runs without autograd.
        grad_mode = torch.enable_grad() if train else torch.no_grad()
        with grad_mode:
            params = _parameters(*args, target)
            eager = _training(target, params) if train else target
            eager_out = _detach(eager(*args, **kwargs))
            eager_times: dict = {}
            _record(eager_times, "eager", _time(eager, args, kwargs, iters, warmup, sync, repeats=repeats))
            sys.stderr.write(f"tcl bench: {name} eager timed, counting breaks\n")
            sys.stderr.flush()
            breaks = {label: _breaks(fn, args, kwargs) for label, fn in variants}
            for mode in modes.split(","):
                row = {"example": name, "mode": mode, "device": device, "train": train, **eager_times,
                       "repeats": repeats, "iters": iters,
                       "breaks_written": breaks["written"], "breaks_fixed": breaks["fixed"]}
                if "clean" in breaks:
                    row["breaks_clean"] = breaks["clean"]
                # reduce-overhead replays CUDA graphs: each call must start a new step.
                step = torch.compiler.cudagraph_mark_step_begin if mode == "reduce-overhead" else (lambda: None)
                for label, fn in variants:
                    sys.stderr.write(f"tcl bench: {name} {mode} {label}\n")  # progress, shown on a timeout
                    sys.stderr.flush()
                    torch._dynamo.reset()
                    compiled = torch.compile(fn, backend=backend, mode=None if mode == "default" else mode)
                    if train:
                        compiled = _training(compiled, _parameters(*args, fn))
                    sync()
                    start = time.perf_counter()
                    step()
                    out = _detach(compiled(*args, **kwargs))
                    sync()
                    row[f"compile_{label}_s"] = time.perf_counter() - start
                    _record(row, label, _time(compiled, args, kwargs, iters, warmup, sync, step, repeats))
                    if label in ("fixed", "clean"):
                        row[f"outputs_match{'' if label == 'fixed' else '_clean'}"] = bool(_same(eager_out, out))
                row["fixed_vs_written"] = ("within noise" if within_noise(row, "written", "fixed") else
                                           "faster" if row["fixed_ms"] < row["written_ms"] else "slower")
                results.append(row)
    return results


if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "--child":
    import contextlib

    _, _, path, fixed, device, modes, backend, iters, warmup, repeats = sys.argv
    with contextlib.redirect_stdout(sys.stderr):  # the user's prints must not mix with the JSON
        rows = child(path, fixed, device, modes, backend, int(iters), int(warmup), int(repeats))
    print(json.dumps(rows))
