"""Score `tcl check --follow-imports` on the user-style scripts against their runtime truth.

    python eval/user_scripts/score.py                       # every script in truth.json
    python eval/user_scripts/score.py gpt2_generate_greedy  # only these
    python eval/user_scripts/score.py --tcl-root /path/to/other/checkout --json OUT.json
    python eval/user_scripts/score.py --dir eval/user_scripts_heldout   # scripts and truth.json in DIR
    python eval/user_scripts/score.py --no-follow-imports   # tcl check without --follow-imports

For each script it runs (from the repository root, PYTHONPATH = --tcl-root, default this
checkout)::

    PYTHON -m tcl check --follow-imports --no-cache --no-config -j 1 --file-timeout 600 \\
        --format json eval/user_scripts/NAME.py

(NAME.py in ``--dir``, default this file's folder; without --follow-imports under
``--no-follow-imports``) and compares the findings with DIR/truth.json
(written by run.py; or ``--truth``).  A finding's location is its
library location ("library_path", "library_line" .. "library_end_line") when it has one, else
its place in the script ("path", "line" .. "end_line").  A break site is *found* when some
finding's location is in the same file and its line range covers the break line.  A break
Dynamo reports inside torch itself (e.g. the graph_break() in torch/optim/optimizer.py) is
matched at its "caller", the innermost frame outside torch (tcl does not report inside torch).
A finding is *on a break* (TP) when its location covers some break site's line (or caller's
line), else it is *elsewhere*.  "distinct" counts findings' distinct locations (tcl reports a
library line once per user line that reaches it).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def same_file(finding_path: str, truth_path: str) -> bool:
    """truth paths are site-packages- or repo-relative; finding paths absolute or repo-relative."""
    a = os.path.normpath(os.path.join(REPO, finding_path))
    b = os.path.normpath(truth_path)
    return a == b or a.endswith(os.sep + b)


def location(f: dict) -> tuple[str, int, int]:
    if f.get("library_path"):
        return f["library_path"], f["library_line"], f.get("library_end_line") or f["library_line"]
    return f["path"], f["line"], f.get("end_line") or f["line"]


def targets(site: dict) -> list[tuple[str, int]]:
    """Where a finding for this break site may sit: the site, or for a break inside torch its caller."""
    if "caller" in site:
        return [(site["caller"]["path"], site["caller"]["line"])]
    return [(site["path"], site["line"])]


def covers(loc: tuple[str, int, int], target: tuple[str, int]) -> bool:
    return same_file(loc[0], target[0]) and loc[1] <= target[1] <= loc[2]


def label(site: dict) -> str:
    where = f"{site['path']}:{site['line']}"
    return where + (f" (called at {site['caller']['path']}:{site['caller']['line']})" if "caller" in site else "")


def nearest(site: dict, locs: list) -> str:
    """For a missed site: the closest finding in the same file, if any (e.g. a multi-line `if (`
    reported at its tensor operand's line)."""
    path, line = targets(site)[0]
    near = [(min(abs(a - line), abs(b - line)), a, b) for p, a, b in locs if same_file(p, path)]
    if not near:
        return ""
    _, a, b = min(near)
    return f"  (nearest finding in {os.path.basename(path)}: line {a}" + (f"-{b})" if b != a else ")")


def run_tcl(name: str, python: str, tcl_root: str, file_timeout: int, folder: str = HERE,
            follow_imports: bool = True) -> tuple[dict, float, int]:
    # -P: the current directory (this checkout) is not put before PYTHONPATH, so --tcl-root's
    # tcl is the one that runs (`python -m tcl` from here would import this checkout's)
    cmd = [python, "-P", "-m", "tcl", "check", *(["--follow-imports"] if follow_imports else []),
           "--no-cache", "--no-config", "-j", "1",
           "--file-timeout", str(file_timeout), "--format", "json",
           os.path.relpath(os.path.join(folder, f"{name}.py"), REPO)]
    env = dict(os.environ, PYTHONPATH=tcl_root)
    started = time.time()
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
    seconds = time.time() - started
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        report = {"findings": [], "errors": [f"no JSON (exit {proc.returncode}): {proc.stderr.strip()[-300:]}"],
                  "notes": []}
    return report, seconds, proc.returncode


def score(name: str, truth: dict, report: dict) -> dict:
    sites = truth["breaks"]
    locs = [location(f) for f in report["findings"]]
    found = [s for s in sites if any(covers(loc, t) for loc in locs for t in targets(s))]
    all_targets = [t for s in sites for t in targets(s)]
    on_break = [loc for loc in locs if any(covers(loc, t) for t in all_targets)]
    return {
        "breaks": len(sites),
        "found": len(found),
        "missed": [label(s) + nearest(s, locs) for s in sites if s not in found],
        "findings": len(locs),
        "distinct": len(set(locs)),
        "on_break": len(on_break),
        "elsewhere": len(locs) - len(on_break),
        "distinct_on_break": len(set(on_break)),
        "distinct_elsewhere": len(set(locs) - set(on_break)),
        "errors": report.get("errors", []),
        "notes": len(report.get("notes", [])),
        "runtime_error": truth.get("error"),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help="script names (default: every script in truth.json)")
    ap.add_argument("--dir", default=HERE, help="folder of the scripts (default this file's folder)")
    ap.add_argument("--truth", help="truth file (default DIR/truth.json)")
    ap.add_argument("--tcl-root", default=REPO, help="checkout whose tcl to run (PYTHONPATH); default this one")
    ap.add_argument("--python", default="/work/venv/bin/python" if os.path.exists("/work/venv/bin/python")
                    else sys.executable)
    ap.add_argument("--file-timeout", type=int, default=600)
    ap.add_argument("--json", dest="json_out", help="write the per-script scores and totals here")
    ap.add_argument("--no-follow-imports", dest="follow_imports", action="store_false",
                    help="check each script without --follow-imports: only the script's own lines can be found")
    args = ap.parse_args(argv)
    folder = os.path.abspath(args.dir)
    args.truth = args.truth or os.path.join(folder, "truth.json")

    with open(args.truth) as f:
        truth = json.load(f)
    names = [n.removesuffix(".py") for n in args.names] or sorted(truth)
    tcl_root = os.path.abspath(args.tcl_root)

    header = f"{'script':28} {'breaks':>6} {'found':>5} {'findings':>8} {'distinct':>8} {'TP':>4} {'else':>5} {'secs':>6}"
    print(header)
    print("-" * len(header))
    rows = {}
    for name in names:
        report, seconds, rc = run_tcl(name, args.python, tcl_root, args.file_timeout, folder, args.follow_imports)
        row = score(name, truth[name], report)
        row.update(seconds=round(seconds, 1), exit=rc)
        rows[name] = row
        print(f"{name:28} {row['breaks']:6} {row['found']:5} {row['findings']:8} {row['distinct']:8} "
              f"{row['on_break']:4} {row['elsewhere']:5} {row['seconds']:6}", flush=True)
        for miss in row["missed"]:
            print(f"    missed {miss}")
        for err in row["errors"]:
            print(f"    tcl error: {str(err)[:200]}")
        if row["runtime_error"]:
            print(f"    runtime error: {row['runtime_error']}")

    keys = ("breaks", "found", "findings", "distinct", "on_break", "elsewhere", "distinct_on_break",
            "distinct_elsewhere", "seconds")
    totals = {k: round(sum(r[k] for r in rows.values()), 1) for k in keys}
    print("-" * len(header))
    print(f"{'total':28} {totals['breaks']:6} {totals['found']:5} {totals['findings']:8} {totals['distinct']:8} "
          f"{totals['on_break']:4} {totals['elsewhere']:5} {totals['seconds']:6}")
    recall = totals["found"] / totals["breaks"] if totals["breaks"] else 0.0
    precision = totals["on_break"] / totals["findings"] if totals["findings"] else 0.0
    print(f"break recall {totals['found']}/{totals['breaks']} = {recall:.3f}; "
          f"findings on a break {totals['on_break']}/{totals['findings']} = {precision:.3f} "
          f"(distinct locations {totals['distinct_on_break']}/{totals['distinct']})")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"tcl_root": tcl_root, "follow_imports": args.follow_imports, "scripts": rows, "totals": totals},
                      f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
