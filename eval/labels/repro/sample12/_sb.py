"""Import helper for speechbrain repros: speechbrain is installed without its dependencies (tqdm, hyperpyyaml,
sentencepiece, torchaudio, packaging, ...); stub those it imports but the exercised code never calls.
`packaging.version.parse` gets a minimal comparable stand-in (numeric release tuple)."""
import re, sys, types
from _util import stub_missing

class _V(tuple):
    pass
def _parse(s):
    return _V(int(x) for x in re.findall(r"\d+", str(s).split("+")[0])[:3])
pk = types.ModuleType("packaging"); pv = types.ModuleType("packaging.version")
pv.parse = _parse; pv.Version = _parse; pk.version = pv; pk.__path__ = []
sys.modules["packaging"] = pk; sys.modules["packaging.version"] = pv
sys.modules["webdataset"] = None  # optional: let speechbrain see it as absent (ImportError)
stub_missing("speechbrain")
# skip speechbrain/__init__.py (it imports the whole training core: Brain, data loaders, webdataset ...)
import importlib.util as _iu
_spec = _iu.find_spec("speechbrain")
_sbm = types.ModuleType("speechbrain"); _sbm.__path__ = list(_spec.submodule_search_locations); _sbm.__file__ = _spec.origin
sys.modules["speechbrain"] = _sbm
