"""Scoring tcl's recompile rules against the runtime: three shapes per model, persistent recompiles.

The worker (eval/worker.py) calls one fresh compiled copy of each model with shapes 0, 1, 2
(`recompiles` in its JSON, from tcl.verify.compile_trace). A frame's first recompile on new inputs
is automatic dynamic shapes doing its job; any later recompile of the same frame is
*persistent*: a size Python code needed as an exact value, which every new size pays again
until the recompile limit. Each persistent recompile is explained by the library lines that
fixed a size while the frame's previous graphs were compiled (`specialisations`).

- A persistent-recompile **site** is one such library line (path, line); a persistent
  recompile with no specialising library line counts as one site at its frame (path, first
  line of the function) with its guard.
- **Recall**: a site is found when a finding of a recompile rule with `persistent = True`
  (shape specialisation, TCL505 and its kin) covers the line, from the tcl run of a mode whose
  models hit it (for a frame site: any such finding inside that function).
- **Precision**: over those rules' findings on executed lines of models that ran all three
  shapes: true when it covers a site. Recompile rules without `persistent` (TCL501-504: int
  counters, int arguments, list lengths, dynamic=False) need variations three shapes do not
  make; their findings are listed apart, not scored. A finding in the function of a site it
  does not cover, or one executed only by models that kept recompiling anyway, is *masked*, not
  false: that frame recompiles on every call already, and the runtime names only the first
  failing guard of a recompile, so this line's own guard cannot show (the break metric's
  "shadowed").
"""

from __future__ import annotations

import os
import re
from collections import Counter, defaultdict

from tcl.verify.compile_trace import Compilation, guard_expression, guard_site_of, persistent


_RESUMED_AT = re.compile(r"torch_dynamo_resume_in_.+_at_(\d+)$")


_GUARD_NAME = re.compile(r"\['([A-Za-z_]\w*)'\]|\.([A-Za-z_]\w*)\b")
_NOT_NAMES = {"size", "shape", "param_groups", "state", "keys", "optimizer", "training"}


def _guarded_names(reasons: list[str]) -> set[str]:
    """`'counter'` and `.queue_idx` from "opt.param_groups[0]['counter'] != 0 # ..."."""
    names = set()
    for reason in reasons:
        guard = reason.split(": ", 1)[-1].split(" # ", 1)[0]
        for key, attr in _GUARD_NAME.findall(guard):
            if key:
                names.add(f"'{key}'")
                names.add(f'"{key}"')
            elif attr and attr not in _NOT_NAMES:
                names.add(f".{attr}")
    return names


def _in_library(path: str, files: set[str]) -> bool:
    return os.path.realpath(path) in files


def persistent_sites(results: dict, names: list[str], library_files: set[str]) -> dict:
    """(path, line) -> site dict, from the models' three-shape runs."""
    sites: dict[tuple[str, int], dict] = {}
    outside: list[dict] = []
    lib_files = sorted(library_files)
    for name in names:
        data = results[name]
        rec = data.get("recompiles") or {}
        comps = rec.get("compilations") or []
        mode = data.get("mode", "eval")
        # recomputed from the compilations (the definition, not whatever an older worker wrote)
        again = persistent([Compilation(c["index"], c["function"], c["path"], c["first_line"], c["reason"], c["call"])
                            for c in comps])
        for index in [c.index for c in again]:
            comp = comps[index]
            frame = (comp["path"], comp["first_line"], comp["function"])
            lines = [s for c in comps if (c["path"], c["first_line"], c["function"]) == frame and c["index"] < index
                     for s in c["specialisations"]]
            # the innermost library frame of each specialising line (a torch polyfill or an
            # eval builder is not library code; its library caller is)
            keys = []
            for spec in lines:
                chain = [(spec["path"], spec["line"])] + [tuple(c) for c in reversed(spec.get("callers", []))]
                lib = next(((os.path.realpath(p), ln) for p, ln in chain if _in_library(p, library_files)), None)
                if lib and lib not in keys:
                    keys.append(lib)
            kind, also = "line", []
            guard = guard_site_of(comp["reason"], comp["path"], lib_files)
            if not keys and guard and _in_library(guard[0], library_files):
                # a guard on a Python value (an int in a state dict, a list's length in a frame
                # resumed after a graph break): its line; the lines where the frame's earlier
                # recompiles on the same value failed (`state['step'] += 1`); and the line of
                # the graph break that handed the value over (resume_in_fn_at_N)
                keys = [(os.path.realpath(guard[0]), guard[1])]
                kind = "guard"
                expression = guard_expression(comp["reason"])
                for earlier in comps:
                    if (earlier["path"], earlier["first_line"], earlier["function"]) == frame and \
                            earlier["index"] < index and guard_expression(earlier["reason"]) == expression:
                        site = guard_site_of(earlier["reason"], earlier["path"], lib_files)
                        if site and os.path.realpath(site[0]) == keys[0][0] and site[1] not in also:
                            also.append(site[1])
                at = _RESUMED_AT.search(comp["function"])
                if at and os.path.realpath(comp["path"]) == keys[0][0]:
                    also.append(int(at.group(1)))
            if not keys:
                keys = [(os.path.realpath(comp["path"]), comp["first_line"])]
                kind = "frame"
            if not all(_in_library(k[0], library_files) for k in keys):
                # the evaluation's own code (a builder's compiled train step): not library code,
                # which is all tcl is run on here
                outside.append({"model": name, "path": keys[0][0], "line": keys[0][1], "reason": comp["reason"]})
                continue
            for key in keys:
                site = sites.setdefault(key, {"path": key[0], "line": key[1], "kind": kind, "models": [],
                                              "modes": set(), "reasons": [], "function": comp["function"],
                                              "also_lines": also})
                if name not in site["models"]:
                    site["models"].append(name)
                site["modes"].add(mode)
                if comp["reason"] and comp["reason"] not in site["reasons"]:
                    site["reasons"].append(comp["reason"])
    return sites, outside


def score(results, names, findings, modes_of, executed_in, rules, shape, library_files) -> dict:
    """Recall and precision of the persistent recompile rules; `findings`, `modes_of`,
    `executed_in`, `rules` and `shape` as in run_eval.evaluate."""
    shaped = [n for n in names if (results[n].get("recompiles") or {}).get("calls") == 3
              and not results[n]["recompiles"].get("error")]
    failed = {n: (results[n].get("recompiles") or {}).get("error") or "no three-shape run"
              for n in names if n not in shaped and "breaks" in results[n]}
    sites, outside = persistent_sites(results, shaped, library_files)
    persistent_rules = {code for code, info in rules.items() if info[0] == "recompile" and info[3]}
    other_rules = {code for code, info in rules.items() if info[0] == "recompile" and not info[3]}
    shaped_modes = {results[n].get("mode", "eval") for n in shaped}
    ran = defaultdict(set)
    for n in shaped:
        for path, lines in results[n].get("executed", {}).items():
            ran[path].update(lines)

    def covers(f, site):
        if site["kind"] in ("line", "guard"):
            if any(f.line <= ln <= f.end_line for ln in [site["line"]] + site.get("also_lines", [])):
                return True
        if site["kind"] == "guard":
            # a guard on a Python value names it (`param_groups[0]['counter'] != 0`, `self.queue_idx
            # == 8`); the line that changes it is in the function the guard came from
            fn = shape(site["path"]).function_at(site["line"])
            if fn is None or not fn[0] <= f.line <= fn[1]:
                return False
            text = " ".join(shape(site["path"]).source(ln) for ln in range(f.line, f.end_line + 1))
            return any(name in text for name in _guarded_names(site["reasons"]))
        if site["kind"] == "line":
            return False
        fn = shape(site["path"]).function_at(site["line"])
        return fn is not None and fn[0] <= f.line <= fn[1]

    persistent_models = {m for site in sites.values() for m in site["models"]}
    model_lines = {n: {p: set(v) for p, v in results[n].get("executed", {}).items()} for n in shaped}

    def ran_by(path, f):
        """The three-shape models that executed the finding's line."""
        return {n for n, lines in model_lines.items()
                if any(ln in lines.get(path, ()) for ln in range(f.line, f.end_line + 1))}

    def same_function(f, site):
        fn = shape(site["path"]).function_at(site["line"])
        return fn is not None and fn[0] <= f.line <= fn[1]

    for key, site in sites.items():
        hits = [f for f in findings.get(site["path"], []) if f.code in persistent_rules
                and modes_of(site["path"], f) & site["modes"] and covers(f, site)]
        site["found_by"] = sorted({f.code for f in hits})
        site["source"] = shape(site["path"]).source(site["line"])
    scored, apart = [], []
    for path in sorted(findings):
        for f in findings[path]:
            if f.code not in persistent_rules | other_rules:
                continue
            entry = {"path": path, "line": f.line, "code": f.code, "source": shape(path).source(f.line),
                     "function": (shape(path).function_at(f.line) or (0, 0, "<module>"))[2]}
            if f.code in other_rules:
                apart.append(entry)
                continue
            if not modes_of(path, f) & shaped_modes or not any(
                    ln in ran.get(path, ()) for ln in range(f.line, f.end_line + 1)):
                entry["bucket"] = "not-executed"
            elif any(covers(f, s) for s in sites.values() if s["path"] == path):
                entry["bucket"] = "TP"
            elif any(same_function(f, s) for s in sites.values() if s["path"] == path) or (
                    ran_by(path, f) and ran_by(path, f) <= persistent_models):
                # the frame recompiles on every call already, on a guard another line fixed: the
                # runtime names one failing guard per recompile, so this line's cannot show
                # until that one is gone (as a break's frame shadows later breaks)
                entry["bucket"] = "masked"
            else:
                entry["bucket"] = "FP"
            scored.append(entry)
    buckets = Counter(e["bucket"] for e in scored)
    found = [s for s in sites.values() if s["found_by"]]

    def pct(a, b):
        return round(a / b, 3) if b else None

    for site in sites.values():
        site["modes"] = sorted(site["modes"])
    return {
        "models_three_shapes": len(shaped),
        "models_without": failed,
        "models_persistent": sorted({m for s in sites.values() for m in s["models"]}),
        "sites": len(sites), "found": len(found), "recall": pct(len(found), len(sites)),
        "TP": buckets["TP"], "FP": buckets["FP"], "not_executed": buckets["not-executed"],
        "masked": buckets["masked"],
        "precision": pct(buckets["TP"], buckets["TP"] + buckets["FP"]),
        "site_list": sorted(sites.values(), key=lambda s: (s["path"], s["line"])),
        "outside_library": outside,
        "findings": scored,
        "other_recompile_findings": apart,
    }
