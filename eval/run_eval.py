"""tcl's measured precision and recall on real model code (transformers, timm, torchvision).

    python eval/run_eval.py [--models NAME,...] [--json out.json] [--jobs 2] [--timeout 240]
                            [--results-dir DIR [--reuse]] [--assume model|none] [--eager-first]

1. Every model (eval/models.py: tiny configs, random weights, no downloads) runs in a
   subprocess of its own (eval/worker.py) through tcl.oracle.probe: the eager run records
   the executed lines of the library files, the default-mode compiled run records every
   graph break with its innermost *library* frame (file:line) and GB id. Each run gets its
   own copy of the freshly built model, so the compiled call is the model's first call.
2. `tcl check` (tcl.runner.run) analyses every library file that the models executed, once per
   mode (eval / train) told how those models run: `assume = {training: <mode>, dtype:
   float32, device: cpu}` (`--assume none`: one run without assumptions).
3. Recall: a break is found when a finding of the same file covers its line
   (finding.line <= line <= finding.end_line + the rule's runtime_line_offset), any code, from
   the tcl run of a mode whose models hit the break.
   Precision: over graph-break findings on lines executed by models of the finding's mode; a
   finding is a true positive when it covers a break of such a model.  Findings on lines no
   model executed, findings shadowed by a frame that Dynamo already dropped to eager (a break
   inside a loop / with / try of the same function, in the innermost frame or any caller frame
   of that break) and findings of non-graph-break rules (recompile predictions) are counted
   apart, not in precision.

Break sites are counted once per (file, line, GB id) over all models ("sites"); recall over
per-model occurrences is printed as well.  See docs/accuracy.md for the results.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(1, ROOT)

import recompile_score  # noqa: E402
from models import DEFAULT, MODELS, SPLIT  # noqa: E402  (models.py imports only torch)

LEGACY_LIBRARIES = ("transformers", "timm", "torchvision")  # the development corpus of sessions 1-4
RESUMABLE_CONTEXTS = ("no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "autocast")


# ------------------------------------------------------------------------------------------
# running the models


def run_models(names, jobs, timeout, results_dir, reuse, eager_first=False):
    os.makedirs(results_dir, exist_ok=True)
    env = dict(os.environ)
    env["TCL_EVAL_EAGER_FIRST"] = "1" if eager_first else "0"
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    env.setdefault("HF_HUB_OFFLINE", "1")
    if jobs > 1:
        env.setdefault("TCL_EVAL_THREADS", "1")

    def one(name):
        out = os.path.join(results_dir, f"{name}.json")
        log = os.path.join(results_dir, f"{name}.log")
        if reuse and os.path.exists(out):
            kept = _load(out)
            if kept.get("eager_first", eager_first) == eager_first:  # same protocol (older files: unknown)
                return name, kept, 0.0
        if os.path.exists(out):
            os.remove(out)
        started = time.time()
        with open(log, "w") as logf:
            try:
                proc = subprocess.run([sys.executable, os.path.join(HERE, "worker.py"), name, out],
                                      stdout=logf, stderr=subprocess.STDOUT, timeout=timeout, env=env, cwd=ROOT)
                rc = proc.returncode
            except subprocess.TimeoutExpired:
                rc = "timeout"
        wall = time.time() - started
        if os.path.exists(out):
            return name, _load(out), wall
        with open(log, errors="replace") as f:
            tail = f.read()[-1500:]
        return name, {"name": name, "library": MODELS[name][0], "mode": MODELS[name][1],
                      "worker_error": f"exit {rc}", "log_tail": tail}, wall

    results = {}
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for name, data, wall in pool.map(one, names):
            data["wall_seconds"] = round(wall, 1)
            results[name] = data
            status = data.get("worker_error") or data.get("build_error") or (
                f"{len(data.get('breaks', []))} breaks, {sum(map(len, data.get('executed', {}).values()))} lines")
            print(f"  {name:26s} {wall:6.1f}s  {status}", file=sys.stderr, flush=True)
    return results


def _load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


# ------------------------------------------------------------------------------------------
# source structure (stdlib ast): functions, loops / with / try


class FileShape:
    """Functions of one file with their line ranges, and each line's enclosing amplifiers."""

    def __init__(self, path):
        self.path = path
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                self.text = f.read()
        except OSError:  # a frame in a file that is gone (a reused result's builder): no shape
            self.text = ""
        self.lines = self.text.splitlines()
        self.functions = []  # (start, end, qualname, toplevel_qualname, node)
        self.amplifiers = []  # (start, end, kind, function start)
        try:
            tree = ast.parse(self.text)
        except SyntaxError:
            return
        self._visit(tree.body, [], None, None)

    def _visit(self, body, names, top, func_start):
        for node in body:
            self._node(node, names, top, func_start)

    def _node(self, node, names, top, func_start):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            qual = ".".join(names + [node.name])
            start = min([d.lineno for d in node.decorator_list] + [node.lineno])
            self.functions.append((start, node.end_lineno, qual, top or qual, node))
            self._visit(node.body, names + [node.name], top or qual, node.lineno)
            return
        if isinstance(node, ast.ClassDef):
            self._visit(node.body, names + [node.name], top, func_start)
            return
        if func_start is not None:
            kind = None
            if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
                kind = "loop"
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                if not all(_resumable(item.context_expr) for item in node.items):
                    kind = "with"
            elif isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
                kind = "try"
            if kind:
                body_start = node.body[0].lineno if node.body else node.lineno
                self.amplifiers.append((body_start, node.end_lineno, kind, func_start))
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                self._node(child, names, top, func_start)

    def function_at(self, line):
        """Innermost function containing line: (start, end, qualname, toplevel) or None."""
        best = None
        for start, end, qual, top, _ in self.functions:
            if start <= line <= end and (best is None or start >= best[0]):
                best = (start, end, qual, top)
        return best

    def amplifier_at(self, line):
        """'loop' / 'with' / 'try' when line sits inside one in its own function (not a nested def)."""
        fn = self.function_at(line)
        if fn is None:
            return None
        def_line = next(n.lineno for s, e, q, t, n in self.functions if (s, e, q) == fn[:3])
        for start, end, kind, func_start in self.amplifiers:
            if func_start == def_line and start <= line <= end:
                return kind
        return None

    def source(self, line):
        return self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""


def _resumable(expr):
    if isinstance(expr, ast.Call):
        expr = expr.func
    name = expr.attr if isinstance(expr, ast.Attribute) else getattr(expr, "id", "")
    return name in RESUMABLE_CONTEXTS


# ------------------------------------------------------------------------------------------
# tcl


def run_tcl(files, assume=None, user_side=None, roots=(), follow_imports=False):
    """tcl over `files`. `user_side` (a list of tcl.entries.EntrySpec): the files are the users'
    code, checked from those entries with --follow-imports; a finding then counts at its
    library location (what the runtime reports), and findings in the user code itself are not
    scored (the worker records library frames only). `follow_imports` on the library side
    (--reach library-imports): the libraries' own files checked whole with --follow-imports; a
    break inside another installed package counts at the library line that calls it, where both
    the runtime (its last frame in the library) and tcl report it."""
    import dataclasses

    from tcl.config import Config
    from tcl.runner import run

    started = time.time()
    config = Config(assume=dict(assume or {}), follow_imports=follow_imports)
    if user_side is not None:
        config.entries, config.follow_imports = list(user_side), True
    result = run(sorted(files), config)
    elapsed = time.time() - started
    analysed = {os.path.realpath(r.path) for r in result.reports}
    if analysed != set(files) and user_side is None:
        print(f"warning: tcl analysed {len(analysed)} of {len(files)} files "
              f"(missing: {sorted(set(files) - analysed)[:5]})", file=sys.stderr)
    # The models may have run in another environment than this one (the libraries installed
    # elsewhere): a library finding is placed under the root the models' runs name for its
    # package, by its path below site-packages.
    by_package = {os.path.basename(root): root for root in roots}
    findings = defaultdict(list)
    for f in result.findings:
        if user_side is not None:
            if not f.library_path:
                continue
            relative = f.library.rsplit(":", 2)[0]
            root = by_package.get(relative.split("/")[0])
            path = os.path.join(os.path.dirname(root), relative) if root else f.library_path
            line, end_line = f.library_line, f.library_end_line
            if root is None:
                # The hazard lies in a package that is none of the models' libraries (julius
                # under demucs): the runtime places the break at the deepest frame inside one of
                # them, the call on the finding's trail (Finding.trail) nearest the hazard there.
                for where, _, hop_line, _ in reversed(getattr(f, "trail", ())):
                    hop_root = by_package.get(where.split("/")[0])
                    if hop_root is not None:
                        path = os.path.join(os.path.dirname(hop_root), where.rsplit(":", 2)[0])
                        line = end_line = hop_line
                        break
            f = dataclasses.replace(f, path=path, line=line, end_line=end_line)
        findings[os.path.realpath(f.path)].append(f)
    skipped = {os.path.realpath(r.path) for r in result.reports if r.skipped}
    errors = {os.path.realpath(e.path): e.message for e in result.all_errors}
    return findings, skipped, errors, elapsed


def rule_info():
    """code -> (category, runtime_line_offset, gb ids); from the rule registry, defensively."""
    try:
        from tcl.rules import ALL_RULES
    except Exception:
        return {}
    out = {}
    for rule in ALL_RULES:
        try:
            gbs = rule.gb_ids()
        except Exception:
            gbs = ()
        out[rule.code] = (getattr(rule, "category", "graph-break"), getattr(rule, "runtime_line_offset", 0) or 0,
                          tuple(gbs), bool(getattr(rule, "persistent", False)))
    return out


def tcl_reached(paths, all_files, user_side=None, follow_imports=False):
    """path -> qualnames of the functions tcl's engine walks when it checks ``paths``.

    Analysing a file can walk helpers of other checked files too, so the sets are keyed by the
    helper's own file.  Uses Analyzer.check_source_with_nodes (the `tcl fix` entry point) and
    the analysis' results; returns None if those internals changed shape.
    """
    try:
        from tcl.config import Config
        from tcl.engine import Analyzer
        from tcl.files import package_of

        config = Config(follow_imports=follow_imports)
        if user_side is not None:  # the users' files, from their entries, into the libraries
            config.entries, config.follow_imports = list(user_side[1]), True
            paths, all_files = user_side[0], user_side[0]
        try:
            from tcl.project import scan

            analyzer = Analyzer(config, scan(sorted(all_files)))
        except ImportError:  # an engine without cross-file facts
            analyzer = Analyzer(config)
        reached = defaultdict(set)
        for path in sorted(paths):
            with open(path, encoding="utf-8") as f:
                source = f.read()
            nodes = analyzer.check_source_with_nodes(source, path, package_of(path))
            analysis = nodes.analysis
            if analysis is None:
                continue
            for key in analysis.results:
                function = analysis.functions[key]
                index = getattr(function, "index", None)
                where = os.path.realpath(getattr(index, "path", None) or path)
                reached[where].add(function.qualname)
        return reached
    except Exception as exc:
        print(f"warning: cannot read which functions tcl traces ({type(exc).__name__}: {exc})", file=sys.stderr)
        return None


# ------------------------------------------------------------------------------------------
# scoring


def short(path, roots):
    for root in roots:
        parent = os.path.dirname(root)
        if path.startswith(parent + os.sep):
            return os.path.relpath(path, parent)
    return path


def covers(finding, line, offsets):
    return finding.line <= line <= finding.end_line + offsets.get(finding.code, 0)


def evaluate(results, names, assume="model", user_side=None, follow_imports=False):
    """Score `names`. `user_side`: (the users' files, their entries): tcl checks only those,
    from those entries, with --follow-imports (run_eval --reach user). `follow_imports`: the
    library side with --follow-imports (run_eval --reach library-imports)."""
    roots = sorted({r for data in results.values() for r in data.get("roots", {}).values()})
    gb_classes = _load(os.path.join(HERE, "gb_classes.json"))["entries"]
    rules = rule_info()
    offsets = {code: info[1] for code, info in rules.items()}
    rule_gbs = defaultdict(set)
    for code, info in rules.items():
        for gb in info[2]:
            rule_gbs[gb].add(code)

    # -- ground truth --------------------------------------------------------------------
    executed = defaultdict(set)
    executed_in = defaultdict(lambda: defaultdict(set))  # mode -> path -> lines
    sites = {}  # (path, line, gb) -> site
    occurrences = []  # (model, site key)
    models_ok, models_failed = [], []
    for name in names:
        data = results[name]
        if "breaks" not in data:
            models_failed.append((name, data.get("build_error") or data.get("worker_error")))
            continue
        models_ok.append(name)
        mode = data.get("mode", "eval")
        for path, lines in data["executed"].items():
            executed[path].update(lines)
            executed_in[mode][path].update(lines)
        for b in data["breaks"]:
            key = (b["path"], b["line"], b["gb"])
            site = sites.setdefault(key, {"path": b["path"], "line": b["line"], "gb": b["gb"],
                                          "reason": b["reason"], "models": [], "stacks": [], "modes": set()})
            site["models"].append(name)
            site["modes"].add(mode)
            if b["stack"] and b["stack"] not in site["stacks"]:
                site["stacks"].append(b["stack"])
            occurrences.append((name, key))

    # -- tcl -----------------------------------------------------------------------------
    # With --assume model (the default), tcl is told how the models run, as a user would in
    # [tool.tcl] assume: once per mode, over the files the models of that mode ran, with
    # `training` set by the mode, `dtype` float32 and `device` cpu (every model runs fp32 on
    # CPU). A finding then counts only against the lines and breaks of the models of its mode.
    files = {p for p in executed if os.path.isfile(p)}
    # The corpus libraries (eval/corpus/) are checked whole, as a user runs `tcl check` on a
    # package: a loss's base class in a file no compiled call executes still makes it an
    # nn.Module. transformers/timm/torchvision are too large for that: their executed files only.
    whole_roots = {root for name in names if "breaks" in results[name]
                   and results[name].get("library") not in LEGACY_LIBRARIES
                   for root in results[name].get("roots", {}).values()}
    whole = {os.path.realpath(os.path.join(d, f)) for root in whole_roots for d, _, fs in os.walk(root)
             for f in fs if f.endswith(".py")}
    modes = sorted(executed_in) if assume == "model" else [None]
    findings = defaultdict(list)
    finding_modes = {}  # (path, line, end_line, code) -> modes whose run reported it
    skipped, errors, tcl_seconds = set(), {}, 0.0
    for mode in modes:
        mode_files = ({p for p in executed_in[mode] if os.path.isfile(p)} if mode else files) | whole
        settings = {"training": mode == "train", "dtype": "float32", "device": "cpu"} if mode else None
        if user_side is not None:
            found, mode_skipped, mode_errors, seconds = run_tcl(user_side[0], settings, user_side[1], roots)
        else:
            found, mode_skipped, mode_errors, seconds = run_tcl(mode_files, settings, follow_imports=follow_imports)
        skipped |= mode_skipped
        errors.update(mode_errors)
        tcl_seconds += seconds
        for path, items in found.items():
            for f in items:
                key = (path, f.line, f.end_line, f.code)
                if key not in finding_modes:
                    finding_modes[key] = set()
                    findings[path].append(f)
                finding_modes[key].add(mode)
    all_modes = set(executed_in) | {None}

    def modes_of(path, f):
        found_in = finding_modes[(path, f.line, f.end_line, f.code)]
        return all_modes if None in found_in else found_in

    shapes = {}

    def shape(path):
        if path not in shapes:
            shapes[path] = FileShape(path)
        return shapes[path]

    # -- frames Dynamo dropped to eager ------------------------------------------------------
    dropped = {}  # (path, function start) -> (break key, frame line, kind)
    for key, site in sites.items():
        frames = [fr for stack in site["stacks"] for fr in stack] or [[site["path"], site["line"], ""]]
        for path, line, _ in frames:
            if not os.path.isfile(path):
                continue
            kind = shape(path).amplifier_at(line)
            fn = shape(path).function_at(line)
            if kind and fn:
                dropped.setdefault((path, fn[0]), (key, line, kind))

    # -- recall ----------------------------------------------------------------------------
    for key, site in sites.items():
        path, line = site["path"], site["line"]
        hits = [f for f in findings.get(path, []) if covers(f, line, offsets) and modes_of(path, f) & site["modes"]]
        site["found_by"] = sorted({f.code for f in hits})
        site["static_class"] = gb_classes.get(site["gb"] or "", {}).get("cls", "?")
    missed = [s for s in sites.values() if not s["found_by"]]
    involved = {p for s in missed for p in [s["path"]] + [fr[0] for st in s["stacks"] for fr in st]}
    # The scan covers what tcl checked (whole corpus packages too), so that a base class in a
    # file no model executed still makes its subclasses modules here as it did in the check.
    reach = tcl_reached(involved & files, files | whole, user_side, follow_imports) if missed else {}
    for site in missed:
        site["miss_reason"], site["miss_category"] = explain_miss(
            site, findings, skipped, errors, shape, reach, rule_gbs, gb_classes, roots)

    # -- precision ---------------------------------------------------------------------------
    breaks_by_file = defaultdict(list)
    for site in sites.values():
        breaks_by_file[site["path"]].append(site)
    stack_lines = defaultdict(set)  # caller-frame lines of breaks: (path) -> lines
    for site in sites.values():
        for stack in site["stacks"]:
            for path, line, _ in stack[:-1]:
                stack_lines[path].add(line)
    scored = []
    for path in sorted(findings):
        for f in findings[path]:
            f_modes = modes_of(path, f)
            ran = set().union(*(executed_in[m].get(path, set()) for m in f_modes if m is not None))
            category = rules.get(f.code, ("graph-break",))[0]
            entry = {"path": f.path, "line": f.line, "end_line": f.end_line, "code": f.code, "gb": f.gb,
                     "message": f.message, "source": shape(path).source(f.line)}
            covered = [s for s in breaks_by_file.get(path, [])
                       if covers(f, s["line"], offsets) and s["modes"] & f_modes]
            if category != "graph-break":
                entry["bucket"] = "other-category"
            elif not any(line in ran for line in range(f.line, f.end_line + 1)):
                entry["bucket"] = "not-executed"
            elif covered:
                entry["bucket"] = "TP"
                entry["breaks"] = [f"{s['gb']}" for s in covered]
            else:
                fn = shape(path).function_at(f.line)
                drop = dropped.get((path, fn[0])) if fn else None
                if drop and drop[1] != f.line:
                    entry["bucket"] = "shadowed"
                    entry["shadowed_by"] = f"{short(drop[0][0], roots)}:{drop[0][1]} {drop[0][2]} (frame line {drop[1]}, inside a {drop[2]})"
                else:
                    entry["bucket"] = "FP"
                    if any(line in stack_lines.get(path, ()) for line in range(f.line, f.end_line + 1)):
                        entry["note"] = "line is a caller frame of a break reported deeper (in a callee)"
            entry["function"] = (shape(path).function_at(f.line) or (0, 0, "<module>"))[2]
            scored.append(entry)

    for site in sites.values():
        site["modes"] = sorted(site["modes"])
    summary = summarize(names, models_ok, models_failed, results, sites, occurrences, scored, files, skipped,
                        errors, tcl_seconds, roots, shape, gb_classes)
    recompiles = recompile_score.score(results, models_ok, findings, modes_of, executed_in, rules, shape, files)
    for site in recompiles["site_list"]:
        site["path"] = short(site["path"], roots)
    for entry in recompiles["findings"] + recompiles["other_recompile_findings"]:
        entry["path"] = short(entry["path"], roots)
    summary["recompiles"] = recompiles
    summary["per_library"] = per_library(summary)
    return summary


def per_library(summary) -> dict:
    """library -> break sites, found, TP, FP, recompile sites, found; the library is the first
    component of the short path (the package folder)."""
    out = defaultdict(Counter)
    for b in summary["breaks"]:
        row = out[b["path"].split(os.sep)[0]]
        row["break_sites"] += 1
        row["found"] += bool(b["found_by"])
    for f in summary["findings"]:
        if f["bucket"] in ("TP", "FP"):
            out[f["path"].split(os.sep)[0]][f["bucket"]] += 1
    for s in summary["recompiles"]["site_list"]:
        row = out[s["path"].split(os.sep)[0]]
        row["recompile_sites"] += 1
        row["recompile_found"] += bool(s["found_by"])
    for f in summary["recompiles"]["findings"]:
        if f["bucket"] in ("TP", "FP"):
            out[f["path"].split(os.sep)[0]]["recompile_" + f["bucket"]] += 1
    return {lib: dict(c) for lib, c in sorted(out.items())}


def explain_miss(site, findings, skipped, errors, shape, reach, rule_gbs, gb_classes, roots):
    path, line, gb = site["path"], site["line"], site["gb"]
    if path in errors:
        return f"tcl could not analyse the file: {errors[path]}", "tcl error"
    if path in skipped:
        return "file skipped by tcl's prefilter", "file not analysed"
    sh = shape(path)
    fn = sh.function_at(line)
    if fn is None:
        return "break at module level", "module level"
    stack = site["stacks"][0] if site["stacks"] else []
    near = [f for f in findings.get(path, []) if fn[0] <= f.line <= fn[1] and abs(f.line - line) <= 3]
    gb_type = gb_classes.get(gb or "", {}).get("gb_type") or site["reason"]
    if reach is None:
        return "tcl engine internals unavailable; no finding at this line", "unknown"
    reached = reach.get(path, set())
    # The innermost function and the run of same-file frames that leads to it.
    run = []
    for frame in reversed(stack):
        if frame[0] != path:
            break
        run.insert(0, frame)
    caller = stack[len(stack) - len(run) - 1] if stack and len(run) < len(stack) else None
    top = fn[3]
    if top not in reached:
        unreached_idx = 0
        for i, frame in enumerate(run):
            f_fn = sh.function_at(frame[1])
            if f_fn and f_fn[3] not in reached:
                unreached_idx = i
                break
        if run and unreached_idx > 0:
            prev = run[unreached_idx - 1]
            return (f"{top}() is not traced by tcl: called at {short(path, roots)}:{prev[1]} "
                    f"`{sh.source(prev[1])}` from {sh.function_at(prev[1])[3]}(), a call tcl does not "
                    f"resolve", "same-file call not followed")
        if fn[2] != fn[3] and "." not in fn[3]:  # a def nested in a module-level function
            callee = f"{fn[3]}.<locals>.{fn[2].split('.')[-1]}"
            via = f" (called from {short(caller[0], roots)}:{caller[1]} `{shape(caller[0]).source(caller[1])}`)" if caller else ""
            return (f"{callee}() is a closure / decorator wrapper{via}; tcl does not trace wrappers that "
                    f"decorators put around forward", "decorator wrapper / closure")
        if caller is not None:
            entry = (run[0] if run else [path, line, top])
            entry_fn = sh.function_at(entry[1])
            return (f"{entry_fn[3] if entry_fn else top}() in {short(path, roots)} is reached only from "
                    f"another file: {short(caller[0], roots)}:{caller[1]} `{shape(caller[0]).source(caller[1])}` "
                    f"in {caller[2]}(), and tcl does not follow that call into this file",
                    "cross-file call")
        return f"{top}() is not traced by tcl (not an entry point, no library caller frame recorded)", "not traced"
    note = f"; finding {near[0].code} at line {near[0].line}" if near else ""
    codes = sorted(rule_gbs.get(gb or "", ()))
    if codes:
        return (f"{top}() is traced; {'/'.join(codes)} covers {gb} ({gb_type}) but did not fire here{note}",
                "rule exists, did not fire")
    cls = gb_classes.get(gb or "", {}).get("cls", "?")
    return f"{top}() is traced; no tcl rule for {gb} ({gb_type}; registry class {cls}){note}", f"no rule for {gb}"


def summarize(names, models_ok, models_failed, results, sites, occurrences, scored, files, skipped, errors,
              tcl_seconds, roots, shape, gb_classes):
    site_list = sorted(sites.values(), key=lambda s: (s["path"], s["line"], s["gb"] or ""))
    found = [s for s in site_list if s["found_by"]]
    static = [s for s in site_list if s["static_class"] == "a"]
    static_found = [s for s in static if s["found_by"]]
    occ_found = sum(1 for _, key in occurrences if sites[key]["found_by"])
    buckets = Counter(e["bucket"] for e in scored)
    tp, fp = buckets["TP"], buckets["FP"]

    per_rule = defaultdict(Counter)
    for e in scored:
        per_rule[e["code"]][e["bucket"]] += 1
    per_gb = defaultdict(lambda: {"sites": 0, "hits": 0, "misses": 0, "occurrences": 0, "class": "?"})
    for s in site_list:
        row = per_gb[s["gb"] or "none"]
        row["sites"] += 1
        row["hits" if s["found_by"] else "misses"] += 1
        row["occurrences"] += len(s["models"])
        row["class"] = s["static_class"]
        row["gb_type"] = gb_classes.get(s["gb"] or "", {}).get("gb_type") or s["reason"]

    def pct(a, b):
        return round(a / b, 3) if b else None

    versions = dict(next((results[n]["versions"] for n in models_ok), {}))
    try:
        import tcl

        versions["tcl"] = getattr(tcl, "__version__", "?")
    except Exception:
        pass
    return {
        "versions": versions,
        "torchvision_stubbed": any(results[n].get("torchvision_stubbed") for n in models_ok),
        "models": {n: {"library": results[n].get("library"), "mode": results[n].get("mode"),
                       "breaks": len(results[n].get("breaks", [])),
                       "executed_files": len(results[n].get("executed", {})),
                       "executed_lines": sum(map(len, results[n].get("executed", {}).values())),
                       "seconds": results[n].get("wall_seconds"),
                       "eager_exception": results[n].get("exception"),
                       "error": results[n].get("build_error") or results[n].get("worker_error")}
                   for n in names},
        "files_checked": len(files),
        "files_skipped_by_tcl": len(skipped & files),
        "tcl_errors": {short(p, roots): m for p, m in errors.items()},
        "tcl_seconds": round(tcl_seconds, 1),
        "overall": {
            "break_sites": len(site_list), "found_sites": len(found), "recall": pct(len(found), len(site_list)),
            "break_occurrences": len(occurrences), "found_occurrences": occ_found,
            "recall_occurrences": pct(occ_found, len(occurrences)),
            "static_sites": len(static), "static_found": len(static_found),
            "recall_static": pct(len(static_found), len(static)),
            "findings": len(scored), "executed_graph_break_findings": tp + fp + buckets["shadowed"],
            "TP": tp, "FP": fp, "shadowed": buckets["shadowed"], "not_executed": buckets["not-executed"],
            "other_category": buckets["other-category"], "precision": pct(tp, tp + fp),
        },
        "per_rule": {code: dict(c) for code, c in sorted(per_rule.items())},
        "per_gb": dict(sorted(per_gb.items())),
        "breaks": [{**{k: v for k, v in s.items() if k != "stacks"}, "path": short(s["path"], roots),
                    "source": shape(s["path"]).source(s["line"]),
                    "stack": [f"{short(p, roots)}:{ln} {fn}" for p, ln, fn in (s["stacks"][0] if s["stacks"] else [])]}
                   for s in site_list],
        "findings": [{**e, "path": short(os.path.realpath(e["path"]), roots)} for e in scored],
        "failed_models": models_failed,
    }


# ------------------------------------------------------------------------------------------
# printing


def table(rows, headers):
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *rows)]
    line = "  ".join(f"{{:{'<' if i == 0 else '>'}{w}}}" for i, w in enumerate(widths))
    out = [line.format(*headers), line.format(*["-" * w for w in widths])]
    out += [line.format(*[("" if x is None else x) for x in r]) for r in rows]
    return "\n".join(out)


def report(summary):
    o = summary["overall"]
    v = summary["versions"]
    print("tcl accuracy on real model code")
    print("versions: " + ", ".join(f"{k} {val}" for k, val in v.items())
          + (" (torchvision native ops stubbed, see eval/tv_stub.py)" if summary["torchvision_stubbed"] else ""))
    ok = [n for n, m in summary["models"].items() if not m["error"]]
    print(f"models: {len(ok)} ran" + (f", {len(summary['failed_models'])} failed: "
                                      + ", ".join(f"{n} ({e})" for n, e in summary["failed_models"])
                                      if summary["failed_models"] else ""))
    print(f"tcl: {summary['files_checked']} library files checked in {summary['tcl_seconds']}s, "
          f"{summary['files_skipped_by_tcl']} skipped by its prefilter, {len(summary['tcl_errors'])} errors")
    print()
    print(table([
        ["recall (break sites)", f"{o['found_sites']}/{o['break_sites']}", o["recall"]],
        ["recall (per-model occurrences)", f"{o['found_occurrences']}/{o['break_occurrences']}", o["recall_occurrences"]],
        ["recall (statically visible GB ids, class a)", f"{o['static_found']}/{o['static_sites']}", o["recall_static"]],
        ["precision (executed graph-break findings)", f"{o['TP']}/{o['TP'] + o['FP']}", o["precision"]],
    ], ["metric", "count", "value"]))
    print(f"findings: {o['findings']} in executed files; TP {o['TP']}, FP {o['FP']}, shadowed {o['shadowed']}, "
          f"on lines never executed {o['not_executed']}, non-graph-break rules {o['other_category']}")
    print()
    print("per model")
    print(table([[n, m["library"], m["mode"], m["breaks"], m["executed_files"], m["seconds"], m["error"] or ""]
                 for n, m in summary["models"].items()],
                ["model", "library", "mode", "breaks", "files", "sec", "error"]))
    print()
    print("per rule (findings in executed files)")
    cols = ["TP", "FP", "shadowed", "not-executed", "other-category"]
    rows = []
    for code, c in summary["per_rule"].items():
        judged = c.get("TP", 0) + c.get("FP", 0)
        rows.append([code] + [c.get(k, 0) for k in cols] + [round(c.get("TP", 0) / judged, 3) if judged else "-"])
    print(table(rows, ["rule"] + cols + ["precision"]))
    print()
    print("per GB id (unique break sites)")
    print(table([[gb, r["class"], r["sites"], r["hits"], r["misses"], r["occurrences"], r["gb_type"][:60]]
                 for gb, r in summary["per_gb"].items()],
                ["gb", "class", "sites", "hits", "misses", "occurrences", "gb_type"]))
    print()
    misses = [b for b in summary["breaks"] if not b["found_by"]]
    print("misses by category (automatic; see docs/accuracy.md for the hand-grouped view)")
    print(table([[cat, n] for cat, n in Counter(b["miss_category"] for b in misses).most_common()], ["category", "sites"]))
    print()
    print(f"misses ({len(misses)})")
    for b in misses:
        print(f"  {b['path']}:{b['line']} {b['gb']} [{b['miss_category']}] models={','.join(b['models'])}")
        print(f"      | {b['source']}")
        print(f"      why: {b['miss_reason']}")
    print()
    fps = [f for f in summary["findings"] if f["bucket"] == "FP"]
    print(f"false positives ({len(fps)})")
    for f in fps:
        print(f"  {f['path']}:{f['line']} {f['code']} in {f['function']}()" + (f"  [{f['note']}]" if f.get("note") else ""))
        print(f"      | {f['source']}")
        print(f"      tcl: {f['message'].split(' (in ')[0][:160]}")
    shadowed = [f for f in summary["findings"] if f["bucket"] == "shadowed"]
    if shadowed:
        print()
        print(f"shadowed ({len(shadowed)}): executed, no break, but the frame was already dropped to eager")
        for f in shadowed:
            print(f"  {f['path']}:{f['line']} {f['code']}  | {f['source']}")
            print(f"      by {f['shadowed_by']}")
    report_recompiles(summary)
    hits = [b for b in summary["breaks"] if b["found_by"]]
    print()
    print(f"found breaks ({len(hits)})")
    for b in hits:
        print(f"  {b['path']}:{b['line']} {b['gb']} <- {','.join(b['found_by'])}  | {b['source']}")


def report_recompiles(summary):
    r = summary.get("recompiles")
    if not r:
        return
    print()
    print(f"per library (split {summary.get('split', '?')})")
    cols = ["break_sites", "found", "TP", "FP", "recompile_sites", "recompile_found", "recompile_TP", "recompile_FP"]
    print(table([[lib] + [row.get(c, 0) for c in cols] for lib, row in summary["per_library"].items()],
                ["library"] + cols))
    print()
    print(f"persistent recompiles (three shapes): {r['models_three_shapes']} models ran all three, "
          f"{len(r['models_persistent'])} kept recompiling; sites found {r['found']}/{r['sites']} "
          f"(recall {r['recall']}), persistent-rule findings TP {r['TP']} FP {r['FP']} "
          f"(precision {r['precision']}), masked {r['masked']}, on lines not executed {r['not_executed']}")
    for site in r["site_list"]:
        print(f"  {site['path']}:{site['line']} [{site['kind']}] <- {','.join(site['found_by']) or 'MISSED'} "
              f"models={','.join(site['models'])}")
        print(f"      | {site['source']}")
        if site["reasons"]:
            print(f"      guard: {site['reasons'][0][:150]}")
    for f in r["findings"]:
        if f["bucket"] in ("FP", "masked"):
            print(f"  {f['bucket']} {f['path']}:{f['line']} {f['code']} in {f['function']}()  | {f['source']}")
    if r["models_without"]:
        print("  no three-shape run: " + "; ".join(f"{n} ({e[:80]})" for n, e in r["models_without"].items()))


def user_entries(names, results_dir, reuse, python=None):
    """(builder files of `names`, their entries as tcl.entries.EntrySpec) for --reach user.
    `python`: the interpreter of the environment the models ran in (their libraries must
    build there); the default is this one."""
    import inspect

    from tcl.entries import parse, submodule_entries

    path = os.path.join(results_dir, "entries.json")
    known = _load(path) if reuse and os.path.exists(path) else {}
    # an entry recorded before entries_of.py named free-variable and submodule classes is named again
    todo = [n for n in names if n not in known or known[n].get("problem", "").startswith("build:")
            or ("entry" in known[n] and ("bindings" not in known[n] or "modules" not in known[n]))]
    if todo:
        env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=ROOT)
        subprocess.run([python or sys.executable, os.path.join(HERE, "entries_of.py"), path + ".part", *todo],
                       check=True, cwd=ROOT, env=env)
        known.update(_load(path + ".part"))
        with open(path, "w", encoding="utf-8") as f:
            json.dump(known, f, indent=1, sort_keys=True)
    files, specs, problems = set(), [], []
    for name in names:
        files.add(os.path.realpath(inspect.getsourcefile(MODELS[name][2])))
        item = known.get(name, {})
        if "entry" in item:
            bindings = tuple((k, tuple(v)) for k, v in sorted(item.get("bindings", {}).items()))
            specs.append(parse(item["entry"], f"entry of {name}", item.get("file"), bindings))
            specs.extend(submodule_entries(item, f"entry of {name}"))
        else:
            problems.append((name, item.get("problem", "not recorded")))
    steps = os.path.join(HERE, "corpus", "_steps.py")
    files.add(os.path.realpath(steps))
    print(f"user side: {len(specs)} entries over {len(files)} builder files; "
          f"{len(problems)} models without one: {problems[:3]}", file=sys.stderr)
    return sorted(files), list(dict.fromkeys(specs))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", help="comma-separated names (default: the 30 DEFAULT models); 'all' for every model")
    parser.add_argument("--json", help="write the full result (every break, finding and bucket) here")
    parser.add_argument("--jobs", type=int, default=2, help="models run in parallel (default 2)")
    parser.add_argument("--timeout", type=int, default=240, help="seconds per model (default 240)")
    parser.add_argument("--results-dir", help="keep each model's oracle output here (default: a temp dir)")
    parser.add_argument("--reuse", action="store_true", help="with --results-dir: reuse outputs already there")
    parser.add_argument("--list", action="store_true", help="list the models and exit")
    parser.add_argument(
        "--eager-first", action="store_true",
        help="compile the model object the eager (coverage) run already called, as sessions 1-2 "
        "did; by default the compiled run gets a fresh copy, like a user's first compiled call",
    )
    parser.add_argument(
        "--assume", choices=("model", "none"), default="model",
        help="model (default): tell tcl each model's mode, dtype and device (assume training=..., "
        "dtype=float32, device=cpu), one tcl run per mode; none: one run without assumptions",
    )
    parser.add_argument(
        "--split", choices=("dev", "dev2", "dev3", "heldout", "heldout2", "heldout3", "all"), default="dev",
        help="which part of the corpus to score (eval/corpus/__init__.py SPLITS): dev (default; "
        "the part tcl is tuned on), dev2 and dev3 (a second and a third development part, each "
        "scored apart from dev), "
        "heldout (only to measure), heldout2 and heldout3 (a second and "
        "a third held-back part, only to measure), or all (each split scored apart)",
    )
    parser.add_argument(
        "--reach", choices=("library", "library-imports", "user"), default="library",
        help="library (default): check the libraries' files, their own entries (forwards, ...); "
        "library-imports: the same with --follow-imports (calls into other installed packages); "
        "user: check only the corpus builder files (the users' code) from the entries each model "
        "compiles (eval/entries_of.py, as pytest --tcl-record records them) with --follow-imports",
    )
    parser.add_argument("--entries-python", help="with --reach user: the python of the environment the models "
                        "ran in, to build them and name their entries (default: this one)")
    args = parser.parse_args(argv)
    if args.list:
        for name, (lib, mode, _) in MODELS.items():
            print(f"{name:28s} {lib:24s} {mode:5s} {SPLIT[name]:7s} {'default' if name in DEFAULT else 'extra'}")
        return 0
    if args.models == "all":
        names = list(MODELS)
    elif args.models:
        names = [n.strip() for n in args.models.split(",") if n.strip()]
        unknown = [n for n in names if n not in MODELS]
        if unknown:
            parser.error(f"unknown models: {', '.join(unknown)} (see --list)")
    else:
        names = list(DEFAULT)
    if args.split != "all":
        names = [n for n in names if SPLIT[n] == args.split]
    started = time.time()
    tmp = None
    results_dir = args.results_dir
    if results_dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="tcl_eval_")
        results_dir = tmp.name
    print(f"running {len(names)} models ({args.jobs} at a time)...", file=sys.stderr, flush=True)
    results = run_models(names, args.jobs, args.timeout, results_dir, args.reuse, args.eager_first)
    splits = sorted({SPLIT[n] for n in names})
    out = {}
    for split in splits:
        part = [n for n in names if SPLIT[n] == split]
        user_side = (user_entries(part, results_dir, args.reuse, args.entries_python)
                     if args.reach == "user" else None)
        summary = evaluate(results, part, args.assume, user_side, follow_imports=args.reach == "library-imports")
        summary["reach"] = args.reach
        summary["split"] = split
        summary["assume"] = args.assume
        summary["command"] = "python eval/run_eval.py " + " ".join(argv if argv is not None else sys.argv[1:])
        summary["total_seconds"] = round(time.time() - started, 1)
        if len(splits) > 1:
            print(f"\n======== split: {split} ({len(part)} models) ========")
        report(summary)
        out[split] = summary
    print(f"\ntotal {round(time.time() - started, 1)}s")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(out if len(splits) > 1 else out[splits[0]], f, indent=1)
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
