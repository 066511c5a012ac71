"""Shared helpers for the hand-label reproductions (CPU, backend="eager", default dynamo config).

Run a repro from the checkout root:  /work/venvs/eval/bin/python eval/labels/repro/<name>.py

Graph breaks are collected from Dynamo's own graph-break log (torch._logging graph_breaks), not
from torch._dynamo.explain, because explain() does not count a break that makes Dynamo skip the
whole frame (a break inside a loop of an inlined function).
"""
import logging
import os
import re
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.normpath(os.path.join(HERE, "..", "..")))  # eval/ for tv_stub
import tv_stub  # noqa: E402

tv_stub.install()
warnings.simplefilter("ignore")

import torch  # noqa: E402

torch.manual_seed(0)

_AT = re.compile(r"Graph break in user code at (\S+?):(\d+)")
_SITE = re.compile(r'File "[^"]*site-packages/([^"]+)", line (\d+)')


class _Collect(logging.Handler):
    def __init__(self):
        super().__init__()
        self.sites = []

    def emit(self, record):
        msg = record.getMessage()
        first = msg.strip().splitlines()[0] if msg.strip() else ""
        m = _AT.search(msg)
        if m:  # Dynamo's own "Graph break in user code at FILE:LINE" header is authoritative
            p = m.group(1).split("site-packages/")[-1]
            self.sites.append((f"{p}:{m.group(2)}", first[:120]))
            return
        hits = _SITE.findall(msg)
        # the innermost library frame of the user traceback is the break site
        user = msg.split("User code traceback:")[-1]
        uhits = _SITE.findall(user) or hits
        if uhits:
            p, ln = uhits[-1]
            self.sites.append((f"{p}:{ln}", first[:120]))


def _install():
    torch._logging.set_logs(graph_breaks=True)
    h = _Collect()
    for name in list(logging.root.manager.loggerDict):
        if name.endswith("__graph_breaks"):
            lg = logging.getLogger(name)
            lg.addHandler(h)
            lg.propagate = False
            for old in list(lg.handlers):
                if old is not h:
                    lg.removeHandler(old)
    return h


class CountCompiles:
    """backend="eager" that counts how many graphs get compiled (first compile + recompiles)."""

    def __init__(self):
        self.n = 0

    def __call__(self, gm, example_inputs):
        self.n += 1
        return gm.forward


def breaks(fn, *args, **kwargs):
    """torch.compile(fn, backend=eager-counter) once; print graphs compiled and every break site."""
    torch._dynamo.reset()
    h = _install()
    cc = CountCompiles()
    try:
        out = torch.compile(fn, backend=cc)(*args, **kwargs)
    except Exception as ex:  # report what broke before the crash
        out = None
        print(f"RAISED under compile: {type(ex).__name__}: {str(ex)[:160]}")
    print(f"graphs compiled: {cc.n}")
    for site, why in h.sites:
        print(f"  BREAK at {site}: {why}")
    print("UNIQUE BREAK SITES:", ", ".join(sorted({s for s, _ in h.sites})) or "none")
    return out


def recompiles(fn, inputs_list):
    """Compile fn (eager backend), call it on each args tuple, print graphs compiled per call."""
    torch._dynamo.reset()
    h = _install()
    cc = CountCompiles()
    cfn = torch.compile(fn, backend=cc)
    counts = []
    for args in inputs_list:
        before = cc.n
        cfn(*args)
        counts.append(cc.n - before)
    print(f"graphs compiled per call: {counts} (total {cc.n})")
    print("UNIQUE BREAK SITES:", ", ".join(sorted({s for s, _ in h.sites})) or "none")
    return counts


def persistent_report(fn, inputs_list, label="", frames_like=()):
    """Compile fn (backend="eager", default mode), call it on each args tuple under tcl's
    CompileTrace; print compilations per call, every recompile with its failing guard and the
    lines that specialised a size, and the persistent ones (a frame recompiling again on a call
    after its automatic-dynamic recompile). Returns the persistent compilations."""
    root = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
    if root not in sys.path:
        sys.path.insert(0, root)
    from tcl.verify.compile_trace import CompileTrace, persistent

    torch._dynamo.reset()
    # (CompileTrace keeps every compilation: gpytorch compiles more than Dynamo's default 64.)
    cfn = torch.compile(fn, backend="eager")
    with CompileTrace() as trace:
        for args in inputs_list:
            trace.next_call()
            cfn(*args)
    comps = trace.compilations
    per_call = [sum(1 for c in comps if c.call == i) for i in range(len(inputs_list))]
    print(f"{label} compilations per call: {per_call} (total {len(comps)})")
    for c in comps:
        if c.reason is None:
            continue
        where = os.path.relpath(c.path).split("site-packages/")[-1] if c.path else "?"
        specs = "; ".join(f"{s.path.split('site-packages/')[-1]}:{s.line} fixed {s.symbol}={s.value}"
                          for s in c.specialisations)
        print(f"  call {c.call} recompiled {c.function} ({where}:{c.first_line}): {c.reason[:200]}"
              + (f" [specialised: {specs}]" if specs else ""))
    for part in frames_like:  # show that the frame holding the line was compiled (not run eagerly)
        hit = sorted({f"{c.function}@{c.first_line}" for c in comps if part in c.function})
        print(f"  frames compiled matching {part!r}: {', '.join(hit) or 'none'}")
    pers = persistent(comps)
    print(f"  PERSISTENT recompiles: {len(pers)}"
          + "".join(f"\n    call {c.call} {c.function}: {(c.reason or '')[:160]}" for c in pers))
    torch._dynamo.reset()
    return pers
