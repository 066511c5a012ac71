# public-API findings (engine 702ca85): demucs apply_model / _replace_dict, spec.ispectro, svd.power_iteration
import torch, torch.nn as nn
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sample11"))
from util import breaks  # noqa: E402  (sample11's util.py: compiles and records breaks)
from demucs.apply import apply_model, BagOfModels, _replace_dict
from demucs.spec import ispectro, spectro
from demucs.svd import power_iteration
torch.manual_seed(0)
def T(name, fn, calls, kw=None):
    print("==", name); breaks(fn, calls=calls, **(kw or {}))
class Tiny(nn.Module):  # stands in for a separation model: apply_model only needs sources/samplerate/segment/audio_channels
    def __init__(self):
        super().__init__(); self.conv = nn.Conv1d(2, 8, 3, padding=1)
        self.sources = ["drums", "bass", "other", "vocals"]; self.samplerate = 400; self.segment = 2.0; self.audio_channels = 2
    def forward(self, x): return self.conv(x).view(x.shape[0], 4, 2, -1)
m = Tiny()
mix = torch.randn(1, 2, 2000)
T("apply_model(model, mix) defaults (shifts=1, split=True)", apply_model, [(m, mix)])
T("apply_model(model, mix, shifts=0, split=False)", apply_model, [(m, mix)], dict(shifts=0, split=False))
T("apply_model(..., progress=True)", apply_model, [(m, mix)], dict(shifts=0, progress=True))
T("apply_model(..., num_workers=2)", apply_model, [(m, mix)], dict(shifts=0, num_workers=2))
bag = BagOfModels([Tiny(), Tiny()])
T("apply_model(bag, mix, shifts=0)", apply_model, [(bag, mix)], dict(shifts=0))
T("apply_model(model, mix, shifts=1,2,3)", lambda mm, x, s: apply_model(mm, x, shifts=s, split=False), [(m, mix, s) for s in (1, 2, 3)])
T("_replace_dict(dict, ...)", lambda d: _replace_dict(d, ("state", "start")), [({"models": 1, "shift_idx": 0},)])
nfft, hl = 4096, 1024
T("ispectro as HDemucs._ispec calls it, 3 lengths", lambda z, le: ispectro(z, hl, length=le),
  [(torch.randn(1, 4, 2, nfft // 2 + 1, L // hl + 1, dtype=torch.complex64), L) for L in (8192, 12288, 16384)])
T("power_iteration(m, niters=2) (svd_penalty default), 3 sizes", power_iteration, [(torch.randn(n, n), 2, 1) for n in (16, 24, 32)])
