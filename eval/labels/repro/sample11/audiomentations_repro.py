import sys, os, tempfile, warnings, numpy as np
import torch, torchaudio
from scipy.io import wavfile
# torchaudio 2.11.1 installed --no-deps with its compiled libs removed (no build for torch 2.13);
# its file I/O needs torchcodec, so info/load are replaced by scipy wav readers (eager file reading only).
class _Info:
    def __init__(self, n, sr): self.num_frames, self.sample_rate = n, sr
def _info(path):
    sr, d = wavfile.read(path); return _Info(d.shape[0], sr)
def _load(path, frame_offset=0, num_frames=-1):
    sr, d = wavfile.read(path)
    t = torch.from_numpy(d).float()
    t = t[None] if t.dim() == 1 else t.T
    end = None if num_frames is None or num_frames < 0 else frame_offset + num_frames
    return t[:, frame_offset:end].contiguous(), sr
torchaudio.info, torchaudio.load = _info, _load
from util import breaks
import torch_audiomentations as ta
warnings.simplefilter("ignore")
torch.manual_seed(0)
import random; random.seed(0)
SR = 16000
d = tempfile.mkdtemp()
for i in range(3):
    wavfile.write(os.path.join(d, f"bg{i}.wav"), SR, (np.random.randn(SR // 2) * 0.1).astype(np.float32))
    wavfile.write(os.path.join(d, f"ir{i}.wav"), SR, (np.random.randn(400) * 0.1).astype(np.float32))
bgs = [os.path.join(d, f"bg{i}.wav") for i in range(3)]
irs = [os.path.join(d, f"ir{i}.wav") for i in range(3)]
x = torch.randn(4, 1, SR // 4)

def T(name, mod, *args, calls=None, **kw):
    print("==", name)
    mod.train()
    breaks(lambda *a, **k: mod(*a, **k), *args, calls=calls, **kw)

T("AddBackgroundNoise", ta.AddBackgroundNoise(bgs, p=1.0, sample_rate=SR, output_type="dict"), x, sample_rate=SR)
T("BandPassFilter", ta.BandPassFilter(p=1.0, sample_rate=SR, output_type="dict"), x, sample_rate=SR)
T("AddColoredNoise 3 lengths", ta.AddColoredNoise(p=1.0, sample_rate=SR, output_type="dict"), calls=[(torch.randn(4, 1, n),) for n in (4000, 5000, 6000, 7000)], sample_rate=SR)
T("ApplyImpulseResponse", ta.ApplyImpulseResponse(irs, p=1.0, sample_rate=SR, output_type="dict"), x, sample_rate=SR)
T("ApplyImpulseResponse 4 lengths", ta.ApplyImpulseResponse(irs, p=1.0, sample_rate=SR, output_type="dict"), calls=[(torch.randn(4, 1, n),) for n in (4000, 5000, 6000, 7000)], sample_rate=SR)
T("LowPassFilter", ta.LowPassFilter(p=1.0, sample_rate=SR, output_type="dict"), x, sample_rate=SR)
T("PitchShift per_example", ta.PitchShift(p=1.0, sample_rate=SR, output_type="dict"), x, sample_rate=SR)
T("PitchShift per_batch", ta.PitchShift(p=1.0, sample_rate=SR, mode="per_batch", p_mode="per_batch", output_type="dict"), x, sample_rate=SR)
T("PitchShift per_example p=0.5, batch sizes vary", ta.PitchShift(p=0.5, sample_rate=SR, output_type="dict"), calls=[(torch.randn(b, 1, 4000),) for b in (8, 8, 8, 8, 8, 8)], sample_rate=SR)
T("PitchShift per_example p=1, batch 2,3,4,5", ta.PitchShift(p=1.0, sample_rate=SR, output_type="dict"), calls=[(torch.randn(b, 1, 4000),) for b in (2, 3, 4, 5)], sample_rate=SR)
T("RandomCrop", __import__("torch_audiomentations.augmentations.random_crop", fromlist=["x"]).RandomCrop(max_length=0.1, sampling_rate=SR), torch.randn(4, 2, SR // 4))
T("ShuffleChannels stereo", ta.ShuffleChannels(p=1.0, output_type="dict"), torch.randn(4, 2, 4000))
T("ShuffleChannels mono (misuse)", ta.ShuffleChannels(p=1.0, output_type="dict"), torch.randn(4, 1, 4000))
T("SpliceOut", ta.SpliceOut(p=1.0, sample_rate=SR, output_type="dict"), x, sample_rate=SR)
T("Compose", ta.Compose([ta.Gain(p=1.0, output_type="dict"), ta.PolarityInversion(p=1.0, output_type="dict")], output_type="dict"), x, sample_rate=SR)
T("Compose shuffle", ta.Compose([ta.Gain(p=1.0, output_type="dict"), ta.PolarityInversion(p=1.0, output_type="dict")], shuffle=True, output_type="dict"), x, sample_rate=SR)
T("SomeOf", ta.SomeOf(1, [ta.Gain(p=1.0, output_type="dict"), ta.PolarityInversion(p=1.0, output_type="dict")], output_type="dict"), x, sample_rate=SR)
T("OneOf", ta.OneOf([ta.Gain(p=1.0, output_type="dict"), ta.PolarityInversion(p=1.0, output_type="dict")], output_type="dict"), x, sample_rate=SR)
T("Gain with frame targets, no target_rate", ta.Gain(p=1.0, output_type="dict"), x, sample_rate=SR, targets=torch.rand(4, 1, 10, 2))
T("Gain multichannel channels-last (misuse)", ta.Gain(p=1.0, output_type="dict"), torch.randn(4, 3000, 2), sample_rate=SR)
