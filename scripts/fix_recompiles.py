#!/usr/bin/env python
"""How many persistent recompiles `tcl fix` removes on a real library's corpus models.

    python scripts/fix_recompiles.py --library pytorch_metric_learning --prefix pml_ [--jobs 2]

1. Copies the installed package to a temporary folder and runs `tcl fix --select
   TCL501,TCL505,TCL506,TCL507 --apply` on the copy (the installed package is never touched).
2. Runs every eval/corpus model whose name starts with --prefix through eval/worker.py twice,
   against the installed package and against the fixed copy (PYTHONPATH first), three shapes
   each, and counts the persistent recompiles (tcl.verify.compile_trace.persistent) and the
   graph breaks of each run.
3. Calls each model eagerly on its three shapes with both packages (same seeds) and compares
   the outputs bit for bit.

Prints one line per model and the totals; --json writes them. Needs the eval venv
(eval/requirements*.txt). Measured results are in docs/accuracy.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EVAL = os.path.join(ROOT, "eval")
sys.path.insert(0, EVAL)
sys.path.insert(1, ROOT)

EAGER = r'''
import sys, torch
sys.path.insert(0, {eval!r}); sys.path.insert(1, {root!r})
import tv_stub; tv_stub.install()
from models import MODELS
out = {{}}
for name in {names!r}:
    builder = MODELS[name][2]
    results = []
    for shape in (0, 1, 2):
        torch.manual_seed(0)
        target, args, kwargs = builder(shape=shape)
        torch.manual_seed(1)
        results.append(target(*args, **kwargs))
    out[name] = results
torch.save(out, {path!r})
'''


def _worker(name: str, out: str, env: dict) -> dict:
    subprocess.run([sys.executable, os.path.join(EVAL, "worker.py"), name, out], env=env, cwd=ROOT,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600)
    with open(out, encoding="utf-8") as f:
        return json.load(f)


def _counts(result: dict) -> tuple[int, int]:
    from tcl.verify.compile_trace import Compilation, persistent

    comps = [Compilation(c["index"], c["function"], c["path"], c["first_line"], c["reason"], c["call"])
             for c in (result.get("recompiles") or {}).get("compilations", [])]
    return len(persistent(comps)), len(result.get("breaks", []))


def _same(a, b) -> bool:
    import torch

    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)
    if isinstance(a, (list, tuple)):
        return isinstance(b, (list, tuple)) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--library", required=True, help="import name of the installed package")
    parser.add_argument("--prefix", required=True, help="corpus model names to run (their prefix)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--json", help="write the per-model figures here")
    args = parser.parse_args(argv)

    import importlib

    import torch

    from models import MODELS

    names = [n for n in MODELS if n.startswith(args.prefix)]
    package = os.path.dirname(importlib.import_module(args.library).__file__)
    work = tempfile.mkdtemp(prefix="tcl_fix_recompiles_")
    try:
        fixed_root = os.path.join(work, "site")
        shutil.copytree(package, os.path.join(fixed_root, args.library),
                        ignore=shutil.ignore_patterns("__pycache__"))
        fix = subprocess.run([sys.executable, "-m", "tcl", "fix", "--select", "TCL501,TCL505,TCL506,TCL507",
                              "--apply", os.path.join(fixed_root, args.library)],
                             capture_output=True, text=True, cwd=work)
        summary = [line for line in (fix.stdout + fix.stderr).splitlines() if line.startswith("tcl fix:")]
        print(summary[-1] if summary else (fix.stderr.strip() or "tcl fix printed nothing"))
        plain = dict(os.environ, HF_HUB_OFFLINE="1")
        patched = dict(plain, PYTHONPATH=os.pathsep.join([fixed_root, plain.get("PYTHONPATH", "")]).rstrip(os.pathsep))

        def both(name):
            before = _worker(name, os.path.join(work, f"{name}.before.json"), plain)
            after = _worker(name, os.path.join(work, f"{name}.after.json"), patched)
            return name, before, after

        rows = {}
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            for name, before, after in pool.map(both, names):
                (pb, bb), (pa, ba) = _counts(before), _counts(after)
                rows[name] = {"persistent_before": pb, "persistent_after": pa, "breaks_before": bb, "breaks_after": ba}
        for env, tag in ((plain, "before"), (patched, "after")):
            script = EAGER.format(eval=EVAL, root=ROOT, names=names, path=os.path.join(work, f"eager.{tag}.pt"))
            subprocess.run([sys.executable, "-c", script], env=env, cwd=ROOT, check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        before = torch.load(os.path.join(work, "eager.before.pt"), weights_only=False)
        after = torch.load(os.path.join(work, "eager.after.pt"), weights_only=False)
        for name in names:
            rows[name]["eager_identical"] = _same(before[name], after[name])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for name, row in rows.items():
        print(f"{name:30s} persistent {row['persistent_before']} -> {row['persistent_after']}   "
              f"breaks {row['breaks_before']} -> {row['breaks_after']}   eager identical {row['eager_identical']}")
    total = {key: sum(r[key] for r in rows.values()) for key in ("persistent_before", "persistent_after")}
    print(f"persistent recompiles {total['persistent_before']} -> {total['persistent_after']}; models recompiling "
          f"{sum(r['persistent_before'] > 0 for r in rows.values())} -> {sum(r['persistent_after'] > 0 for r in rows.values())}; "
          f"eager identical {sum(r['eager_identical'] for r in rows.values())}/{len(rows)}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
