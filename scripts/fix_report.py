#!/usr/bin/env python
"""`tcl fix` on real model code: the bundled fixtures, before and after.

Copies fixtures/*.py to a temporary directory, runs `tcl fix --apply` there (in a second copy
`tcl fix --apply --unsafe-fixes`, in a third `tcl fix --apply --verify`: unsafe fixes kept only
where the compiler confirms them), then for every example of every file's `tcl_examples()`:

* runs the original and the fixed target eagerly on the same inputs (same seed) and compares
  the outputs: same structure, dtypes and shapes, torch.allclose(equal_nan=True);
* counts runtime graph breaks with tcl.oracle.probe (torch.compile, backend "eager", CPU,
  default mode) before and after;
* compiles the fixed target (backend "eager") and compares its output with its own eager
  output: a fix that keeps eager results but changes what the compiled code computes (a Dynamo
  setting can) shows here ("no, as written too" where the original already differed).

Usage: python scripts/fix_report.py [FIXTURE_DIR]        (exit 1 if any output differs)

A fixed file may turn a Dynamo setting on when imported: every file is measured with Dynamo's
settings restored afterwards.
"""

from __future__ import annotations

import contextlib
import copy
import importlib.util
import io
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
import warnings

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from tcl.config import Config  # noqa: E402
from tcl.engine import Analyzer  # noqa: E402
from tcl.oracle import probe, unwrap_compiled  # noqa: E402

SKIP = {"check_truth.py"}


def load(path: str):
    name = f"_tcl_fix_report_{uuid.uuid4().hex}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def own_dynamo_config():
    """Dynamo's settings as they were, afterwards: a fixed file may turn one on when it is
    imported (`torch._dynamo.config.capture_scalar_outputs = True`, tcl/fixes/settings.py), and
    that must not carry over to the next file or to an original measured after it."""
    saved = torch._dynamo.config.save_config()
    try:
        yield
    finally:
        with warnings.catch_warnings():  # restoring touches deprecated keys, which warn
            warnings.simplefilter("ignore")
            torch._dynamo.config.load_config(saved)


@contextlib.contextmanager
def quiet():
    """Examples print, log, warn, and call input()/breakpoint(): feed them "c", hide the noise."""
    stdin = sys.stdin
    sys.stdin = io.StringIO("c\n" * 10000)
    try:
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        sys.stdin = stdin


def examples(module):
    with quiet():
        return list(module.tcl_examples())


def run_eager(target, args, kwargs):
    torch.manual_seed(0)
    args, kwargs = copy.deepcopy(args), copy.deepcopy(kwargs)
    with quiet():
        try:
            return "ok", target(*args, **kwargs)
        except Exception as exc:
            return "raised", type(exc).__name__


def leaves(value, path="out") -> list[tuple[str, object]]:
    """Flatten an output into (path, leaf) pairs. Tuples compare by shape, not by class: a
    NamedTuple class defined inside forward() is a new class object in every module copy."""
    if isinstance(value, (tuple, list)):
        out = [(f"{path}:{type(value).__name__}[{len(value)}]", None)]
        for i, item in enumerate(value):
            out.extend(leaves(item, f"{path}[{i}]"))
        return out
    if isinstance(value, dict):
        out = [(f"{path}:dict{sorted(map(str, value))}", None)]
        for key in value:
            out.extend(leaves(value[key], f"{path}[{key!r}]"))
        return out
    return [(path, value)]


def same(a, b) -> bool:
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            return False
        if a.dtype != b.dtype or a.shape != b.shape:
            return False
        if a.dtype.is_floating_point or a.dtype.is_complex:
            return torch.allclose(a, b, equal_nan=True)
        return torch.equal(a, b)
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    return a == b


def compare(first, again, fixed) -> tuple[bool, int, str]:
    """(identical, nondeterministic leaves ignored, why). `again` is a second run of the
    original: a leaf that differs between two runs of the original (a wall-clock time) says
    nothing about the fix and is left out, and counted."""
    if first[0] != fixed[0]:
        return False, 0, f"{first[0]} vs {fixed[0]}"
    if first[0] == "raised":
        return first[1] == fixed[1], 0, f"{first[1]} vs {fixed[1]}"
    a, b, c = leaves(first[1]), leaves(again[1]), leaves(fixed[1])
    if [p for p, _ in a] != [p for p, _ in c]:
        return False, 0, "different output structure"
    ignored = 0
    for (path, x), (_, y), (_, z) in zip(a, b, c):
        if not same(x, y):
            ignored += 1
            continue
        if not same(x, z):
            return False, ignored, f"{path} differs"
    return True, ignored, ""


def count_breaks(path: str) -> int:
    with own_dynamo_config():
        module = load(path)
        total = 0
        for target, args, kwargs in examples(module):
            with quiet():
                result = probe(unwrap_compiled(target), args, kwargs or {}, user_files={path}, modes=("default",))
            total += len(result.breaks)
    return total


def compare_outputs(before_path: str, after_path: str) -> tuple[bool, int, str]:
    with own_dynamo_config():
        return _compare_outputs(before_path, after_path)


def _compare_outputs(before_path: str, after_path: str) -> tuple[bool, int, str]:
    before, again, after = (examples(load(p)) for p in (before_path, before_path, after_path))
    if len(before) != len(after):
        return False, 0, "different number of examples"
    ignored = 0
    for i, ((t1, a1, k1), (t2, a2, k2), (t3, a3, k3)) in enumerate(zip(before, again, after)):
        results = [run_eager(unwrap_compiled(t), a, k or {}) for t, a, k in ((t1, a1, k1), (t2, a2, k2), (t3, a3, k3))]
        identical, skipped, why = compare(*results)
        ignored += skipped
        if not identical:
            return False, ignored, f"example {i}: {why}"
    return True, ignored, ""


def run_compiled(target, args, kwargs):
    """`run_eager`, but through torch.compile (backend "eager", default mode, a fresh compile)."""
    torch._dynamo.reset()
    try:
        return run_eager(torch.compile(target, backend="eager"), args, kwargs)
    finally:
        torch._dynamo.reset()


def compiled_matches(path: str) -> tuple[bool, str]:
    """Whether every example's compiled output matches its eager output, in the file at `path`
    (under whatever Dynamo settings the file turns on when imported). A value that differs
    between two eager runs is left out, as for the eager comparison."""
    with own_dynamo_config():
        module = load(path)
        for i, (target, args, kwargs) in enumerate(examples(module)):
            target = unwrap_compiled(target)
            first, again = run_eager(target, args, kwargs or {}), run_eager(target, args, kwargs or {})
            identical, _, why = compare(first, again, run_compiled(target, args, kwargs or {}))
            if not identical:
                return False, f"example {i}: {why}"
    return True, ""


def findings(paths: list[str]) -> dict[str, int]:
    analyzer = Analyzer(Config())
    return {os.path.basename(p): len(analyzer.check_source(open(p, encoding="utf-8").read(), p).findings) for p in paths}


def run_tcl_fix(directory: str, flags: list[str]) -> str:
    command = [sys.executable, "-m", "tcl", "fix", "--apply", "--no-config", *flags, directory]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    if done.returncode not in (0, 1):
        raise SystemExit(f"tcl fix failed ({done.returncode}):\n{done.stderr}")
    return done.stderr.strip().splitlines()[-1]


def table(title: str, rows: list[tuple]) -> str:
    header = ("file", "findings", "fixed", "breaks before", "breaks after", "outputs identical", "compiled = eager")
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]

    def line(row) -> str:
        cells = zip(row, widths)
        return "  ".join(str(v).ljust(w) if i == 0 else str(v).rjust(w) for i, (v, w) in enumerate(cells))

    out = [title, line(header), "  ".join("-" * w for w in widths)]
    out.extend(line(r) for r in rows)
    return "\n".join(out)


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(description="tcl fix on the bundled fixtures (or FIXTURE_DIR): "
                                                 "findings fixed, runtime breaks before and after, outputs")
    parser.add_argument("fixture_dir", nargs="?", default=os.path.join(ROOT, "fixtures"))
    source_dir = parser.parse_args(argv).fixture_dir
    if not os.path.isdir(source_dir):
        print(f"fix_report.py: {source_dir}: not a directory", file=sys.stderr)
        return 2
    files = sorted(f for f in os.listdir(source_dir) if f.endswith(".py") and f not in SKIP)
    torch._logging.set_logs()  # quiet by default
    status = 0
    with tempfile.TemporaryDirectory(prefix="tcl_fix_report_") as tmp:
        original = os.path.join(tmp, "original")
        os.makedirs(original)
        for name in files:
            shutil.copy(os.path.join(source_dir, name), original)
        original_paths = [os.path.join(original, f) for f in files]
        before_findings = findings(original_paths)
        breaks_before = {f: count_breaks(os.path.join(original, f)) for f in files}
        compiled_before = {f: compiled_matches(os.path.join(original, f))[0] for f in files}
        for flags in ([], ["--unsafe-fixes"], ["--verify"]):
            label = " ".join(["tcl fix --apply", *flags])
            fixed_dir = os.path.join(tmp, flags[0].strip("-") if flags else "safe")
            shutil.copytree(original, fixed_dir)
            summary = run_tcl_fix(fixed_dir, flags)
            fixed_paths = [os.path.join(fixed_dir, f) for f in files]
            after_findings = findings(fixed_paths)
            rows = []
            totals = [0, 0, 0, 0]
            variant_ok = compiled_all = True
            for name in files:
                after_path = os.path.join(fixed_dir, name)
                identical, ignored, why = compare_outputs(os.path.join(original, name), after_path)
                if not identical:
                    status, variant_ok = 1, False
                verdict = "yes" if identical else f"NO ({why})"
                if identical and ignored:
                    verdict = f"yes ({ignored} nondeterministic value{'s' * (ignored > 1)} ignored)"
                breaks_after = count_breaks(after_path)
                compiled_ok, compiled_why = compiled_matches(after_path)
                if not compiled_ok and compiled_before[name]:
                    status, compiled_all = 1, False
                compiled = "yes" if compiled_ok else (f"NO ({compiled_why})" if compiled_before[name]
                                                     else "no, as written too")
                fixed = before_findings[name] - after_findings[name]
                rows.append((name, before_findings[name], fixed, breaks_before[name], breaks_after, verdict,
                             compiled))
                for i, v in enumerate((before_findings[name], fixed, breaks_before[name], breaks_after)):
                    totals[i] += v
            rows.append(("total", *totals, "yes" if variant_ok else "NO", "yes" if compiled_all else "NO"))
            print(table(f"{label}   [{summary}]", rows))
            print()
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
