#!/usr/bin/env python
"""`tcl fix` on an installed library's real model code: findings fixed, runtime graph breaks
before and after, and whether the models' outputs stayed identical.

    python scripts/fix_library.py [--models all|default|NAME,...] [--libraries transformers,timm,torchvision]
                                  [--json docs/results/fix_library.json] [--keep DIR] [--timeout 300]
                                  [--results-dir EVAL_WORKER_OUTPUTS]
    python scripts/fix_library.py --report RESULT.json [--results-dir EVAL_WORKER_OUTPUTS]

1. Discovery (one child process, the original libraries): every model of eval/models.py is
   built and run once eagerly under sys.setprofile, which records the library functions
   (file, co_qualname) its forward calls. The files to fix are the files of those functions,
   plus every transformers modeling_*.py the models import.
2. Each library package directory is copied (copytree) to TMP/safe/<lib> and TMP/unsafe/<lib>,
   so that with TMP/<variant> first on PYTHONPATH the copy is what `import transformers` loads
   and every relative import resolves inside the copy. site-packages is only read.
3. `python -m tcl check --format json` on the copied files, then `python -m tcl fix --apply`
   (TMP/safe) or `tcl fix --apply --unsafe-fixes` (TMP/unsafe) on the same files, then check
   again. Findings are counted per rule, file and function; fixed = before - after. Every
   rewritten file must parse; a function counts as changed when its AST (positions left out)
   changed.
4. Every model that runs a changed file runs in a child process per variant (the original
   site-packages, then each patched copy with TMP/<variant> first on PYTHONPATH): built with
   the same seed, run eagerly twice on the same inputs (torch, numpy and random are seeded
   before each run, so dropout and wav2vec2's time masking draw the same numbers; a value
   that differs between the two original runs is nondeterministic and left out of the
   comparison), then compiled in default mode with tcl.oracle.probe (backend "eager", CPU) and
   every logged graph break counted. A model whose files are the same in the unsafe copy as in
   the safe one is not run twice.
5. Tables per variant; the whole result, diffs included, as JSON (default
   docs/results/fix_library.json).
6. Runtime break events per family (GB id): before, after each variant, and after the variant
   `tcl fix --verify` would keep per model (the unsafe copy where its outputs are identical and
   its breaks go down with no new GB id; verified_variant). A run that failed on either side
   removes nothing. With --results-dir (the eval worker outputs of the same models), the breaks
   of models no fix touched count too, so the last line gives the share of the whole part's
   break events each variant removes (issue 17's measure).

Exit status 1 if a rewritten file does not parse or a safe fix changed a model's outputs.
"""

from __future__ import annotations

import argparse
import ast
import collections
import contextlib
import copy
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
EVAL = os.path.join(ROOT, "eval")
SEED = 0
VARIANTS = (("safe", ["--apply"]), ("unsafe", ["--apply", "--unsafe-fixes"]))
DEFAULT_LIBRARIES = ("transformers", "timm", "torchvision")  # eval/worker.py's LIBRARIES


def _eval_imports():
    for path in (ROOT, EVAL):
        if path not in sys.path:
            sys.path.insert(0, path)


# -------------------------------------------------------------------------------------------
# child processes: they import the libraries; the parent never does


def child_discover(names: list[str], libraries: list[str], out_path: str) -> int:
    _eval_imports()
    import tv_stub

    tv_stub.install()
    import torch

    torch.set_num_threads(1)
    from models import MODELS
    from worker import library_roots

    roots = {k: v for library in libraries for k, v in library_roots(library).items() if k in libraries}
    prefixes = tuple(root + os.sep for root in roots.values())
    result = {"roots": roots, "models": {}}
    for name in names:
        library, mode, builder = MODELS[name]
        seen: set[tuple[str, str]] = set()

        def profile(frame, event, arg, seen=seen):
            # Module bodies run once per process, for whichever model imports first: only
            # function calls say which code a model's forward depends on.
            if event == "call" and frame.f_code.co_name != "<module>":
                path = frame.f_code.co_filename
                if path.startswith(prefixes):
                    seen.add((path, frame.f_code.co_qualname))

        entry = {"library": library, "mode": mode}
        try:
            seed()
            model, args, kwargs = builder()
            with _quiet():
                sys.setprofile(profile)
                try:
                    model(*args, **kwargs)
                finally:
                    sys.setprofile(None)
        except Exception as exc:
            entry["error"] = f"{type(exc).__name__}: {exc}"[:300]
        functions: dict[str, set[str]] = {}
        for path, qualname in seen:
            functions.setdefault(_rel(os.path.realpath(path), roots), set()).add(source_qualname(qualname))
        entry["functions"] = {path: sorted(names) for path, names in sorted(functions.items())}
        result["models"][name] = entry
    modeling = set()
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None) or ""
        if path.startswith(prefixes) and os.path.basename(path).startswith("modeling_"):
            modeling.add(_rel(os.path.realpath(path), roots))
    result["modeling_imported"] = sorted(modeling)
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(result, f)
    return 0


def child_run(name: str, out_path: str) -> int:
    _eval_imports()
    import tv_stub

    tv_stub.install()
    import torch

    torch.set_num_threads(1)
    from models import MODELS
    from worker import library_files, library_roots

    from tcl.oracle import probe

    started = time.time()
    library, mode, builder = MODELS[name]
    roots = library_roots(library)  # the model's library (the three development ones together)
    result = {"name": name, "roots": roots}
    try:
        seed()
        model, args, kwargs = builder()
    except Exception as exc:
        result["build_error"] = f"{type(exc).__name__}: {exc}"[:300]
        torch.save(result, out_path)
        return 0
    result["runs"] = [_eager(model, args, kwargs) for _ in range(2)]
    seed()
    with _quiet():
        found = probe(model, args, kwargs, user_files=library_files(roots), backend="eager",
                      modes=("default",), fresh_target=True)
    result["breaks"] = [{"path": _rel(os.path.realpath(b.path), roots), "line": b.line, "gb": b.gb,
                         "reason": b.reason} for b in found.breaks]
    result["compile_error"] = found.default_error
    result["seconds"] = round(time.time() - started, 1)
    torch.save(result, out_path)
    return 0


def seed() -> None:
    """The same random state before every build and run: torch (dropout), numpy (wav2vec2's
    _compute_mask_indices masks time steps with np.random) and Python's random."""
    import random

    import torch

    torch.manual_seed(SEED)
    random.seed(SEED)
    try:
        import numpy
    except ImportError:
        return
    numpy.random.seed(SEED)


@contextlib.contextmanager
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _eager(model, args, kwargs):
    """One eager run on a fresh copy of the model and inputs: ("ok", leaves) or ("raised", why)."""
    model = copy.deepcopy(model)
    args, kwargs = copy.deepcopy(args), copy.deepcopy(kwargs)
    seed()
    try:
        with _quiet():
            out = model(*args, **kwargs)
    except Exception as exc:
        return "raised", f"{type(exc).__name__}: {exc}"[:300]
    return "ok", _leaves(out)


PRIMITIVES = (type(None), bool, int, float, complex, str, bytes)


def _leaves(value, path="out", depth=0, seen=None) -> list[tuple[str, object]]:
    """Flatten an output into (path, leaf): tensors, Python primitives, and the structure
    (container types and lengths, dict keys) as leaves of their own. ModelOutputs are dicts;
    caches and other objects are walked through their attributes."""
    import torch

    seen = set() if seen is None else seen
    if isinstance(value, torch.Tensor):
        return [(path, value.detach().cpu().clone())]
    if isinstance(value, PRIMITIVES):
        return [(path, value)]
    if depth > 8 or id(value) in seen or isinstance(value, torch.nn.Module):
        return [(path, f"<{type(value).__name__}>")]
    seen.add(id(value))
    if isinstance(value, (tuple, list)):
        out = [(f"{path}:{type(value).__name__}[{len(value)}]", None)]
        for i, item in enumerate(value):
            out.extend(_leaves(item, f"{path}[{i}]", depth + 1, seen))
        return out
    if isinstance(value, dict):
        out = [(f"{path}:{type(value).__name__}{sorted(map(str, value))}", None)]
        for key in value:
            out.extend(_leaves(value[key], f"{path}[{key!r}]", depth + 1, seen))
        return out
    attributes = getattr(value, "__dict__", None)
    if isinstance(attributes, dict):
        fields = {k: v for k, v in attributes.items() if not k.startswith("_") and not callable(v)}
        out = [(f"{path}:{type(value).__name__}{sorted(fields)}", None)]
        for key in sorted(fields):
            out.extend(_leaves(fields[key], f"{path}.{key}", depth + 1, seen))
        return out
    return [(path, f"<{type(value).__name__}>")]


def source_qualname(qualname: str) -> str:
    """The def a code object belongs to: `A.f.<locals>.<genexpr>` -> `A.f` (comprehensions and
    lambdas have no def of their own), `f.<locals>.g` stays."""
    parts = qualname.split(".")
    for i, part in enumerate(parts):
        if part.startswith("<") and part != "<locals>":
            parts = parts[:i]
            break
    while parts and parts[-1] == "<locals>":
        parts.pop()
    return ".".join(parts) or "<module>"


def functions_of(path: str) -> dict[str, list[tuple[int, int, str]]]:
    """qualname (as co_qualname spells it) -> [(first line, last line, ast dump without
    positions)], one per def: a property's getter and setter share one qualname."""
    with open(path, "rb") as f:
        tree = ast.parse(f.read())
    out: dict[str, list[tuple[int, int, str]]] = {}

    def visit(body, prefix):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                start = min([d.lineno for d in node.decorator_list] + [node.lineno])
                out.setdefault(prefix + node.name, []).append((start, node.end_lineno, ast.dump(node)))
                visit(node.body, prefix + node.name + ".<locals>.")
            elif isinstance(node, ast.ClassDef):
                visit(node.body, prefix + node.name + ".")
            else:
                visit([c for c in ast.iter_child_nodes(node) if isinstance(c, ast.stmt)], prefix)

    visit(tree.body, "")
    return out


def changed_functions(old: dict, new: dict) -> set[str]:
    return {name for name in set(old) | set(new)
            if [d for *_, d in old.get(name, [])] != [d for *_, d in new.get(name, [])]}


def function_at(functions: dict, line: int) -> str:
    best, size = "<module>", None
    for name, spans in functions.items():
        for start, end, _ in spans:
            if start <= line <= end and (size is None or end - start < size):
                best, size = name, end - start
    return best


def _rel(path: str, roots: dict[str, str]) -> str:
    for root in roots.values():
        if path.startswith(root + os.sep):
            return os.path.relpath(path, os.path.dirname(root))
    return path


# -------------------------------------------------------------------------------------------
# comparing outputs (parent)


def _same(a, b) -> bool:
    from fix_report import same  # the comparison scripts/fix_report.py makes (this folder is on sys.path)

    return same(a, b)


def _exact(a, b) -> bool:
    import torch

    if isinstance(a, torch.Tensor):
        if a.dtype.is_floating_point or a.dtype.is_complex:
            return bool(((a == b) | (a.isnan() & b.isnan())).all())
        return torch.equal(a, b)
    return _same(a, b)


def _max_diff(a, b) -> float:
    import torch

    if not (isinstance(a, torch.Tensor) and (a.dtype.is_floating_point or a.dtype.is_complex)) or a.numel() == 0:
        return 0.0
    diff = (a.to(torch.complex128 if a.is_complex() else torch.float64)
            - b.to(torch.complex128 if b.is_complex() else torch.float64)).abs()
    diff = diff.masked_fill(a.isnan() & b.isnan(), 0)
    same_inf = torch.isinf(a) & (a == b)
    return float(diff.masked_fill(same_inf, 0).max())


def compare(first, again, patched) -> dict:
    """first/again: the original's two runs; patched: the variant's first run."""
    if first[0] != patched[0]:
        why = patched[1] if patched[0] == "raised" else first[1]
        return {"identical": False, "why": f"patched copy raised {why.splitlines()[0]}"
                if patched[0] == "raised" else f"only the original raised {why.splitlines()[0]}"}
    if first[0] == "raised":
        # Two crashes prove nothing about the fix: a crash on either side is a failure.
        return {"identical": False, "why": f"both raised {first[1].splitlines()[0]} / {patched[1].splitlines()[0]}"}
    a, b, c = first[1], again[1], patched[1]
    if [p for p, _ in a] != [p for p, _ in c]:
        return {"identical": False, "why": "different output structure"}
    import torch

    tensors = exact = ignored = 0
    worst = 0.0
    differing = []
    for (path, x), (_, y), (_, z) in zip(a, b, c):
        if x is None and z is None:
            continue  # a structure entry: its path already matched
        if not _same(x, y):
            ignored += 1  # differs between two runs of the original: says nothing about the fix
            continue
        if isinstance(x, torch.Tensor):
            tensors += 1
            if _same(x, z):
                exact += _exact(x, z)
                worst = max(worst, _max_diff(x, z))
                continue
        elif _same(x, z):
            continue
        differing.append(path)
    out = {"identical": not differing, "tensors": tensors, "exact": exact, "max_abs_diff": worst,
           "nondeterministic_ignored": ignored}
    if differing:
        out["why"] = f"{len(differing)} leaves differ, first {differing[0]}"
    return out


# -------------------------------------------------------------------------------------------
# tcl on the copies (parent)


def tcl(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tcl", *args], capture_output=True, text=True, cwd=ROOT)


def check(files: list[str], jobs: int) -> list[dict]:
    done = tcl(["check", "--no-config", "--no-cache", "--format", "json", "-j", str(jobs), *files])
    if done.returncode not in (0, 1):
        raise SystemExit(f"tcl check failed ({done.returncode}):\n{done.stderr[-3000:]}")
    data = json.loads(done.stdout)
    if data["errors"]:
        raise SystemExit(f"tcl check reported errors: {data['errors'][:5]}")
    return data["findings"]


PENDING = re.compile(r"^# (.+?): not applied \((unsafe|suggestion)[^)]*\): (TCL\d+) (\d+):(\d+) (.*)$")


def fix(files: list[str], flags: list[str]) -> dict:
    done = tcl(["fix", "--no-config", *flags, *files])
    lines = done.stderr.splitlines()
    summary = next((line for line in reversed(lines) if line.startswith("tcl fix:")), "")
    applied = re.search(r"fixed (\d+) finding", summary)
    pending = [{"path": m[1], "level": m[2], "code": m[3], "line": int(m[4]), "what": m[6]}
               for m in map(PENDING.match, lines) if m]
    problems = [line for line in lines if "fixer failed" in line or "internal error" in line
                or "invalid code" in line or line.endswith("changed on disk since read, skipped")]
    # What `tcl fix` itself still sees: the findings of each file's own analysis. `tcl check`
    # also reports, in a helper's file, findings reached only from another file's forward.
    seen = {(m[1], int(m[2]), m[3]) for m in map(REMAINING.match, done.stdout.splitlines()) if m}
    return {"returncode": done.returncode, "summary": summary, "applied": int(applied[1]) if applied else 0,
            "pending": pending, "problems": problems, "seen": seen}


REMAINING = re.compile(r"^(.+?):(\d+):\d+: (TCL\d+) ")


def parse_problem(path: str) -> str | None:
    with open(path, "rb") as f:
        data = f.read()
    try:
        compile(data, path, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def count(findings: list[dict], base: str) -> collections.Counter:
    """(file relative to the copy, function, rule) -> findings."""
    functions: dict[str, dict] = {}
    out = collections.Counter()
    for finding in findings:
        rel = os.path.relpath(finding["path"], base)
        if rel not in functions:
            functions[rel] = functions_of(finding["path"])
        out[(rel, function_at(functions[rel], finding["line"]), finding["code"])] += 1
    return out


def total(counts: collections.Counter, keep) -> int:
    return sum(n for key, n in counts.items() if keep(*key))


# -------------------------------------------------------------------------------------------
# driver


def child(argv: list[str], env: dict, log: str, timeout: int, script: str = __file__,
          python: str = sys.executable) -> str | None:
    """Run `script` (this one by default) with `argv` in `python`; None, or why it gave no result."""
    with open(log, "w", encoding="utf-8") as logf:
        try:
            done = subprocess.run([python, os.path.abspath(script), *argv], stdout=logf,
                                  stderr=subprocess.STDOUT, env=env, cwd=ROOT, timeout=timeout)
        except subprocess.TimeoutExpired:
            return f"timeout after {timeout}s"
    if done.returncode != 0:
        with open(log, encoding="utf-8", errors="replace") as f:
            return f"exit {done.returncode}: {f.read()[-800:]}"
    return None


def child_env(pythonpath: str | None) -> dict:
    env = dict(os.environ)
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    if pythonpath is None:
        env["PYTHONDONTWRITEBYTECODE"] = "1"  # importing the originals must not write into site-packages
        env.pop("PYTHONPATH", None)
    else:
        env["PYTHONPATH"] = pythonpath
    return env


def table(header: tuple, rows: list[tuple]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]

    def line(row) -> str:
        return "  ".join(str(v).ljust(w) if i in (0, len(row) - 1) else str(v).rjust(w)
                         for i, (v, w) in enumerate(zip(row, widths))).rstrip()

    return "\n".join([line(header), "  ".join("-" * w for w in widths), *map(line, rows)])


def verdict(cmp: dict | None) -> str:
    if cmp is None:
        return "-"
    if not cmp["identical"]:
        return f"NO ({cmp['why'][:120]})"
    if "tensors" not in cmp:
        return f"yes ({cmp['why']})"
    text = f"yes (max abs diff {cmp['max_abs_diff']:.1g}, exact {cmp['exact']}/{cmp['tensors']}"
    if cmp["nondeterministic_ignored"]:
        text += f", {cmp['nondeterministic_ignored']} nondeterministic ignored"
    return text + ")"


def versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": sys.version.split()[0]}
    for dist in ("torch", "transformers", "timm", "torchvision", "libcst"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            pass
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="all", help="all (default), default, or NAME,... of eval/models.py")
    parser.add_argument("--libraries", default=",".join(DEFAULT_LIBRARIES),
                        help="packages to copy and fix (default: transformers,timm,torchvision)")
    parser.add_argument("--json", default=os.path.join(ROOT, "docs", "results", "fix_library.json"),
                        help="where to write the result ('' for nowhere)")
    parser.add_argument("--keep", help="work in this (new) directory and keep it, instead of a temp dir")
    parser.add_argument("--timeout", type=int, default=300, help="seconds per model run (default 300)")
    parser.add_argument("--jobs", type=int, default=2, help="tcl check workers (default 2)")
    parser.add_argument("--report", metavar="JSON", help="print the summary table of a saved result and exit")
    parser.add_argument("--child-discover", nargs=2, metavar=("NAMES", "OUT"), help=argparse.SUPPRESS)
    parser.add_argument("--results-dir", metavar="DIR",
                        help="eval worker outputs of the same models (eval/run_eval.py --results-dir): the "
                             "per-family table then also counts the breaks of models no fix touched")
    parser.add_argument("--child-run", nargs=2, metavar=("NAME", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    libraries = [x.strip() for x in args.libraries.split(",") if x.strip()]
    if args.child_discover:
        return child_discover(args.child_discover[0].split(","), libraries, args.child_discover[1])
    if args.child_run:
        return child_run(*args.child_run)
    if args.report:
        with open(args.report, encoding="utf-8") as f:
            saved = json.load(f)
        print(summary_table(saved))
        print("\n" + family_table(saved, worker_breaks(args.results_dir, saved["models_checked"])
                                  if args.results_dir else None))
        return 0

    _eval_imports()
    from models import DEFAULT, MODELS  # models.py imports only torch

    if args.models == "all":
        names = list(MODELS)
    elif args.models == "default":
        names = list(DEFAULT)
    else:
        names = [n.strip() for n in args.models.split(",") if n.strip()]
        unknown = [n for n in names if n not in MODELS]
        if unknown:
            parser.error(f"unknown models: {', '.join(unknown)}")
    names = [n for n in names if MODELS[n][0] in libraries]

    started = time.time()
    if args.keep:
        os.makedirs(args.keep)
        tmp, cleanup = os.path.abspath(args.keep), None
    else:
        cleanup = tempfile.TemporaryDirectory(prefix="tcl_fix_library_")
        tmp = cleanup.name
    try:
        result = run(names, libraries, tmp, args)
    finally:
        if cleanup is not None:
            cleanup.cleanup()
    result["seconds"] = round(time.time() - started, 1)
    if args.json:  # first: a table that fails must not lose a run of half an hour
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
            f.write("\n")
    print("\n" + summary_table(result))
    print("\n" + family_table(result, worker_breaks(args.results_dir, names) if args.results_dir else None))
    print(f"\ntotal {result['seconds']}s")
    bad_parse = any(v["parse_errors"] for v in result["variants"].values())
    safe_changed_outputs = any(not m["safe"]["outputs"]["identical"]
                               for m in result["models"].values() if m.get("safe", {}).get("outputs"))
    return 1 if bad_parse or safe_changed_outputs else 0


def summary_table(result: dict) -> str:
    """Both variants side by side, for the models that run a function the fixes changed."""
    rows, rest = [], collections.Counter()
    for name, entry in result["models"].items():
        variants = [entry.get(v) for v, _ in VARIANTS]
        if not any(v and v["changed_functions_run"] for v in variants):
            rest["models"] += 1
            rest["identical"] += all(v["outputs"]["identical"] for v in variants if v)
            rest["same_breaks"] += all(v.get("breaks") == entry["original"].get("breaks") for v in variants if v)
            continue

        def cell(key, fmt=str):
            # a run that failed has no break count ("error" instead): shown as "-"
            return " / ".join("-" if v is None or key not in v else str(fmt(v[key])) for v in variants)

        rows.append((name, entry["mode"], cell("changed_functions_run", len), cell("findings_fixed"),
                     f"{entry['original'].get('breaks', '-')} -> {cell('breaks')}",
                     cell("outputs", lambda o: verdict(o).split(" (")[0]),
                     " / ".join("-" if v is None or "max_abs_diff" not in v["outputs"]
                                else f"{v['outputs']['max_abs_diff']:.1g}" for v in variants)))
    header = ("model", "mode", "changed functions run", "findings fixed", "runtime breaks",
              "outputs identical", "max abs diff")
    totals = result["totals"]
    out = ["models that run a function the fixes changed (each cell: --apply / --apply --unsafe-fixes)",
           table(header, rows),
           f"the other {rest['models']} models run a changed file but none of its changed functions: "
           f"outputs identical {rest['identical']}/{rest['models']}, runtime breaks unchanged "
           f"{rest['same_breaks']}/{rest['models']}"]
    for variant, flags in VARIANTS:
        t = totals[variant]
        out.append(f"tcl fix {' '.join(flags)}: {t['models']} models run a changed file; findings fixed in the "
                   f"functions they run {t['findings_fixed']}; runtime breaks {t['breaks_before']} -> "
                   f"{t['breaks_after']}; outputs identical {t['identical']}/{t['models']}")
    return "\n".join(out)


def _gb_types() -> dict:
    with open(os.path.join(EVAL, "gb_classes.json"), encoding="utf-8") as f:
        return {gb: e.get("gb_type", "") for gb, e in json.load(f)["entries"].items()}


def _families(sites: list[str]) -> collections.Counter:
    """GB id -> break events, from a run's `break_sites` ("path:line GBxxxx" per event)."""
    return collections.Counter(site.rsplit(" ", 1)[-1] for site in sites)


def verified_variant(entry: dict) -> str:
    """The variant `tcl fix --verify` would keep for this model, judged per model: the unsafe
    copy where it ran, its outputs are identical to the original's, its breaks went down from
    the safe copy's and it has no GB id the original lacks; else the safe copy (or the original
    where no file of the model changed). A proxy: --verify judges each fix, not each model."""
    original, safe, unsafe = entry["original"], entry.get("safe"), entry.get("unsafe")
    fallback = "safe" if safe else "original"
    if not unsafe or unsafe.get("compile_error") or not unsafe.get("outputs", {}).get("identical"):
        return fallback
    before = (safe or original).get("breaks")
    if unsafe.get("breaks") is None or before is None or unsafe["breaks"] >= before:
        return fallback
    if set(_families(unsafe.get("break_sites", []))) - set(_families(original.get("break_sites", []))):
        return fallback
    return "unsafe"


def worker_breaks(results_dir: str, names) -> dict:
    """model -> GB id counter of the eval worker's output (every logged break of the model's run)."""
    out = {}
    for name in names:
        path = os.path.join(results_dir, f"{name}.json")
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        out[name] = collections.Counter(b.get("gb") or "?" for b in data.get("breaks", []))
    return out


def family_table(result: dict, whole: dict | None = None) -> str:
    """Runtime break events per family (GB id) of the models that run a changed file: before,
    after each variant, and after the variant --verify would keep (verified_variant). A model
    whose run failed on either side counts its original breaks as not removed. With `whole`
    (worker_breaks of every model of the part), the models no fix touched add their breaks,
    unchanged, to a whole-part column."""
    names = _gb_types()
    before, after = collections.Counter(), {v: collections.Counter() for v in ("safe", "unsafe", "verified")}
    for entry in result["models"].values():
        original = _families(entry["original"].get("break_sites", []))
        before += original
        for variant in ("safe", "unsafe", "verified"):
            chosen = verified_variant(entry) if variant == "verified" else variant
            run = entry.get(chosen) or entry["original"]
            failed = run.get("compile_error") or run.get("error") or entry["original"].get("compile_error") or \
                (chosen != "original" and not run.get("outputs", {}).get("identical", True))
            after[variant] += original if failed else _families(run.get("break_sites", []))
    untouched = collections.Counter()
    if whole is not None:
        for name, counts in whole.items():
            if name not in result["models"]:
                untouched += counts
    families = sorted(set(before) | set(untouched), key=lambda gb: (-(before[gb] + untouched[gb]), gb))
    rows = []
    for gb in families:
        row = [gb, names.get(gb, "")[:44], before[gb]] + [after[v][gb] for v in ("safe", "unsafe", "verified")]
        if whole is not None:
            row.append(before[gb] + untouched[gb])
        rows.append(tuple(row))
    total = ["total", "", sum(before.values())] + [sum(after[v].values()) for v in ("safe", "unsafe", "verified")]
    header = ["GB id", "family", "breaks before", "after --apply", "after --unsafe-fixes", "after verified"]
    if whole is not None:
        total.append(sum(before.values()) + sum(untouched.values()))
        header.append("the whole part's breaks")
    rows.append(tuple(total))
    text = ("runtime break events per family, models that run a changed file (verified: the unsafe copy "
            "where its outputs are identical and its breaks go down without a new GB id, else --apply's)\n"
            + table(tuple(header), rows))
    if whole is not None:
        part = sum(before.values()) + sum(untouched.values())
        removed = {v: sum(before.values()) - sum(after[v].values()) for v in ("safe", "unsafe", "verified")}
        text += (f"\nthe whole part: {part} break events; removed by --apply {removed['safe']} "
                 f"({removed['safe'] / max(part, 1):.0%}), by --apply --unsafe-fixes {removed['unsafe']} "
                 f"({removed['unsafe'] / max(part, 1):.0%}), verified {removed['verified']} "
                 f"({removed['verified'] / max(part, 1):.0%})")
    return text


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def run(names: list[str], libraries: list[str], tmp: str, args) -> dict:
    import torch
    from models import MODELS

    # 1. which library functions the models run
    logs = os.path.join(tmp, "logs")
    runs = os.path.join(tmp, "runs")
    os.makedirs(logs)
    os.makedirs(runs)
    t = time.time()
    discovery_path = os.path.join(tmp, "discovery.json")
    error = child(["--libraries", ",".join(libraries), "--child-discover", ",".join(names), discovery_path],
                  child_env(None), os.path.join(logs, "discovery.log"), args.timeout * 4)
    if error:
        raise SystemExit(f"discovery failed: {error}")
    with open(discovery_path, encoding="utf-8") as f:
        discovery = json.load(f)
    roots = discovery["roots"]
    missing = [library for library in libraries if library not in roots]
    if missing:
        raise SystemExit(f"fix_library: {', '.join(missing)} did not import in the discovery child "
                         f"(see {os.path.join(logs, 'discovery.log')}); install it or leave it out of --libraries")
    calls = {n: {(path, q) for path, qs in d["functions"].items() for q in qs} for n, d in discovery["models"].items()}
    model_files = {n: {path for path, _ in c} for n, c in calls.items()}
    files = sorted(set().union(*model_files.values()) | set(discovery["modeling_imported"]))
    timing = {"discover": round(time.time() - t, 1)}
    log(f"{len(names)} models run {len(files)} library files ({timing['discover']}s)")

    # 2. copies
    t = time.time()
    for variant, _ in VARIANTS:
        for library in libraries:
            shutil.copytree(roots[library], os.path.join(tmp, variant, library),
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    timing["copy"] = round(time.time() - t, 1)

    # 3. tcl check / fix / check
    t = time.time()
    before = count(check([os.path.join(tmp, "safe", p) for p in files], args.jobs), os.path.join(tmp, "safe"))
    timing["check_before"] = round(time.time() - t, 1)
    variants = {}
    for variant, flags in VARIANTS:
        base = os.path.join(tmp, variant)
        paths = [os.path.join(base, p) for p in files]
        t = time.time()
        fixed = fix(paths, flags)
        timing[f"fix_{variant}"] = round(time.time() - t, 1)
        t = time.time()
        after_findings = check(paths, args.jobs)
        after = count(after_findings, base)
        timing[f"check_{variant}"] = round(time.time() - t, 1)
        cross_file = collections.Counter(f["code"] for f in after_findings
                                         if (f["path"], f["line"], f["code"]) not in fixed["seen"])
        changed, parse_errors, diffs = {}, {}, {}
        for rel in files:
            original_path = os.path.join(os.path.dirname(roots[rel.split(os.sep)[0]]), rel)
            with open(original_path, "rb") as f, open(os.path.join(base, rel), "rb") as g:
                if f.read() == g.read():
                    continue
            problem = parse_problem(os.path.join(base, rel))
            if problem:
                parse_errors[rel] = problem
                changed[rel] = set()
                continue
            changed[rel] = changed_functions(functions_of(original_path), functions_of(os.path.join(base, rel)))
            with open(original_path, encoding="utf-8") as f, open(os.path.join(base, rel), encoding="utf-8") as g:
                diffs[rel] = "".join(difflib.unified_diff(f.readlines(), g.readlines(), f"a/{rel}", f"b/{rel}"))
        for item in fixed["pending"]:
            item["path"] = os.path.relpath(item["path"], base)
        variants[variant] = {"fix": fixed, "after": after, "changed": changed, "parse_errors": parse_errors,
                             "cross_file": cross_file, "diffs": diffs}
        log(f"{variant}: {fixed['summary']} ({timing[f'fix_{variant}']}s); {len(changed)} files changed, "
            f"{len(parse_errors)} do not parse")

    # 4. every model that runs a changed file
    affected = [n for n in names if any(model_files[n] & set(v["changed"]) for v in variants.values())]
    differs_from_safe = set()
    for rel in files:
        with open(os.path.join(tmp, "safe", rel), "rb") as a, open(os.path.join(tmp, "unsafe", rel), "rb") as b:
            if a.read() != b.read():
                differs_from_safe.add(rel)
    models = {}
    t = time.time()
    for name in affected:
        entry = models[name] = {"library": MODELS[name][0], "mode": MODELS[name][1]}
        outputs = {}
        for variant in ["original"] + [v for v in variants if model_files[name] & set(variants[v]["changed"])]:
            if variant == "unsafe" and "safe" in outputs and not model_files[name] & differs_from_safe:
                outputs[variant] = outputs["safe"]  # the model runs the same source as in the safe copy
                continue
            out = os.path.join(runs, f"{name}.{variant}.pt")
            env = child_env(None if variant == "original" else os.path.join(tmp, variant))
            t0 = time.time()
            error = child(["--child-run", name, out], env, os.path.join(logs, f"{name}.{variant}.log"), args.timeout)
            data = {"error": error} if error else torch.load(out, weights_only=False)
            expected = roots if variant == "original" else {k: os.path.join(tmp, variant, k) for k in libraries}
            # The child must have imported the copy it is meant to test (of the libraries it uses:
            # it reports the roots of its model's library).
            for library in (lib for lib in libraries if error or lib in data.get("roots", {})):
                got = data["roots"].get(library, "") if not error else expected[library]
                if os.path.realpath(got) != os.path.realpath(expected[library]):
                    raise SystemExit(f"{name} {variant}: imported {library} from {got}")
            outputs[variant] = data
            log(f"  {name:26s} {variant:8s} {time.time() - t0:5.1f}s  "
                f"{error or data.get('build_error') or str(len(data['breaks'])) + ' breaks'}")
        entry["original"] = _summary(outputs["original"])
        for variant, v in variants.items():
            files_changed = sorted(model_files[name] & set(v["changed"]))
            if not files_changed:
                continue
            ran = sorted(f"{path}:{q}" for path, q in calls[name] if q in v["changed"].get(path, ()))
            in_ran = {(path, q) for path, q in calls[name] if q in v["changed"].get(path, ())}
            fixed_here = (total(before, lambda p, q, c: (p, q) in in_ran)
                          - total(v["after"], lambda p, q, c: (p, q) in in_ran))
            info = {"files_changed": files_changed, "changed_functions_run": ran, "findings_fixed": fixed_here,
                    **_summary(outputs[variant])}
            first = outputs["original"]
            if "runs" in first and "runs" in outputs[variant]:
                info["outputs"] = compare(first["runs"][0], first["runs"][1], outputs[variant]["runs"][0])
                removed = collections.Counter(_site(b) for b in first["breaks"])
                added = collections.Counter(_site(b) for b in outputs[variant]["breaks"])
                info["breaks_removed"] = sorted((removed - added).elements())
                info["breaks_added"] = sorted((added - removed).elements())
            else:
                info["outputs"] = {"identical": False, "why": first.get("error") or first.get("build_error")
                                   or outputs[variant].get("error") or outputs[variant].get("build_error")}
            entry[variant] = info
    timing["models"] = round(time.time() - t, 1)

    return report(names, libraries, files, discovery, before, variants, models, timing)


def _site(b: dict) -> str:
    return f"{b['path']} {b['gb']} {b['reason']}"


def _summary(data: dict) -> dict:
    if "error" in data or "build_error" in data:
        return {"error": data.get("error") or data.get("build_error")}
    return {"breaks": len(data["breaks"]),
            "break_sites": [f"{b['path']}:{b['line']} {b['gb']}" for b in data["breaks"]],
            "eager": data["runs"][0][0] if data["runs"][0][0] == "ok" else data["runs"][0][1],
            "compile_error": data["compile_error"], "seconds": data["seconds"]}


def report(names, libraries, files, discovery, before, variants, models, timing) -> dict:
    from tcl.rules import ALL_RULES

    has_codemod = {rule.code: getattr(rule, "fixer", None) is not None for rule in ALL_RULES}
    rules = sorted({c for *_, c in before} | {c for v in variants.values() for *_, c in v["after"]})
    per_rule = {}
    for code in rules:
        row = {"before": total(before, lambda p, q, c: c == code), "has_codemod": has_codemod.get(code, False)}
        for variant, v in variants.items():
            row[f"after_{variant}"] = total(v["after"], lambda p, q, c: c == code)
            row[f"not_applied_{variant}"] = dict(collections.Counter(
                p["level"] for p in v["fix"]["pending"] if p["code"] == code))
            row[f"cross_file_{variant}"] = v["cross_file"][code]
        per_rule[code] = row

    print(f"tcl fix on {', '.join(libraries)}: the {len(files)} library files that {len(names)} eval models run "
          f"(copies in a temp dir)\n")
    header = ("rule", "codemod", "before", *[f"after {v}" for v in variants],
              "left by --apply: unsafe / suggestion / other file / no rewrite")
    rows = []
    for code, row in per_rule.items():
        pending = row["not_applied_safe"]
        unsafe, suggestion, other = pending.get("unsafe", 0), pending.get("suggestion", 0), row["cross_file_safe"]
        row["no_rewrite_safe"] = row["after_safe"] - unsafe - suggestion - other if row["has_codemod"] else None
        left = (f"{unsafe} / {suggestion} / {other} / {row['no_rewrite_safe']}" if row["has_codemod"]
                else "no codemod")
        rows.append((code, "yes" if row["has_codemod"] else "no", row["before"],
                     *[f"{row[f'after_{v}']} (-{row['before'] - row[f'after_{v}']})" for v in variants], left))
    total_before = sum(before.values())
    rows.append(("total", "", total_before,
                 *[f"{sum(v['after'].values())} (-{total_before - sum(v['after'].values())})"
                   for v in variants.values()], ""))
    print("findings per rule (tcl check --format json, before and after)")
    print(table(header, rows))
    print("(other file: reported in a helper's file but reached only from another file's forward; "
          "`tcl fix` analyses each file from its own entry points and does not see it)")
    for variant, v in variants.items():
        print(f"\n{variant}: {v['fix']['summary']}; {len(v['changed'])} files changed, every one parses: "
              f"{'yes' if not v['parse_errors'] else 'NO ' + str(v['parse_errors'])}")
        for problem in v["fix"]["problems"]:
            print(f"  problem: {problem}")

    totals = {}
    for variant, flags in VARIANTS:
        rows = []
        tot = {"models": 0, "findings_fixed": 0, "breaks_before": 0, "breaks_after": 0, "identical": 0}
        for name, entry in models.items():
            info = entry.get(variant)
            if info is None:
                continue
            breaks = (entry["original"].get("breaks", "-"), info.get("breaks", "-"))
            # A run whose compile failed logs only the breaks before the failure: no break counts
            # as removed from it.
            failed = entry["original"].get("compile_error") or info.get("compile_error")
            rows.append((name, len(info["files_changed"]), len(info["changed_functions_run"]), info["findings_fixed"],
                         f"{breaks[0]} -> {breaks[1]}" + (" (compile failed)" if failed else ""),
                         verdict(info.get("outputs"))))
            tot["models"] += 1
            tot["findings_fixed"] += info["findings_fixed"]
            if all(isinstance(b, int) for b in breaks) and not failed:
                tot["breaks_before"] += breaks[0]
                tot["breaks_after"] += breaks[1]
            tot["identical"] += bool(info.get("outputs", {}).get("identical"))
        rows.append(("total", "", "", tot["findings_fixed"], f"{tot['breaks_before']} -> {tot['breaks_after']}",
                     f"{tot['identical']}/{tot['models']} identical"))
        totals[variant] = tot
        print(f"\ntcl fix {' '.join(flags)}: every model that runs a changed file")
        print(table(("model", "files changed", "changed functions run", "findings fixed", "runtime breaks",
                     "outputs identical"), rows))

    unaffected = [n for n in names if n not in models]
    print(f"\n{len(unaffected)} models run no changed file: {', '.join(unaffected)}")
    print("timing (s): " + ", ".join(f"{k} {v}" for k, v in timing.items()))
    return {
        "command": " ".join(["python scripts/fix_library.py", *sys.argv[1:]]),
        "versions": versions(),
        "libraries": libraries,
        "runtime_breaks": "tcl.oracle.probe: torch.compile default mode, backend eager, CPU; every logged graph break",
        "models_checked": names,
        "discovery_errors": {n: d["error"] for n, d in discovery["models"].items() if "error" in d},
        "files": files,
        "findings_before": total_before,
        "per_rule": per_rule,
        "variants": {variant: {
            "summary": v["fix"]["summary"], "applied": v["fix"]["applied"],
            "findings_after": sum(v["after"].values()),
            "changed": {path: sorted(qs) for path, qs in v["changed"].items()},
            "parse_errors": v["parse_errors"], "problems": v["fix"]["problems"], "not_applied": v["fix"]["pending"],
            "cross_file_findings": dict(v["cross_file"]),
            "diffs": v["diffs"],
            "remaining": sorted(f"{p} {q} {c}" for (p, q, c), n in v["after"].items() for _ in range(n)),
        } for variant, v in variants.items()},
        "models": models,
        "totals": totals,
        "unaffected_models": unaffected,
        "timing": timing,
    }


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
