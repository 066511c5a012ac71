#!/usr/bin/env python
"""What --follow-imports costs: one user file that compiles a transformers model's `generate`.

    python bench/follow_imports.py [--model gpt2|llama] [--repeats 5]

The user file (written to a scratch directory, so no project around it is scanned):

    from transformers import GPT2Config, GPT2LMHeadModel
    model = GPT2LMHeadModel(GPT2Config(n_layer=2)).eval()
    generate = torch.compile(model.generate)

Rows, each the median of --repeats runs (min and max beside it):
  cli cold     `tcl check --no-cache --follow-imports train.py` in a subprocess: wall seconds and
               peak RSS (getrusage of the child)
  cli warm     the same with a cache directory, second run (installed files are named by their
               package version: nothing of transformers is read)
  editor       in one process, as the language server keeps its Analyzer: the first check, then a
               re-check of the user's file after an edit (one line changed) — the path the
               editor pays on every keystroke pause
and how many installed files the analysis parsed, with the findings it reported.
Needs transformers installed; measures, asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

USER = {
    "gpt2": '''import torch
from transformers import GPT2Config, GPT2LMHeadModel

model = GPT2LMHeadModel(GPT2Config(n_layer=2)).eval()
generate = torch.compile(model.generate)
''',
    "llama": '''import torch
from transformers import LlamaConfig, LlamaForCausalLM

model = LlamaForCausalLM(LlamaConfig(num_hidden_layers=2)).eval()
generate = torch.compile(model.generate)
''',
}


def _cli(path: str, cache: str | None) -> tuple[float, float, str]:
    args = [sys.executable, "-m", "tcl", "check", "--follow-imports", "--exit-zero", path]
    args += ["--cache-dir", cache] if cache else ["--no-cache"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return wall, max(rss, before) / 1024, done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr


def _editor(path: str, source: str) -> tuple[float, float, int, int]:
    from tcl.config import Config
    from tcl.engine import Analyzer

    analyzer = Analyzer(Config(follow_imports=True))
    started = time.perf_counter()
    first = analyzer.check_source(source, path)
    cold = time.perf_counter() - started
    loaded = len(analyzer.project._loaded)
    edited = source.replace(".eval()", ".eval()  # edited")
    started = time.perf_counter()
    analyzer.check_source(edited, path)
    warm = time.perf_counter() - started
    return cold, warm, loaded, len(first.findings)


def _row(name: str, values: list[float], unit: str) -> str:
    return f"{name:12s} median {statistics.median(values):7.2f} {unit}  (min {min(values):.2f}, max {max(values):.2f})"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=sorted(USER), default="gpt2")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="tcl_follow_") as scratch:
        path = os.path.join(scratch, "train.py")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(USER[args.model])
        cold, warm, rss, summary = [], [], [], ""
        for i in range(args.repeats):
            wall, peak, summary = _cli(path, None)
            cold.append(wall)
            rss.append(peak)
            cache = os.path.join(scratch, f"cache{i}")
            _cli(path, cache)
            warm.append(_cli(path, cache)[0])
        editor = [_editor(path, USER[args.model]) for _ in range(args.repeats)]
        print(f"user file: torch.compile({args.model} model.generate); {summary}")
        print(_row("cli cold", cold, "s"))
        print(_row("cli peak", rss, "MiB"))
        print(_row("cli warm", warm, "s"))
        print(_row("editor 1st", [e[0] for e in editor], "s"))
        print(_row("editor edit", [e[1] for e in editor], "s"))
        print(f"installed files parsed: {editor[0][2]}; findings: {editor[0][3]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
