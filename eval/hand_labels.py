"""Precision of tcl on hand-labelled findings from whole installed packages.

Reruns ``tcl check --format json`` on each labelled package in site-packages, matches the
current findings to the labels by (path, code, stripped source line) -- so a finding that only
moved to another line still matches; several findings with the same key are paired in column
order -- and prints, per library and overall: labelled TP / FP / unclear, precision =
TP/(TP+FP), current findings without a label, and labels whose finding disappeared.

Two samples (``--sample``; default: both, each package that is installed):

* ``heldout`` (``eval/labels/heldout_findings.json``, sessions 5-7): piq, e3nn, julius, lightly,
  gpytorch, zuko, peft. Its false positives' reasons have been read while developing tcl since
  session 6, so it is no longer a clean measure (docs/accuracy.md says which changes it saw).
* ``sample10`` (``eval/labels/sample10_findings.json``, session 10, labelled by a helper on the
  session's starting engine while the developer saw only the counts): nflows, torchkbnufft,
  demucs, torchani, botorch, pykeen; install with
  ``pip install --no-deps -r eval/requirements-labels-sample10.txt`` (tcl only reads their
  source; the repro scripts in eval/labels/repro/sample10/ need the whole file's packages).
* ``sample11`` (``eval/labels/sample11_findings.json``, session 11, labelled the same way on
  that session's starting engine, 36fec5d): dadaptation, torch-audiomentations, pytorchcv,
  neuraloperator, torchdyn, denoising-diffusion-pytorch, pytorch-widedeep; install with
  ``pip install --no-deps -r eval/requirements-labels-sample11.txt`` (its first seven lines are
  the labelled packages; the rest only the repro scripts need).
* ``sample12`` (``eval/labels/sample12_findings.json``, session 19, labelled by a helper on
  529389b; a development sample, read while developing tcl): opacus, FrEIA, ultralytics,
  speechbrain (every 3rd finding); install with
  ``pip install --no-deps -r eval/requirements-labels-sample12.txt``.

A label whose finding tcl now reports at another line of the same hazard (session 26: TCL501 at a
counter's first read, where the compiler's failing guard points, not at its update) is moved
there with a `moved` note that keeps the line it was given at; its verdict is unchanged.

Run from the checkout root with the interpreter whose site-packages holds the packages:

    PYTHONPATH=. /work/venvs/eval/bin/python eval/hand_labels.py [--sample NAME] [--site-packages DIR] [-j N]

Where a package was labelled on every k-th finding in sorted (path, line, code) order, its
unlabelled findings are reported as "not sampled" rather than new.  A package that is not
installed is skipped.  Always exits 0.  Stdlib + tcl only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import sysconfig
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
LABELS = os.path.join(HERE, "labels", "heldout_findings.json")
# name -> (labels file, libraries, {library: k} where every k-th finding was labelled)
SAMPLES = {
    "heldout": (LABELS, ["piq", "e3nn", "julius", "lightly", "gpytorch", "zuko", "peft"], {"peft": 3}),
    "sample10": (os.path.join(HERE, "labels", "sample10_findings.json"),
                 ["nflows", "torchkbnufft", "demucs", "torchani", "botorch", "pykeen"],
                 {"nflows": 2, "torchani": 2, "botorch": 7}),
    "sample11": (os.path.join(HERE, "labels", "sample11_findings.json"),
                 ["dadaptation", "torch_audiomentations", "pytorchcv", "neuralop", "torchdyn",
                  "denoising_diffusion_pytorch", "pytorch_widedeep"],
                 {"dadaptation": 2, "torch_audiomentations": 2}),
    "sample12": (os.path.join(HERE, "labels", "sample12_findings.json"),
                 ["opacus", "FrEIA", "ultralytics", "speechbrain"], {"speechbrain": 3}),
}
FIELDS = ("library", "path", "line", "code", "source", "message", "label", "reason", "reproduced", "repro")
LABEL_VALUES = ("TP", "FP", "unclear")


def load_labels(path: str = LABELS) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def key(item: dict) -> tuple[str, str, str]:
    return (item["path"], item["code"], item["source"].strip())


def run_tcl(site: str, lib: str, jobs: int) -> list[dict]:
    """Current findings of tcl on site/lib, each with its stripped source line."""
    env = dict(os.environ)
    root = os.path.dirname(HERE)
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run(
        [sys.executable, "-m", "tcl", "check", "--format", "json", "--no-cache", "--no-config",
         "-j", str(jobs), lib],
        cwd=site, env=env, capture_output=True, text=True)
    data = json.loads(proc.stdout)
    findings = data["findings"]
    cache: dict[str, list[str]] = {}
    for x in findings:
        if x["path"] not in cache:
            with open(os.path.join(site, x["path"]), encoding="utf-8", errors="replace") as f:
                cache[x["path"]] = f.read().splitlines()
        lines = cache[x["path"]]
        x["source"] = lines[x["line"] - 1].strip() if 0 < x["line"] <= len(lines) else ""
    return findings


def match(labels: list[dict], findings: list[dict]) -> tuple[list[tuple[dict, dict]], list[dict], list[dict]]:
    """Pair labels with findings by key; within one key, pair in (line, col) order.

    Returns (pairs, unlabelled findings, labels whose finding disappeared).
    """
    by_key_l: dict[tuple, list[dict]] = defaultdict(list)
    by_key_f: dict[tuple, list[dict]] = defaultdict(list)
    for lab in labels:
        by_key_l[key(lab)].append(lab)
    for x in findings:
        by_key_f[key(x)].append(x)
    pairs, unlabelled, gone = [], [], []
    for k in set(by_key_l) | set(by_key_f):
        ls = sorted(by_key_l.get(k, []), key=lambda d: (d["line"], d.get("col", 0)))
        fs = sorted(by_key_f.get(k, []), key=lambda d: (d["line"], d.get("col", 0)))
        # Same line and column first (one of several findings on a line went away), then
        # the rest in column order (the line moved).
        exact = [(lab, f) for lab in ls for f in fs
                 if "col" in lab and (lab["line"], lab["col"]) == (f["line"], f.get("col"))]
        for lab, f in exact:
            if lab in ls and f in fs:
                pairs.append((lab, f))
                ls = [x for x in ls if x is not lab]
                fs = [x for x in fs if x is not f]
        n = min(len(ls), len(fs))
        pairs.extend(zip(ls[:n], fs[:n]))
        gone.extend(ls[n:])
        unlabelled.extend(fs[n:])
    return pairs, unlabelled, gone


def precision(tp: int, fp: int) -> str:
    return f"{tp / (tp + fp):.3f}" if tp + fp else "n/a"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--site-packages", default=sysconfig.get_paths()["purelib"])
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--sample", choices=[*SAMPLES, "all"], default="all")
    args = ap.parse_args(argv)
    for name in SAMPLES if args.sample == "all" else [args.sample]:
        path, libraries, sampled = SAMPLES[name]
        print(f"sample {name} ({os.path.relpath(path, os.path.dirname(HERE))})")
        report(load_labels(path), libraries, sampled, args)
    return 0


def report(labels: list[dict], libraries: list[str], sampled: dict[str, int], args) -> None:
    per_lib: dict[str, list[dict]] = defaultdict(list)
    for lab in labels:
        per_lib[lab["library"]].append(lab)
    tot = defaultdict(int)
    print(f"{'library':12} {'TP':>4} {'FP':>4} {'uncl':>4} {'prec':>6} {'new':>4} {'unsmp':>5} {'gone':>4}")
    details = []
    for lib in libraries:
        if not os.path.isdir(os.path.join(args.site_packages, lib)):
            print(f"{lib:12} not installed, skipped")
            continue
        try:
            findings = run_tcl(args.site_packages, lib, args.jobs)
        except Exception as ex:  # report and go on: the script always exits 0
            print(f"{lib:12} tcl failed: {ex}")
            continue
        pairs, unlabelled, gone = match(per_lib.get(lib, []), findings)
        c = defaultdict(int)
        for lab, _ in pairs:
            c[lab["label"]] += 1
        new = [] if lib in sampled else unlabelled
        unsampled = len(unlabelled) if lib in sampled else 0
        for name, v in (("TP", c["TP"]), ("FP", c["FP"]), ("unclear", c["unclear"]),
                        ("new", len(new)), ("unsampled", unsampled), ("gone", len(gone))):
            tot[name] += v
        print(f"{lib:12} {c['TP']:4} {c['FP']:4} {c['unclear']:4} {precision(c['TP'], c['FP']):>6} "
              f"{len(new):4} {unsampled:5} {len(gone):4}")
        details += [f"  new      {lib}: {x['path']}:{x['line']} {x['code']} {x['source'][:80]}" for x in new]
        details += [f"  gone     {lib}: {g['path']}:{g['line']} {g['code']} ({g['label']}) {g['source'][:80]}"
                    for g in gone]
    print(f"{'overall':12} {tot['TP']:4} {tot['FP']:4} {tot['unclear']:4} {precision(tot['TP'], tot['FP']):>6} "
          f"{tot['new']:4} {tot['unsampled']:5} {tot['gone']:4}")
    if details:
        print("\n".join(details))


if __name__ == "__main__":
    main()
    sys.exit(0)
