"""What the Dynamo settings `tcl fix` inserts at a user's compile call remove on real models.

    python scripts/fix_settings.py --split dev --results-dir /tmp/evalall [--json OUT.json]
    python scripts/fix_settings.py --split heldout2 --results-dir /tmp/eval_h2 --models a,b

For every model of the split whose stored oracle output (eval/run_eval.py --results-dir) has
graph breaks:

1. tcl decides, as a user would run it: `tcl check --follow-imports --entry <the model's recorded
   entry> --format json` (the entry eval/entries_of.py recorded, as `pytest --tcl-record` does),
   and the settings are those tcl/fixes/settings.py inserts for the findings in installed code:
   the union of `removed_by` of their rules. A model none of whose findings calls for a setting
   keeps all its breaks.
2. The model runs in a child process twice, without and with those settings (torch._dynamo.config
   patched, nothing else changed): default mode, backend "eager", CPU, every logged graph break
   (tcl.oracle.probe), the compile error if any, and the compiled output of a fresh copy compared
   with two eager runs (scripts/fix_library.py's comparison: same structure, allclose, a leaf that
   differs between two eager runs left out). The settings change nothing eager, so only the
   compiled output can differ.

A setting counts as kept only when the compiled run does not fail, its output matches eager,
the breaks go down and none of them has a GB id the run without the settings lacks; otherwise
the model keeps its breaks as they were (what `tcl fix --verify` does with a fix that does not
prove out).

`--recompiles` measures the recompile fix instead (TCL501's `allow_unspec_int_on_nn_module`):
the models whose stored three-shape run (eval/worker.py) has persistent recompiles, the settings
the findings of recompile rules call for, and the persistent recompiles of the same three calls
without and with them (kept when the compiled run works, matches eager, breaks do not go up and
the persistent recompiles go down).

`--from runtime` takes the settings instead from the breaks the model hits as written (its stored
oracle output), as `tcl fix --verify` does for a file whose examples reproduce the run:
tcl.fixes.settings.settings_for_breaks of their GB ids. `--from both` is what `tcl fix --verify`
tries: the union.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(1, ROOT)


def child_run(name: str, settings: list[str], out_path: str, recompiles: bool = False) -> int:
    """Build `name`, run it eagerly twice, then compiled under `settings` (`recompiles`: and its
    three-shape calls, counting persistent recompiles)."""
    import fix_library as fl

    fl._eval_imports()
    import tv_stub

    tv_stub.install()
    import copy

    import torch

    torch.set_num_threads(1)
    from models import MODELS, SHAPED
    from worker import _three_shapes, library_files, library_roots

    from tcl.oracle import _call, _fresh, probe

    library, mode, builder = MODELS[name]
    roots = library_roots(library)
    result = {"name": name, "settings": settings}
    try:
        fl.seed()
        model, args, kwargs = builder()
    except Exception as exc:  # noqa: BLE001 -- a model that does not build: recorded
        result["build_error"] = f"{type(exc).__name__}: {exc}"[:300]
        torch.save(result, out_path)
        return 0
    first, again = fl._eager(model, args, kwargs), fl._eager(model, args, kwargs)
    from tcl.dynamo_settings import config_values

    patch = torch._dynamo.config.patch(**config_values(settings))
    with patch, fl._quiet():
        fl.seed()
        found = probe(model, args, kwargs, user_files=library_files(roots), backend="eager",
                      modes=("default",), fresh_target=True)
        torch._dynamo.reset()
        target = copy.deepcopy(model) if isinstance(model, torch.nn.Module) else model
        compiled = torch.compile(target, backend="eager")
        fl.seed()
        try:
            out = ("ok", fl._leaves(_call(compiled, *_fresh(args, kwargs))))
        except Exception as exc:  # noqa: BLE001 -- the compiled run's failure is the result
            out = ("raised", f"{type(exc).__name__}: {exc}"[:300])
        torch._dynamo.reset()
        if recompiles:
            fl.seed()
            shapes = _three_shapes(builder if name in SHAPED else None, model, args, kwargs)
            result["persistent"] = len(shapes.get("persistent") or [])
            result["shapes_error"] = shapes.get("error")
    result["breaks"] = [{"path": os.path.realpath(b.path), "line": b.line, "gb": b.gb} for b in found.breaks]
    result["compile_error"] = found.default_error
    result["compare"] = fl.compare(first, again, out)
    torch.save(result, out_path)
    return 0


def settings_for(name: str, entry: dict, python: str, assume: list[str],
                 category: str = "graph-break") -> tuple[list[str], list[str]]:
    """(the settings tcl's findings of `category` rules for this model call for, their codes)."""
    from tcl.rules import BY_CODE

    with tempfile.TemporaryDirectory() as tmp:
        user = os.path.join(tmp, "train.py")
        with open(user, "w", encoding="utf-8") as handle:
            handle.write("import torch\n")
        paths = [user]
        if entry["entry"].startswith("corpus."):  # a function of the corpus's builders: user code
            paths = [entry["file"]]
        command = [python, "-m", "tcl", "check", *paths, "--no-config", "--follow-imports", "--format", "json",
                   "--entry", entry["entry"], *[a for item in assume for a in ("--assume", item)]]
        done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT,
                              env=dict(os.environ, PYTHONPATH=ROOT))
    try:
        findings = json.loads(done.stdout)["findings"]
    except (json.JSONDecodeError, KeyError):
        return [], [f"tcl check failed: {done.stderr.strip()[-200:]}"]
    settings: set[str] = set()
    codes = []
    for finding in findings:
        rule = BY_CODE.get(finding["code"])
        if finding.get("library") and rule is not None and rule.removed_by and rule.category == category:
            settings |= rule.removed_by
            codes.append(finding["code"])
    return sorted(settings), codes


def runtime_settings(breaks: list[dict]) -> dict[str, list[str]]:
    """setting -> GB ids: what `tcl fix --verify` tries for a run with these breaks."""
    from tcl.fixes.settings import settings_for_breaks
    from tcl.torch_version import installed

    return settings_for_breaks([b.get("gb") for b in breaks], installed() or (2, 13),
                               [(b.get("gb"), b.get("path"), b.get("line")) for b in breaks])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", default="dev")
    parser.add_argument("--results-dir", help="eval/run_eval.py --results-dir of that split")
    parser.add_argument("--models", help="comma-separated names (default: every model of the split with breaks)")
    parser.add_argument("--python", default=sys.executable, help="the environment the models run in")
    parser.add_argument("--json", help="write every model's result here")
    parser.add_argument("--reuse", metavar="JSON", help="take each model's result from this earlier --json output "
                        "instead of running it again (except the --rerun ones)")
    parser.add_argument("--rerun", default="", help="with --reuse: comma-separated models to run again")
    parser.add_argument("--timeout", type=int, default=400)
    parser.add_argument("--from", dest="source", choices=("findings", "runtime", "both"), default="findings",
                        help="where the settings come from: tcl check's findings (default), the breaks the "
                             "model hits as written, or both (tcl fix --verify)")
    parser.add_argument("--recompiles", action="store_true",
                        help="measure the recompile fix: models with persistent recompiles, the settings "
                             "recompile rules call for, persistent recompiles before and after")
    parser.add_argument("--report", metavar="JSON", help="print the table of a saved --json result and exit")
    parser.add_argument("--child", nargs=4, metavar=("NAME", "SETTINGS", "OUT", "RECOMPILES"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        name, settings, out, recompiles = args.child
        return child_run(name, [s for s in settings.split(",") if s], out, recompiles == "1")
    import fix_library as fl

    if args.report:
        data = json.load(open(args.report, encoding="utf-8"))
        rows = [_row(name, item) for name, item in sorted(data["models"].items())]
        _print_table(fl, data["split"], rows, data.get("measure", "breaks"))
        return 0

    fl._eval_imports()
    from models import MODELS, SPLIT

    entries = json.load(open(os.path.join(args.results_dir, "entries.json"), encoding="utf-8"))
    stored = {}
    for name in sorted(MODELS):
        path = os.path.join(args.results_dir, f"{name}.json")
        if SPLIT.get(name) == args.split and os.path.exists(path):
            data = json.load(open(path, encoding="utf-8"))
            if (data.get("recompiles") or {}).get("persistent") if args.recompiles else data.get("breaks"):
                stored[name] = data
    names = args.models.split(",") if args.models else sorted(stored)
    rows, results = [], {}
    reused = json.load(open(args.reuse, encoding="utf-8"))["models"] if args.reuse else {}
    rerun = {n for n in args.rerun.split(",") if n}
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            if name in reused and name not in rerun:
                results[name] = reused[name]
                rows.append(_row(name, reused[name]))
                continue
            library, mode, _ = MODELS[name]
            assume = [f"training={'true' if mode == 'train' else 'false'}", "device=cpu", "dtype=float32"]
            entry = entries.get(name, {})
            settings, codes = [], []
            if args.source != "runtime" and "entry" in entry:
                settings, codes = settings_for(name, entry, args.python, assume,
                                               "recompile" if args.recompiles else "graph-break")
            if args.source != "findings":
                observed = runtime_settings(stored.get(name, {}).get("breaks", []))
                settings = sorted(set(settings) | set(observed))
                codes += [f"{gb} at run time" for gbs in observed.values() for gb in gbs]
            item = {"library": library, "mode": mode, "settings": settings, "codes": dict(collections.Counter(codes)),
                    "stored_breaks": len(stored.get(name, {}).get("breaks", [])), "from": args.source,
                    "measure": "recompiles" if args.recompiles else "breaks",
                    "stored_persistent": len((stored.get(name, {}).get("recompiles") or {}).get("persistent") or [])}
            if settings:
                for variant, chosen in (("without", []), ("with", settings)):
                    item[variant] = _variant(args, tmp, name, variant, chosen)
            if _verdict(item)[0].startswith("rejected") and len(settings) > 1:
                # As `tcl fix --verify` does: all fixes together first, then each one alone.
                item["alone"] = {setting: _variant(args, tmp, name, setting, [setting]) for setting in settings}
            _, _, item["before"], item["after"], item["verdict"] = _row(name, item)
            results[name] = item
            rows.append(_row(name, item))
            print(f"{name}: {rows[-1][1]} {item['before']} -> {item['after']} {item['verdict']}", flush=True)
    measure = "recompiles" if args.recompiles else "breaks"
    before, after = _print_table(fl, args.split, rows, measure)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"split": args.split, "from": args.source, "versions": fl.versions(), "models": results,
                       "measure": measure, f"{measure}_before": before, f"{measure}_after": after},
                      handle, indent=1, sort_keys=True)
    return 0


def _row(name: str, item: dict) -> tuple:
    """(model, settings, breaks before, after, verdict), the verdict decided again from the runs."""
    verdict, before, after = _verdict(item)
    if verdict == "kept" or not item.get("alone"):
        return name, ",".join(s.replace("capture_", "") for s in item["settings"]) or "-", before, after, verdict
    for setting, alone in item["alone"].items():  # the union was rejected; a setting alone may hold
        one, _, one_after = _verdict(dict(item, settings=[setting], **{"with": alone}))
        if one == "kept" and one_after < after:
            verdict, after = f"kept alone: {setting}", one_after
    return name, ",".join(s.replace("capture_", "") for s in item["settings"]) or "-", before, after, verdict


def _print_table(fl, split: str, rows: list[tuple], measure: str = "breaks") -> tuple[int, int]:
    before = sum(r[2] for r in rows)
    after = sum(r[3] for r in rows)
    what = "persistent recompiles" if measure == "recompiles" else "runtime breaks"
    print(fl.table(("model", "settings", f"{measure} before", "after", "verdict"), rows))
    print(f"split {split}: {len(rows)} models with {measure}, {before} -> {after} {what} "
          f"({before - after} removed, {100 * (before - after) / max(before, 1):.0f}%); settings kept on "
          f"{sum(1 for r in rows if r[4].startswith('kept'))} models; "
          f"{sum(1 for r in rows if r[4].startswith('not run'))} could not be run")
    return before, after


def _variant(args, tmp: str, name: str, variant: str, chosen: list[str]) -> dict:
    """One child run of `name` under the settings `chosen`: breaks, compile error, comparison."""
    import fix_library as fl
    import torch

    out = os.path.join(tmp, f"{name}.{variant}.pt")
    env = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", PYTHONPATH=ROOT,
               PYTHONDONTWRITEBYTECODE="1")
    recompiles = "1" if getattr(args, "recompiles", False) else "0"
    problem = fl.child(["--child", name, ",".join(chosen), out, recompiles], env, out + ".log", args.timeout,
                       script=__file__, python=args.python)
    if problem:
        return {"problem": problem[:300]}
    got = torch.load(out, weights_only=False)
    return {"breaks": len(got.get("breaks", [])), "compile_error": got.get("compile_error"),
            "compare": dict(got.get("compare", {})),
            "gbs": dict(collections.Counter(b["gb"] or "-" for b in got.get("breaks", []))),
            "build_error": got.get("build_error"), "persistent": got.get("persistent"),
            "shapes_error": got.get("shapes_error")}


def _verdict(item: dict) -> tuple[str, int, int]:
    """(verdict, breaks before, breaks after): the settings are kept only when they prove out.
    For `--recompiles` the two counts are persistent recompiles."""
    if item.get("measure") == "recompiles":
        return _recompile_verdict(item)
    without, with_ = item.get("without"), item.get("with")
    if not item["settings"]:
        return "no setting called for", item["stored_breaks"], item["stored_breaks"]
    for run in (without, with_):
        if run and run.get("build_error"):  # this environment cannot build it: nothing measured
            return f"not run: build error {run['build_error'][:80]}", item["stored_breaks"], item["stored_breaks"]
    if not without or "breaks" not in without:
        return f"not run: {(without or {}).get('problem') or (without or {}).get('build_error')}", \
            item["stored_breaks"], item["stored_breaks"]
    before = without["breaks"]
    if not with_ or "breaks" not in with_:
        return f"rejected: {(with_ or {}).get('problem', 'no result')[:80]}", before, before
    if with_.get("compile_error"):
        return f"rejected: compile error {with_['compile_error'][:80]}", before, before
    if not with_["compare"].get("identical"):
        return f"rejected: compiled output differs ({with_['compare'].get('why', '')[:60]})", before, before
    if with_["breaks"] >= before:
        return f"rejected: breaks did not go down ({before} -> {with_['breaks']})", before, before
    new_ids = set(with_.get("gbs", {})) - set(without.get("gbs", {}))
    if new_ids:
        return f"rejected: a new graph break ({', '.join(sorted(new_ids))})", before, before
    return "kept", before, with_["breaks"]


def _recompile_verdict(item: dict) -> tuple[str, int, int]:
    stored = item["stored_persistent"]
    without, with_ = item.get("without"), item.get("with")
    if not item["settings"]:
        return "no setting called for", stored, stored
    for run in (without, with_):
        if not run or run.get("build_error") or run.get("problem") or run.get("persistent") is None:
            why = (run or {}).get("build_error") or (run or {}).get("problem") or "no result"
            return f"not run: {why[:80]}", stored, stored
    before = without["persistent"]
    if with_.get("compile_error") or with_.get("shapes_error"):
        return f"rejected: {(with_.get('compile_error') or with_.get('shapes_error'))[:80]}", before, before
    if not with_["compare"].get("identical"):
        return f"rejected: compiled output differs ({with_['compare'].get('why', '')[:60]})", before, before
    if with_["breaks"] > without["breaks"]:
        return f"rejected: breaks went up ({without['breaks']} -> {with_['breaks']})", before, before
    if with_["persistent"] >= before:
        return f"rejected: persistent recompiles did not go down ({before} -> {with_['persistent']})", before, before
    return "kept", before, with_["persistent"]


if __name__ == "__main__":
    sys.exit(main())
