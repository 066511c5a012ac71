"""Reporting `tcl verify`'s results: the per-file summary rows (examples, errors, time, finding
statuses, missed breaks, recompiles, persistent recompiles), the text report (one line per
finding, then missed breaks, a block per persistent recompile with its cause, the finding that
predicted it or ``missed``, its remedy and the recompile limit, the other recompiles, what the
exploration could not vary, examples with problems and the summary table) and the JSON report."""

from __future__ import annotations

import json

from .examples import ExampleRun, Source
from .common import _display


STATUSES = ("confirmed", "not-confirmed", "shadowed", "not-reached")


def summary_rows(report: dict, runs: list[ExampleRun], sources: list[Source],
                 startup: dict[str, float] | None = None) -> list[dict]:
    rows: dict[str, dict] = {}

    def row(path: str) -> dict:
        return rows.setdefault(path, {"file": path, "examples": 0, "errors": 0, "seconds": 0.0, "startup": 0.0,
                                      **{s: 0 for s in STATUSES}, "missed": 0, "recompiles": 0,
                                      "unexpected_recompiles": 0, "persistent": 0})

    for source in sources:
        row(_display(source.path) if source.path else source.label)["startup"] += (startup or {}).get(source.label, 0.0)
    for run in runs:
        r = row(_display(run.source.path) if run.source.path else run.source.label)
        if run.index is not None:
            r["examples"] += 1
            r["seconds"] += run.seconds
        if run.status != "ok":
            r["errors"] += 1
    for finding in report["findings"]:
        row(finding["path"])[finding["status"]] += 1
    for brk in report["runtime_breaks"]:
        if brk["in_checked_file"] and not brk["matched"]:
            row(brk["path"])["missed"] += 1
    for rec in report["recompiles"]:
        path = rec.get("path") or "?"
        if path in rows:
            rows[path]["recompiles"] += 1
            rows[path]["unexpected_recompiles"] += 0 if rec.get("expected") else 1
    for group in report.get("persistent_recompiles") or []:
        if group.get("path") in rows:
            rows[group["path"]]["persistent"] += 1
    for r in rows.values():
        r["seconds"] = round(r["seconds"], 2)
        r["startup"] = round(r["startup"], 2)
    return sorted(rows.values(), key=lambda r: r["file"])


def write_text(report: dict, rows: list[dict], out) -> None:
    for f in report["findings"]:
        head = f"{f['path']}:{f['line']}:{f['col']}: {f['code']} {f['status']}"
        if f["status"] == "confirmed" and f["kind"] == "crash":
            out.write(f"{head} (the compiled call raised; the uncompiled one runs) {f['runtime_reason']}\n")
        elif f["status"] == "not-confirmed" and f["kind"] == "crash":
            out.write(f"{head}: the line ran and no compiled call raised there\n")
        elif f["status"] == "confirmed" and f["kind"] == "recompile":
            out.write(f"{head} (recompiled on {f['recompile']['trigger']}) {f['runtime_reason']}\n")
        elif f["status"] == "confirmed":
            at = "" if f["runtime_line"] == f["line"] else f" at line {f['runtime_line']}"
            out.write(f"{head} [{f['gb']}] {f['runtime_reason']}{at}\n")
        elif f["status"] == "shadowed":
            s = f["shadowed_by"]
            via = ("" if (s["frame_line"] == s["line"] and s["path"] == f["path"]) or s["frame_line"] <= s["function_line"]
                   else f" (reached from line {s['frame_line']})")
            inside = f" inside a {s['inside']}" if s["inside"] != "frame" else ""
            frame = f"{s['function']}()" + (f" from line {s['frame_start']} on" if s["frame_start"] > s["function_line"] else "")
            out.write(f"{head}: the break at {s['path']}:{s['line']} [{s['gb']}]{via}{inside} made Dynamo "
                      f"run {frame} eagerly; this line never reached the compiler\n")
        elif f["status"] == "not-confirmed" and f["kind"] == "recompile":
            out.write(f"{head}: the line ran and no recompile traced back to it\n")
        elif f["status"] == "not-confirmed":
            out.write(f"{head}: the line ran and nothing broke there (expected {f['static_gb']})\n")
        else:
            out.write(f"{head}: the line never ran in the examples\n")
    for brk in report["runtime_breaks"]:
        if brk["in_checked_file"] and not brk["matched"]:
            out.write(f"{brk['path']}:{brk['line']}: missed [{brk['gb']}] {brk['reason']} "
                      f"(in {', '.join(brk['examples'][:3])})\n")
    outside = [b for b in report["runtime_breaks"] if not b["in_checked_file"]]
    for brk in outside:
        out.write(f"{brk['path']}:{brk['line']}: break outside the checked files [{brk['gb']}] {brk['reason']}\n")
    seen = set()
    for crash in report.get("crashes") or []:  # one per phase that met it: the first of each line
        if not crash["findings"] and (crash["path"], crash["line"]) not in seen:
            seen.add((crash["path"], crash["line"]))
            out.write(f"{crash['path']}:{crash['line']}: missed: the compiled call raised on call {crash['call']} "
                      f"({crash['error']}); the uncompiled one runs [{crash['example']}]\n")
    write_persistent(report.get("persistent_recompiles") or [], out)
    unexpected = [r for r in report["recompiles"] if not r.get("expected")]
    expected = len(report["recompiles"]) - len(unexpected)
    persistent = sum(1 for r in unexpected if r.get("persistent"))
    if report["recompiles"]:
        out.write(f"\nrecompiles: {len(report['recompiles'])} ({expected} by design: the first change of "
                  f"each size or int, train/eval toggle; {persistent} persistent, above)\n")
        for r in unexpected:
            if r.get("persistent"):
                continue
            out.write(f"  {r.get('path')}:{r.get('line')} {r.get('function')}() on {r['trigger']} "
                      f"[{r['example']}]: {r['reason']}\n")
    partial = [e for e in report["examples"] if e.get("not_varied") or e.get("exploration_stopped")]
    if partial:
        out.write("\nrecompile exploration:\n")
        for e in partial:
            for item in e.get("not_varied") or []:
                out.write(f"  {e['name']}: could not vary {item['what']} ({item['why']})\n")
            if e.get("exploration_stopped"):
                out.write(f"  {e['name']}: {e['exploration_stopped']}\n")
    bad = [e for e in report["examples"] if e["status"] != "ok" or e.get("recompile_error") or e.get("warning")]
    if bad:
        out.write("\nexamples with problems:\n")
        for e in bad:
            if e["status"] != "ok":
                out.write(f"  {e['name']}: {e['status']}: {e['error']}\n")
                continue
            if e.get("warning"):
                out.write(f"  {e['name']}: warning: {e['warning']}\n")
            if e.get("recompile_error"):
                out.write(f"  {e['name']}: recompile check failed: {e['recompile_error']}\n")
    columns = ("examples", "errors", "seconds", "startup", *STATUSES, "missed", "recompiles", "persistent")
    width = max([len(r["file"]) for r in rows] + [5])

    def line(name, values) -> str:
        cells = "".join(f" {values[c]:>{max(len(c), 7)}}" for c in columns)
        return name.ljust(width) + cells + "\n"

    out.write("\n" + line("file", {c: c for c in columns}))
    totals = {c: 0 for c in columns}
    for r in rows:
        out.write(line(r["file"], r))
        for c in columns:
            totals[c] += r[c]
    totals["seconds"] = round(totals["seconds"], 2)
    totals["startup"] = round(totals["startup"], 2)
    out.write(line("total", totals))
    env = report["environment"]
    out.write(f"torch {env['torch']} on {env['device']}, backend {env['backend']}, mode {env['mode']}: "
              f"{env['examples']} examples in {env['wall_seconds']:.1f}s wall, jobs {env['jobs']}\n")


def write_persistent(groups: list[dict], out) -> None:
    """A block per persistent recompile: where, why, which rule saw it coming, how to fix it."""
    for g in groups:
        where = f"{g['path']}:{g['line']}" if g.get("path") else "?"
        changes = ", ".join(t for t in g["triggers"][:4] if t) + (", ..." if len(g["triggers"]) > 4 else "")
        out.write(f"{where}: recompile {g['guard']} in {g['frame_name']} on {changes} "
                  f"[{', '.join(g['examples'][:2])}{', ...' if len(g['examples']) > 2 else ''}]\n")
        out.write(f"    cause: {g['cause']['text']}\n")
        if g["predicted_by"]:
            out.write(f"    predicted by {', '.join(_prediction(p, g) for p in g['predicted_by'])}\n")
        elif g.get("requested"):
            out.write("    requested: dynamic=False compiles every new size (no rule flags it)\n")
        else:
            out.write("    missed: no rule flags this line\n")
        out.write(f"    remedy: {g['remedy']}\n")
        if g.get("limit_note"):
            out.write(f"    {g['limit_note']}\n")


def _prediction(p: dict, group: dict) -> str:
    if p["how"] == "break":
        return f"{p['code']} (the graph break on this line hands the value to the next frame)"
    if p["how"] == "function":
        return f"{p['code']} (line {p['line']}, same function)"
    return p["code"] + (f" (line {p['line']})" if p["line"] != group["line"] else "")


def write_json(report: dict, out) -> None:
    json.dump(report, out, indent=2)
    out.write("\n")
