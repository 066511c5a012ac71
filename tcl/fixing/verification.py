"""`tcl fix --verify`: a rewrite tcl cannot prove safe is kept only when the compiler shows it works.

Safe fixes are proven statically (each fixer's docstring says for which cases) and are kept as
`fixed (proven)`. An unsafe fix is a *candidate*: the file's own examples (`tcl_examples()`, as
`tcl verify` and `tcl bench` read them) run in child processes, once on the file as written and
once on each candidate variant (all unsafe fixes together; when that fails, each one alone on top
of the safe fixes), every child loading its variant under the module's own dotted name, so the
package's relative imports resolve as in the real file. A variant is kept when, on every example:

- the eager outputs are identical to the original's (`torch.equal`, NaNs equal; the same seed
  before building the examples and before each call),
- the default-mode compiled outputs (backend eager) match the variant's eager outputs (allclose,
  rtol 1e-4, atol 1e-5),
- the default-mode graph breaks are fewer, and none of them has a GB id the original lacks --
  or, for a fix of a recompile (a setting that removes TCL501's), the breaks are no more and
  the *persistent* recompiles are fewer: graphs compiled over calls 3-6 of six calls with the
  same inputs, after the first compile and the one automatic-dynamic recompile,
- the second of two calls with the same inputs compiles no more graphs than the original's (no
  new recompile; a variant that compiles a frame the original ran eagerly compiles on the
  first call, which is the point).

Each run (eager, compiled, the probe, the recompile counts) calls a fresh copy of an nn.Module
example, as it was built: a module that keeps state between calls (a counter, a cache) would
otherwise give the compiled run other inputs than the eager one.

Otherwise the candidate is not applied and the report says why. A file without examples cannot
be verified: its unsafe fixes stay pending. Needs torch (imported only in the children and to
compare their outputs); never runs during `tcl fix` without --verify.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field

from ..safe_files import open_new, private_temp_dir, remove_tree

CHILD_TIMEOUT = int(os.environ.get("TCL_FIX_VERIFY_TIMEOUT", "600"))  # seconds per variant
SEED = 0


@dataclass
class Verdict:
    """The outcome of one variant against the original: `ok`, or why not."""

    ok: bool
    why: str = ""
    examples: int = 0
    breaks_before: int = 0
    breaks_after: int = 0
    recompiles_before: int = 0  # persistent recompiles (calls 3-6 of six with the same inputs)
    recompiles_after: int = 0


@dataclass
class Baseline:
    """The original file's run, shared by every variant's comparison."""

    data: dict | None
    error: str | None = None
    results: dict = field(default_factory=dict)


def has_examples(text: str) -> bool:
    return "def tcl_examples" in text


def module_location(path: str) -> tuple[str, str]:
    """(sys.path root, dotted module name) of a .py file inside packages, as tcl verify loads it."""
    from ..verify.common import package_root

    return package_root(os.path.abspath(path))


def run_variant(path: str, text: str, tmp: str, label: str) -> tuple[dict | None, str | None]:
    """Run the examples of `text` (the file at `path`, or a rewrite of it) in a child process."""
    root, dotted = module_location(path)
    source = os.path.join(tmp, f"{label}.py")
    with open_new(source, "wb") as handle:
        handle.write(text.encode("utf-8"))
    out = os.path.join(tmp, f"{label}.pt")
    command = [sys.executable, "-m", "tcl.fixing.verification", "--child", source, dotted, root, out]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=CHILD_TIMEOUT)
    except subprocess.TimeoutExpired:
        return None, f"the examples timed out after {CHILD_TIMEOUT} s"
    if done.returncode != 0 or not os.path.exists(out):
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return None, f"the examples failed: {tail[:200]}"
    import torch

    return torch.load(out, weights_only=False), None


def compare(before: dict, after: dict) -> Verdict:
    """Whether `after` (a variant's run) keeps eager results and removes breaks; see the module
    docstring for the four conditions."""
    import torch

    examples_before, examples_after = before["examples"], after["examples"]
    if len(examples_before) != len(examples_after):
        return Verdict(False, "the rewritten file gives a different number of examples")
    # An example that raises as written says nothing about a fix: it is left out (and a variant
    # must not make another one raise).
    pairs = [(n, a, b) for n, (a, b) in enumerate(zip(examples_before, examples_after)) if not a.get("error")]
    if not pairs:
        return Verdict(False, "every example raises in the file as written: nothing to verify on")
    total_before = sum(len(a["breaks"]) for _, a, _ in pairs)
    total_after = sum(len(b.get("breaks", ())) for _, _, b in pairs)
    verdict = Verdict(False, examples=len(pairs), breaks_before=total_before, breaks_after=total_after,
                      recompiles_before=sum(a.get("persistent", 0) for _, a, _ in pairs),
                      recompiles_after=sum(b.get("persistent", 0) for _, _, b in pairs))
    for number, a, b in pairs:
        name = f"example {number} ({a.get('name', '?')})"
        if b.get("error"):
            verdict.why = f"{name} raises after the rewrite: {b['error']}"
            return verdict
        if not _identical(a["eager"], b["eager"]):
            verdict.why = f"{name}: eager outputs differ from the original's"
            return verdict
        if not _close(b["eager"], b["compiled"], torch):
            verdict.why = f"{name}: compiled outputs differ from eager"
            return verdict
        new_ids = set(Counter(b["breaks"]) - Counter(a["breaks"]))
        if new_ids:
            verdict.why = f"{name}: a new graph break ({', '.join(sorted(i or '?' for i in new_ids))})"
            return verdict
        if b["recompiles"] > a["recompiles"]:
            verdict.why = (f"{name}: compiles {b['recompiles']} graphs again on a second call with the same "
                           f"inputs, the original {a['recompiles']}")
            return verdict
    fewer_recompiles = total_after <= total_before and verdict.recompiles_after < verdict.recompiles_before
    if total_after >= total_before and not fewer_recompiles:
        verdict.why = f"the graph breaks did not go down ({total_before} -> {total_after})"
        if verdict.recompiles_before:
            verdict.why += (f", nor the recompiles ({verdict.recompiles_before} -> "
                            f"{verdict.recompiles_after})")
        return verdict
    verdict.ok = True
    return verdict


def _identical(a, b) -> bool:
    import torch

    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.shape == b.shape and a.dtype == b.dtype and torch.equal(
            torch.nan_to_num(a, nan=0.0) if a.is_floating_point() else a,
            torch.nan_to_num(b, nan=0.0) if b.is_floating_point() else b,
        ) and bool((a.isnan() == b.isnan()).all() if a.is_floating_point() else True)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_identical(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_identical(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _close(a, b, torch) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.shape == b.shape and torch.allclose(a.double(), b.double(), rtol=1e-4, atol=1e-5, equal_nan=True)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_close(x, y, torch) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k], torch) for k in a)
    return type(a) is type(b) and a == b


class Session:
    """One `tcl fix --verify` run: a private temp directory and the originals' baselines."""

    def __init__(self) -> None:
        self.tmp = private_temp_dir("tcl_fix_verify_")
        self.count = 0
        self.baselines: dict[str, Baseline] = {}

    def close(self) -> None:
        remove_tree(self.tmp)

    def baseline(self, path: str, original: str) -> Baseline:
        """The file as written, run once per file."""
        baseline = self.baselines.get(path)
        if baseline is None:
            self.count += 1
            data, error = run_variant(path, original, self.tmp, f"original{self.count}")
            baseline = self.baselines[path] = Baseline(data, error)
        return baseline

    def observed_breaks(self, path: str, original: str) -> list[str]:
        """The GB ids of the graph breaks the file's examples hit as written (one per break;
        examples that raise left out)."""
        data = self.baseline(path, original).data
        if data is None:
            return []
        return [gb for row in data["examples"] if not row.get("error") for gb in row.get("breaks", ()) if gb]

    def observed_break_sites(self, path: str, original: str) -> list[tuple]:
        """(GB id, file, line) of each break the file's examples hit as written."""
        data = self.baseline(path, original).data
        if data is None:
            return []
        return [tuple(site) for row in data["examples"] if not row.get("error") for site in row.get("break_sites", ())]

    def verify(self, path: str, original: str, variant: str) -> Verdict:
        baseline = self.baseline(path, original)
        if baseline.data is None:
            return Verdict(False, f"the original {baseline.error}")
        kept = baseline.results.get(variant)
        if kept is not None:
            return kept
        self.count += 1
        data, error = run_variant(path, variant, self.tmp, f"variant{self.count}")
        verdict = Verdict(False, f"the rewritten file: {error}") if data is None else compare(baseline.data, data)
        baseline.results[variant] = verdict
        return verdict


# --------------------------------------------------------------------------- the child


def _detach(value):
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().cpu().clone()
    if isinstance(value, (list, tuple)):
        return type(value)(_detach(v) for v in value) if not hasattr(value, "_fields") else tuple(
            _detach(v) for v in value)
    if isinstance(value, dict):
        return {k: _detach(v) for k, v in value.items()}
    if hasattr(value, "to_tuple"):  # transformers' ModelOutput
        return _detach(value.to_tuple())
    return value if isinstance(value, (int, float, bool, str, type(None))) else repr(type(value))


def _graphs_per_call(target, args, kwargs, calls: int) -> list[int]:
    """Graphs compiled during each of `calls` calls with the same inputs (a counting backend)."""
    import torch

    per_call = [0] * calls
    call = 0

    def counting_backend(graph_module, example_inputs):
        per_call[call] += 1
        return graph_module.forward

    torch._dynamo.reset()
    compiled = torch.compile(lambda *a: target(*a, **kwargs), backend=counting_backend)
    for call in range(calls):
        compiled(*args)
    torch._dynamo.reset()
    return per_call


def _fresh(target):
    """A copy of an nn.Module as built (its state: counters, caches), else the target itself."""
    import copy

    import torch

    if isinstance(target, torch.nn.Module):
        try:
            return copy.deepcopy(target)
        except Exception:  # a module that cannot be copied runs as it is
            return target
    return target


def child(path: str, dotted: str, root: str) -> dict:
    import importlib.util

    import torch

    from ..oracle import probe, unwrap_compiled

    if root not in sys.path:
        sys.path.insert(0, root)
    if "." in dotted:
        importlib.import_module(dotted.rsplit(".", 1)[0])  # the package, for relative imports
    spec = importlib.util.spec_from_file_location(dotted, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[dotted] = module
    spec.loader.exec_module(module)
    torch.manual_seed(SEED)
    examples = list(module.tcl_examples())
    # The Dynamo settings the file turns on apply to its compiled runs wherever the line sits (a
    # setting inserted before a compile call inside main() runs before that compile in the real
    # program, but not when the examples are compiled here).
    settings = settings_of(path)
    from ..dynamo_settings import config_values

    with torch._dynamo.config.patch(**config_values(settings)):
        return {"examples": [_run_example(example, torch, probe, unwrap_compiled) for example in examples],
                "settings": sorted(settings)}


def settings_of(path: str) -> frozenset[str]:
    import ast

    from ..dynamo_settings import settings_in_tree

    with open(path, encoding="utf-8") as handle:
        return settings_in_tree(ast.parse(handle.read()))


def _run_example(example, torch, probe, unwrap_compiled) -> dict:
    """One example of tcl_examples(): eager and compiled outputs, breaks, recompiles."""
    target, args, kwargs = unwrap_compiled(example[0]), tuple(example[1]), dict(example[2] or {})
    name = getattr(target, "__name__", type(target).__name__)
    row = {"name": name}
    built = _fresh(target)  # as tcl_examples() built it: each run below starts from this state
    try:
        with torch.no_grad():
            torch.manual_seed(SEED)
            row["eager"] = _detach(_fresh(built)(*args, **kwargs))
            torch._dynamo.reset()
            torch.manual_seed(SEED)
            row["compiled"] = _detach(torch.compile(_fresh(built), backend="eager")(*args, **kwargs))
            torch._dynamo.reset()
            result = probe(built, args, kwargs, modes=("default",), fresh_target=True)  # it copies
            row["breaks"] = [b.gb for b in result.breaks]
            row["break_sites"] = [(b.gb, b.path, b.line) for b in result.breaks]
            graphs = _graphs_per_call(_fresh(built), args, kwargs, 6)
            row["recompiles"] = graphs[1]
            row["persistent"] = sum(graphs[2:])
    except Exception as exc:  # the user's code: any failure is a result, reported by the parent
        row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]
    return row


if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "--child":
    import contextlib

    import torch

    _, _, source_path, module_name, import_root, out_path = sys.argv
    with contextlib.redirect_stdout(sys.stderr):  # the user's prints stay out of the result
        data = child(source_path, module_name, import_root)
    torch.save(data, out_path)
    json.dump({"examples": len(data["examples"])}, sys.stdout)
