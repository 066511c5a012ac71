# Recompile checks (TCL505) and SpliceOut on audio long enough for its default widths.
import sys, os, tempfile, warnings, numpy as np
import torch, torchaudio
from scipy.io import wavfile
import util
from util import breaks
class _Info:
    def __init__(self, n, sr): self.num_frames, self.sample_rate = n, sr
def _info(path):
    sr, d = wavfile.read(path); return _Info(d.shape[0], sr)
def _load(path, frame_offset=0, num_frames=-1):
    sr, d = wavfile.read(path)
    t = torch.from_numpy(d).float(); t = t[None] if t.dim() == 1 else t.T
    end = None if num_frames is None or num_frames < 0 else frame_offset + num_frames
    return t[:, frame_offset:end].contiguous(), sr
torchaudio.info, torchaudio.load = _info, _load
import torch_audiomentations as ta
warnings.simplefilter("ignore")
torch.manual_seed(0)
SR = 16000
d = tempfile.mkdtemp()
for i in range(2):
    wavfile.write(os.path.join(d, f"ir{i}.wav"), SR, (np.random.randn(400) * 0.1).astype(np.float32))
irs = [os.path.join(d, f"ir{i}.wav") for i in range(2)]
def T(name, mod, calls, **kw):
    print("==", name)
    mod.train()
    breaks(lambda *a, **k: mod(*a, **k), calls=calls, **kw)
T("AddColoredNoise lengths 1.25s,2.25s,3.25s,4.25s,5.25s", ta.AddColoredNoise(p=1.0, sample_rate=SR, output_type="dict"),
  calls=[(torch.randn(2, 1, SR * k + SR // 4),) for k in (1, 2, 3, 4, 5)], sample_rate=SR)
T("AddColoredNoise fixed length, 4 calls", ta.AddColoredNoise(p=1.0, sample_rate=SR, output_type="dict"),
  calls=[(torch.randn(2, 1, SR),) for k in range(4)], sample_rate=SR)
T("PitchShift per_example batch 2..6", ta.PitchShift(p=1.0, sample_rate=SR, output_type="dict"),
  calls=[(torch.randn(b, 1, 4000),) for b in (2, 3, 4, 5, 6)], sample_rate=SR)
T("ApplyImpulseResponse lengths 4000..8000", ta.ApplyImpulseResponse(irs, p=1.0, sample_rate=SR, output_type="dict"),
  calls=[(torch.randn(2, 1, n),) for n in (4000, 5000, 6000, 7000, 8000)], sample_rate=SR)
print("== convolve alone, lengths 4000..8000")
from torch_audiomentations.utils.convolution import convolve
k = torch.randn(1, 1, 400)
breaks(convolve, calls=[(torch.randn(2, 1, n), k) for n in (4000, 5000, 6000, 7000, 8000)])
T("SpliceOut 2s audio", ta.SpliceOut(p=1.0, sample_rate=SR, output_type="dict"), calls=[(torch.randn(2, 1, 2 * SR),)], sample_rate=SR)
