import torch, torch._dynamo, torch._logging, logging, re, io
SP = "site-packages/"
_records = []
class _H(logging.Handler):
    def emit(self, rec):
        _records.append(rec.getMessage())
_h = _H()
torch._logging.set_logs(graph_breaks=True, recompiles=True)
_lg = logging.getLogger("torch")
for hh in list(_lg.handlers): _lg.removeHandler(hh)
_lg.addHandler(_h)

def _parse(msg):
    # "Graph break in user code at FILE:LINE\nGraph Break Reason: ...\nUser code traceback: ..."
    m = re.search(r"in user code at (\S+):(\d+)", msg)
    loc = f"{m.group(1).split(SP)[-1]}:{m.group(2)}" if m else "?"
    r = re.search(r"Graph Break Reason: (.*)", msg)
    reason = r.group(1)[:150] if r else msg.split("\n")[0][:150]
    frames = re.findall(r'File "([^"]+)", line (\d+), in (\S+)', msg)
    stack = [f"{f.split(SP)[-1]}:{l}" for f, l, _ in frames]
    return loc, reason, stack

def breaks(fn, *args, reset=True, calls=None, **kw):
    """Compile fn with backend=eager, call it (or each args tuple in calls); print each graph break with location."""
    if reset: torch._dynamo.reset()
    for n in list(logging.Logger.manager.loggerDict):
        if n.endswith("__graph_breaks") or n.endswith("__recompiles"):
            lg = logging.getLogger(n)
            for hh in list(lg.handlers):
                if hh is not _h: lg.removeHandler(hh)
            if _h not in lg.handlers: lg.addHandler(_h)
            lg.propagate = False
    del _records[:]
    cf = torch.compile(fn, backend="eager")
    res = None
    if calls is None: calls = [args]
    for a in calls:
        res = cf(*a, **kw)
    out = []
    for msg in _records:
        if "Graph break" in msg:
            loc, reason, stack = _parse(msg)
            out.append((loc, reason, stack))
            print("  BREAK", loc, "|", reason, "| stack:", " <- ".join(reversed(stack[:-1]))[-300:])
        elif "Recompiling" in msg or "recompil" in msg.lower():
            print("  RECOMPILE", msg.replace("\n", " ")[:300])
    print(f"  total breaks logged={len(out)}")
    return res, out

def fullgraph_ok(fn, *args, **kw):
    torch._dynamo.reset()
    try:
        torch.compile(fn, backend="eager", fullgraph=True)(*args, **kw)
        print("  FULLGRAPH OK"); return True
    except Exception as e:
        msg = str(e).split("\n")
        print("  FULLGRAPH FAIL:", type(e).__name__, msg[0][:200], "|", [l for l in msg if "site-packages" in l or "repro/" in l][-2:])
        return False
