"""Runtime ground truth for the user-style scripts in this folder, or in --dir (GitHub issue 16).

    python eval/user_scripts/run.py                 # every script here -> truth.json
    python eval/user_scripts/run.py gpt2_generate_greedy t5_generate   # only these (merged into truth.json)
    python eval/user_scripts/run.py --out OTHER.json --timeout 300
    python eval/user_scripts/run.py --dir eval/user_scripts_heldout   # the scripts in DIR -> DIR/truth.json

Each script runs in a fresh subprocess (this file again, with ``--child``): a bootstrap that

* replaces ``torch.compile`` by a wrapper that passes ``backend="eager"`` (and drops ``mode`` /
  ``options``, which only mean something to inductor), so every compile the script makes --
  ``torch.compile(f)``, ``@torch.compile``, ``model.compile()`` -- runs Dynamo only;
* turns on the ``graph_breaks`` and ``recompiles`` log artifacts
  (``torch._logging.set_logs``) and keeps every record of the ``torch._dynamo`` logger with a
  ``logging.Handler``.  Dynamo prints a break's user traceback only the first time it sees a
  (reason, location) pair; that de-duplication is switched off so every record has its frames;
* runs the script with ``runpy.run_path(script, run_name="__main__")`` in a scratch directory
  (the current directory of the child is a fresh temporary folder, removed afterwards).

A break site is the location Dynamo names in "Graph break ... in user code at FILE:LINE", the
innermost frame it was tracing when it broke.  When that frame is inside torch itself (a torch
function Dynamo traced), the innermost frame outside torch is recorded too, as ``caller``.
Paths are given relative to site-packages for installed code, relative to the repository for
the scripts, absolute otherwise.  Sites are de-duplicated per script by (path, line).

The installed torchvision wheel in this project's venv cannot load its native library on the
CPU build of torch, and transformers / timm import it; the child defines torchvision's operator
schemas first (eval/tv_stub.py, torch only) when, and only when, they are missing.

Output, ``truth.json`` in the scripts' folder (``--dir``, default this file's folder; or ``--out``)::

    {script_name: {"breaks": [{"path", "line", "reason", "gb", ["caller": {"path", "line"}]}],
                   "recompiles": [{"function", "path", "line", "reason"}],
                   "graph_break_records": int, "torch": str, "seconds": float,
                   "error": null or one line}}

Only the standard library and torch are used.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import subprocess
import sys
import sysconfig
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SITE_DIRS = sorted({os.path.realpath(sysconfig.get_paths()[k]) for k in ("purelib", "platlib")}, key=len,
                   reverse=True)
TORCH_DIRS = [os.path.join(d, "torch") + os.sep for d in SITE_DIRS]

_BREAK_AT = re.compile(r"Graph break\b.*? in user code at (.+):(\d+)\s*$", re.MULTILINE)
_FRAME = re.compile(r'^\s*File "(.+?)", line (\d+), in (.+)$', re.MULTILINE)
_GB = re.compile(r"\bgb(\d{4})\b", re.IGNORECASE)
_RECOMPILE = re.compile(r"Recompiling function (\S+) in (.+):(\d+)")
_OBJ_ID = re.compile(r"\b\d{9,}\b")
_NOT_SCRIPTS = {"run.py", "score.py"}


def scripts_in_folder(folder: str = HERE) -> list[str]:
    return sorted(f[:-3] for f in os.listdir(folder)
                  if f.endswith(".py") and f not in _NOT_SCRIPTS and not f.startswith("_"))


def rel(path: str) -> str:
    """site-packages-relative for installed code, repo-relative for the scripts, else as is."""
    if path.startswith("<"):
        return path
    real = os.path.realpath(path)
    for d in SITE_DIRS:
        if real.startswith(d + os.sep):
            return os.path.relpath(real, d)
    if real.startswith(REPO + os.sep):
        return os.path.relpath(real, REPO)
    return real


def one_line(text: str, limit: int = 200) -> str:
    text = _OBJ_ID.sub("<id>", " ".join(text.split()))  # object ids differ from run to run
    return text if len(text) <= limit else text[: limit - 3] + "..."


def reason_of(text: str) -> str:
    """The gb_type of a Dynamo message: the non-empty line just above "Explanation:"."""
    lines = [ln.strip() for ln in text.splitlines()]
    for i, ln in enumerate(lines):
        if ln.startswith("Explanation:"):
            for prev in reversed(lines[:i]):
                if prev:
                    return one_line(prev.removeprefix("Graph Break Reason:"))
    for ln in lines[1:]:
        if ln:
            return one_line(ln.removeprefix("Graph Break Reason:"))
    return ""


def parse_breaks(records: list[str]) -> list[dict]:
    sites: dict[tuple[str, int], dict] = {}
    for text in records:
        m = _BREAK_AT.search(text)
        if not m:
            continue  # e.g. the warning-level note that Tensor.item() breaks the graph
        path, line = rel(m.group(1)), int(m.group(2))
        if (path, line) in sites:
            continue
        site = {"path": path, "line": line, "reason": reason_of(text)}
        gb = _GB.search(text)
        if gb:
            site["gb"] = f"GB{gb.group(1)}"
        if any(os.path.realpath(m.group(1)).startswith(t) for t in TORCH_DIRS):
            i = text.find("User code traceback:")
            frames = _FRAME.findall(text[i:]) if i >= 0 else []
            outside = [(f, n) for f, n, _ in frames
                       if not f.startswith("<") and not any(os.path.realpath(f).startswith(t) for t in TORCH_DIRS)]
            if outside:
                site["caller"] = {"path": rel(outside[-1][0]), "line": int(outside[-1][1])}
        sites[(path, line)] = site
    return list(sites.values())


def parse_recompiles(records: list[str]) -> list[dict]:
    out = []
    for text in records:
        m = _RECOMPILE.search(text)
        if m:
            guards = [ln.strip()[2:] for ln in text.splitlines() if ln.strip().startswith("- ")]
            entry = {"function": m.group(1), "path": rel(m.group(2)), "line": int(m.group(3)),
                     "reason": one_line(guards[0] if guards else text.splitlines()[-1])}
        elif "recompile_limit" in text or "cache_size_limit" in text:
            entry = {"function": None, "path": None, "line": None, "reason": one_line(text)}
        else:
            continue
        if entry not in out:
            out.append(entry)
    return out


# --------------------------------------------------------------------------- the child


class _Keep(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.records.append(record.getMessage())
        except Exception:
            pass


def child(script: str, out_path: str) -> int:
    import runpy

    import torch

    try:  # torchvision's native library missing (see the module docstring)
        torch._C._dispatch_find_schema_or_throw("torchvision::nms", "")
    except RuntimeError:
        sys.path.insert(0, os.path.dirname(HERE))
        import tv_stub

        tv_stub.install()
        sys.path.pop(0)

    original = torch.compile

    def compile_eager(model=None, **kwargs):
        kwargs.pop("mode", None)
        kwargs.pop("options", None)
        kwargs["backend"] = "eager"
        return original(model, **kwargs)

    torch.compile = compile_eager

    keep = _Keep()
    torch._logging.set_logs(graph_breaks=True, recompiles=True)
    logging.getLogger("torch._dynamo").addHandler(keep)
    checker = getattr(torch._dynamo.utils, "graph_break_dup_warning_checker", None)
    if checker is not None:
        checker.add = lambda key: True  # every break record keeps its user traceback

    started = time.time()
    error = None
    sys.argv = [script]
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        if exc.code not in (None, 0):
            error = f"SystemExit: {exc.code}"
    except BaseException as exc:  # the script's own failure is a result, not a crash
        first = next((ln for ln in str(exc).splitlines() if ln.strip()), "")
        error = one_line(f"{type(exc).__name__}: {first}")
    seconds = time.time() - started
    records = list(keep.records)
    result = {
        "breaks": parse_breaks(records),
        "recompiles": parse_recompiles(records),
        "graph_break_records": sum(1 for r in records if _BREAK_AT.search(r)),
        "torch": torch.__version__,
        "seconds": round(seconds, 1),
        "error": error,
    }
    with open(out_path, "w") as f:
        json.dump(result, f, indent=1)
    return 0


# --------------------------------------------------------------------------- the parent


def run_one(name: str, timeout: int, folder: str = HERE) -> dict:
    script = os.path.join(folder, name + ".py")
    with tempfile.TemporaryDirectory(prefix="tcl-user-") as scratch:
        out = os.path.join(scratch, "result.json")
        log = os.path.join(scratch, "child.log")
        env = dict(os.environ, TMPDIR=scratch, PYTHONDONTWRITEBYTECODE="1")
        env.pop("TORCH_LOGS", None)
        started = time.time()
        try:
            with open(log, "w") as f:
                proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", script, out],
                                      cwd=scratch, env=env, stdout=f, stderr=subprocess.STDOUT, timeout=timeout)
            rc = proc.returncode
        except subprocess.TimeoutExpired:
            rc = None
        wall = round(time.time() - started, 1)
        if os.path.exists(out):
            with open(out) as f:
                result = json.load(f)
        else:
            with open(log) as f:
                tail = [ln for ln in f.read().splitlines() if ln.strip()][-1:] or [""]
            import torch

            why = f"timed out after {timeout} s" if rc is None else f"child exited {rc}: {tail[0]}"
            result = {"breaks": [], "recompiles": [], "graph_break_records": 0, "torch": torch.__version__,
                      "seconds": None, "error": one_line(why)}
        result["wall_seconds"] = wall
        return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help="script names (default: every script in --dir)")
    ap.add_argument("--dir", default=HERE, help="folder of the scripts (default this file's folder)")
    ap.add_argument("--out", help="truth file (default DIR/truth.json)")
    ap.add_argument("--timeout", type=int, default=600, help="seconds a script (default 600)")
    ap.add_argument("--child", nargs=2, metavar=("SCRIPT", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(*args.child)

    folder = os.path.abspath(args.dir)
    args.out = args.out or os.path.join(folder, "truth.json")
    names = [n.removesuffix(".py") for n in args.names] or scripts_in_folder(folder)
    truth = {}
    if args.names and os.path.exists(args.out):
        with open(args.out) as f:
            truth = json.load(f)
    for name in names:
        result = run_one(name, args.timeout, folder)
        truth[name] = result
        print(f"{name}: {len(result['breaks'])} break sites, {len(result['recompiles'])} recompiles, "
              f"{result['wall_seconds']} s" + (f"  ERROR {result['error']}" if result["error"] else ""), flush=True)
        for b in result["breaks"]:
            where = f"  (from {b['caller']['path']}:{b['caller']['line']})" if "caller" in b else ""
            print(f"    {b['path']}:{b['line']}  {b.get('gb', '-')}  {b['reason']}{where}", flush=True)
    truth = dict(sorted(truth.items()))
    with open(args.out, "w") as f:
        json.dump(truth, f, indent=1)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
