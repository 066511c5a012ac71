"""Shared repro helper: compile with backend="eager", collect every graph-break / recompile
record from the torch 2.13 dynamo loggers, print them with file:line (relative to site-packages)."""
import sys, types, importlib.abc, importlib.machinery, logging, re
import torch, torch._dynamo, torch._logging

SP = "site-packages/"

# ---- stub modules for optional heavy deps that the labelled code never touches at run time
class _Dummy:
    def __init__(self, *a, **k): pass
    def __call__(self, *a, **k): return _Dummy()
    def __getattr__(self, n): return _Dummy()
    def __mro_entries__(self, bases): return (object,)
class _StubLoader(importlib.abc.Loader):
    def create_module(self, spec):
        m = types.ModuleType(spec.name); m.__path__ = []; m.__file__ = "<stub %s>" % spec.name
        def _ga(n):
            if n.startswith("__"): raise AttributeError(n)
            return _Dummy()
        m.__getattr__ = _ga
        return m
    def exec_module(self, m): pass
class _StubFinder(importlib.abc.MetaPathFinder):
    def __init__(self, names): self.names = set(names)
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in self.names:
            return importlib.machinery.ModuleSpec(name, _StubLoader(), is_package=True)
        return None
def stub(*names):
    sys.meta_path.insert(0, _StubFinder(names))
class _MissingFinder(importlib.abc.MetaPathFinder):
    """Last on sys.meta_path: a stub for a module no other finder finds (not installed) when
    the code importing it belongs to `importer` (its optional dependencies, not torch's)."""
    def __init__(self, importer): self.importer = importer
    def find_spec(self, name, path, target=None):
        frame = sys._getframe(1)
        while frame is not None and frame.f_globals.get("__name__", "").startswith(("importlib", "_frozen_importlib")):
            frame = frame.f_back
        caller = frame.f_globals.get("__name__", "") if frame is not None else ""
        if caller == self.importer or caller.startswith(self.importer + "."):
            return importlib.machinery.ModuleSpec(name, _StubLoader(), is_package=True)
        return None
def stub_missing(importer):
    sys.meta_path.append(_MissingFinder(importer))

# ---- log collection
_records = []
class _H(logging.Handler):
    def emit(self, rec): _records.append(rec.getMessage())
_h = _H()
torch._logging.set_logs(graph_breaks=True, recompiles=True)
_lg = logging.getLogger("torch")
for hh in list(_lg.handlers): _lg.removeHandler(hh)
_lg.addHandler(_h)

def _hook():
    for n in list(logging.Logger.manager.loggerDict):
        if n.endswith("__graph_breaks") or n.endswith("__recompiles"):
            lg = logging.getLogger(n)
            for hh in list(lg.handlers):
                if hh is not _h: lg.removeHandler(hh)
            if _h not in lg.handlers: lg.addHandler(_h)
            lg.propagate = False

def _parse(msg):
    m = re.search(r"in user code at (\S+):(\d+)", msg)
    loc = f"{m.group(1).split(SP)[-1]}:{m.group(2)}" if m else "?"
    r = re.search(r"Graph Break Reason: (.*)", msg)
    reason = (r.group(1) if r else msg.split("\n")[0])[:160]
    exp = re.search(r"Explanation: (.*)", msg)
    if exp: reason += " || " + exp.group(1)[:160]
    frames = re.findall(r'File "([^"]+)", line (\d+), in (\S+)', msg)
    stack = [f"{f.split(SP)[-1]}:{l}" for f, l, _ in frames]
    return loc, reason, stack

def report():
    out = []
    for msg in _records:
        if "Graph break" in msg:
            loc, reason, stack = _parse(msg)
            out.append(("BREAK", loc, reason, stack))
            print("  BREAK", loc, "|", reason, "| stack:", " <- ".join(reversed(stack))[:400])
        elif "ecompil" in msg:
            out.append(("RECOMPILE", msg))
            print("  RECOMPILE", msg.replace("\n", " ")[:400])
    print(f"  total records={len(out)}")
    del _records[:]
    return out

def breaks(fn, *args, reset=True, calls=None, **kw):
    """Compile fn (backend=eager), call it once (or once per args tuple in calls), print records."""
    if reset: torch._dynamo.reset()
    _hook(); del _records[:]
    cf = torch.compile(fn, backend="eager")
    res = None
    if calls is None: calls = [args]
    for a in calls:
        try:
            res = cf(*a, **kw)
        except Exception as e:
            print("  EXCEPTION", type(e).__name__, str(e).split("\n")[0][:300])
    report()
    return res

def fullgraph(fn, *args, **kw):
    torch._dynamo.reset()
    try:
        torch.compile(fn, backend="eager", fullgraph=True)(*args, **kw)
        print("  FULLGRAPH OK"); return True
    except Exception as e:
        msg = str(e).split("\n")
        print("  FULLGRAPH FAIL:", type(e).__name__, msg[0][:200], "|", [l.strip() for l in msg if SP in l][-3:])
        return False
