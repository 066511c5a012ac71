"""GPU timings of real library models before and after the Dynamo settings `tcl fix` inserts.

    python scripts/gpu_settings_bench.py --json OUT.json [--models big_bird,...] [--iters 20]

For the models of the corpus where scripts/fix_settings.py kept the settings (the settings tcl's
findings called for, verified on the model), at realistic sizes on CUDA: eager, `torch.compile`
as written, and `torch.compile` with those settings (what the fix inserts before the user's
compile call), in default and `reduce-overhead` modes, inductor. Each cell is the median ms per
call over `--repeats` repeats of `--iters` calls after `--warmup` calls, with min and max; the
first compiled call is timed on its own. Graph breaks (default mode, the graph_breaks log,
every file of the library) are counted as written and with the settings, and the compiled output
with the settings is compared with eager (allclose, rtol=atol=1e-3). Training rows run forward
and backward of the loss. The settings per model are the ones tcl chose on the CPU corpus run
(SETTINGS below; docs/results/fix_settings_dev.json has the decision and its evidence).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

SCALAR, SHAPES = "capture_scalar_outputs", "capture_dynamic_output_shape_ops"


def big_bird(device):
    import torch
    from transformers import BigBirdConfig, BigBirdModel

    cfg = BigBirdConfig(vocab_size=30000, hidden_size=768, num_hidden_layers=4, num_attention_heads=12,
                        intermediate_size=3072, max_position_embeddings=4096, attention_type="block_sparse",
                        block_size=64, num_random_blocks=3)
    model = BigBirdModel(cfg).eval().to(device)
    ids = torch.randint(5, 30000, (4, 2048), device=device)
    return "BigBird block-sparse encoder (4 layers, 768 wide, 4 x 2048 tokens)", model, (ids,), {}, False, "transformers"


def fastspeech2(device):
    import torch
    from transformers import FastSpeech2ConformerConfig, FastSpeech2ConformerModel

    model = FastSpeech2ConformerModel(FastSpeech2ConformerConfig()).eval().to(device)
    ids = torch.randint(5, 70, (8, 64), device=device)
    return "FastSpeech2 Conformer TTS (default config, 8 x 64 phonemes)", model, (ids,), {}, False, "transformers"


def _pml_loss(name):
    def build(device):
        import torch
        from pytorch_metric_learning import losses

        loss = getattr(losses, name)(num_classes=1000, embedding_size=512).to(device)
        embedder = torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 512)).to(device)

        class Step(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.embedder, self.loss = embedder, loss

            def forward(self, x, labels):
                return self.loss(self.embedder(x), labels)

        x = torch.randn(1024, 1024, device=device)
        labels = torch.randint(0, 1000, (1024,), device=device)
        return (f"pytorch-metric-learning {name} training step (embedder + loss, batch 1024, 1000 classes)",
                Step(), (x, labels), {}, True, "pytorch_metric_learning")
    return build


MODELS = {
    "big_bird": (big_bird, [SCALAR]),
    "fastspeech2": (fastspeech2, [SHAPES, SCALAR]),
    "pml_arcface": (_pml_loss("ArcFaceLoss"), [SHAPES, SCALAR]),
    "pml_cosface": (_pml_loss("CosFaceLoss"), [SHAPES, SCALAR]),
}


def _library_files(package: str) -> set[str]:
    import importlib

    root = os.path.dirname(importlib.import_module(package).__file__)
    return {os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if f.endswith(".py")}


def run_model(name: str, modes: list[str], iters: int, repeats: int, warmup: int, device: str = "cuda",
              on_row=None) -> list[dict]:
    import torch

    from tcl.bench import _detach, _record, _same, _time, _training, within_noise
    from tcl.oracle import probe

    build, settings = MODELS[name]
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    torch.manual_seed(0)
    title, model, args, kwargs, train, package = build(device)
    files = _library_files(package)
    params = [p for p in model.parameters()]

    def step_fn(fn):
        return _training(fn, params) if train else fn

    def patched(on):
        from tcl.dynamo_settings import config_values

        return torch._dynamo.config.patch(**config_values(settings)) if on else contextlib.nullcontext()

    grad = contextlib.nullcontext() if train else torch.no_grad()
    rows = []
    with grad:
        torch.manual_seed(0)
        reference = _detach(model(*args, **kwargs))
        eager = _time(step_fn(model), args, kwargs, iters, warmup, sync, repeats=repeats)
        breaks = {}
        for label, on in (("written", False), ("fixed", True)):
            torch._dynamo.reset()
            with patched(on):
                breaks[label] = len(probe(model, args, kwargs, user_files=files, modes=("default",)).breaks)
        for mode in modes:
            row = {"model": name, "title": title, "mode": mode, "settings": settings, "train": train,
                   "breaks_written": breaks["written"], "breaks_fixed": breaks["fixed"]}
            _record(row, "eager", eager)
            for label, on in (("written", False), ("fixed", True)):
                torch._dynamo.reset()
                with patched(on):
                    compiled = torch.compile(model, mode=None if mode == "default" else mode)
                    sync()
                    started = time.perf_counter()
                    step = step_fn(compiled)
                    if mode == "reduce-overhead":
                        def step(*a, _inner=step, **k):
                            torch.compiler.cudagraph_mark_step_begin()
                            return _inner(*a, **k)
                    torch.manual_seed(0)
                    out = _detach(compiled(*args, **kwargs))
                    sync()
                    row[f"compile_{label}_s"] = round(time.perf_counter() - started, 2)
                    if label == "fixed":
                        row["same_out"] = _same(reference, out)
                    _record(row, label, _time(step, args, kwargs, iters, warmup, sync, repeats=repeats))
            row["recovered"] = row["written_ms"] / row["fixed_ms"]
            row["within_noise"] = within_noise(row, "written", "fixed")
            rows.append(row)
            print(json.dumps(row), flush=True)
            if on_row is not None:
                on_row(row)
    torch._dynamo.reset()
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--modes", default="default,reduce-overhead")
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--report", metavar="JSON", help="print the docs/gallery.md table of a results file and exit")
    parser.add_argument("--device", default="cuda", help="cuda (the measurement) or cpu (a smoke run)")
    parser.add_argument("--inline", action="store_true",
                        help="run every cell in this process (default: one child process per model and mode, "
                        "so a crash, e.g. a segfault under CUDA graphs, costs that cell only)")
    args = parser.parse_args(argv)
    if args.report:
        print(report(json.load(open(args.report, encoding="utf-8"))))
        return 0
    if not args.json:
        parser.error("--json is required")
    if not args.inline:
        return _per_cell(args)
    import torch

    out = {"torch": torch.__version__, "rows": [], "errors": {},
           "device": torch.cuda.get_device_name(0) if args.device == "cuda" else "cpu"}
    try:
        import transformers

        out["transformers"] = transformers.__version__
    except ImportError:
        pass
    def save(row=None):
        if row is not None:
            out["rows"].append(row)
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(out, handle, indent=1)

    for name in args.models.split(","):
        try:
            run_model(name, args.modes.split(","), args.iters, args.repeats, args.warmup, args.device, save)
        except Exception as exc:  # noqa: BLE001 -- one model's failure is reported, the rest go on
            out["errors"][name] = f"{type(exc).__name__}: {str(exc)[:500]}"
            print(f"{name}: {out['errors'][name]}", flush=True)
        save()
    return 0


def report(data: dict) -> str:
    """The markdown table docs/gallery.md shows: median ms (min-max) per cell."""
    def cell(row, label):
        low, high = row[f"{label}_ms_range"]
        return f"{row[f'{label}_ms']:.2f} ({low:.2f}–{high:.2f})"

    lines = ["| model | mode | eager ms | as written ms | with the settings ms | breaks | recovered | "
             "compile s (written/with) | same out |", "|---|---|---|---|---|---|---|---|---|"]
    for row in data["rows"]:
        recovered = f"{'~' if row['within_noise'] else ''}{row['recovered']:.2f}x"
        lines.append(f"| {row['title']} | {row['mode']} | {cell(row, 'eager')} | {cell(row, 'written')} | "
                     f"{cell(row, 'fixed')} | {row['breaks_written']} -> {row['breaks_fixed']} | {recovered} | "
                     f"{row['compile_written_s']} / {row['compile_fixed_s']} | {'yes' if row['same_out'] else 'NO'} |")
    for cell_name, why in sorted(data.get("errors", {}).items()):
        lines.append(f"| {cell_name} | | | | | | | | {why} |")
    return "\n".join(lines)


def _per_cell(args) -> int:
    import subprocess
    import tempfile

    merged = {"rows": [], "errors": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(","):
            for mode in args.modes.split(","):
                part = os.path.join(tmp, f"{name}.{mode}.json")
                done = subprocess.run([sys.executable, os.path.abspath(__file__), "--inline", "--models", name,
                                       "--modes", mode, "--iters", str(args.iters), "--repeats", str(args.repeats),
                                       "--warmup", str(args.warmup), "--device", args.device, "--json", part])
                got = json.load(open(part, encoding="utf-8")) if os.path.exists(part) else {"rows": [], "errors": {}}
                merged.update({k: v for k, v in got.items() if k not in ("rows", "errors")})
                merged["rows"].extend(got["rows"])
                merged["errors"].update({f"{k} {mode}": v for k, v in got["errors"].items()})
                if done.returncode != 0 and not any(r["mode"] == mode for r in got["rows"]):
                    merged["errors"][f"{name} {mode}"] = f"the child process exited with {done.returncode}"
                with open(args.json, "w", encoding="utf-8") as handle:
                    json.dump(merged, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
