"""speechbrain augmentation modules (nn.Module forwards) under torch.compile (backend=eager)."""
import os, sys; sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _sb  # noqa: F401
from _util import breaks
import torch
from speechbrain.augment.augmenter import Augmenter
from speechbrain.augment.freq_domain import SpectrogramDrop, Warping
from speechbrain.augment.time_domain import AddNoise, FastDropChunk, ChannelSwap, CutCat, DropBitResolution, DoClip

torch.manual_seed(0)
wav = torch.randn(4, 16000); lens = torch.ones(4)
print("== Augmenter(shuffle_augmentations=True) with DoClip + AddNoise")
aug = Augmenter(shuffle_augmentations=True, min_augmentations=2, max_augmentations=2,
                augmentations=[DoClip(), AddNoise()])
breaks(aug, wav, lens)
print("== Augmenter defaults")
aug = Augmenter(min_augmentations=1, max_augmentations=2, augmentations=[DoClip(), AddNoise()])
breaks(aug, wav, lens)
spec = torch.randn(4, 100, 40)
print("== SpectrogramDrop defaults")
breaks(SpectrogramDrop(), spec)
print("== SpectrogramDrop(replace='random_selection')")
breaks(SpectrogramDrop(replace="random_selection"), spec)
print("== Warping defaults")
breaks(Warping(), spec)
print("== AddNoise defaults (white noise), batch sizes 1,2,3,4")
breaks(AddNoise(), None, calls=[(torch.randn(b, 8000), torch.ones(b)) for b in (1, 2, 3, 4)])
print("== AddNoise with a single-noise noise_funct, batch sizes 2,3,4,5")
breaks(AddNoise(noise_funct=lambda w: torch.randn(1, w.shape[1])), None,
       calls=[(torch.randn(b, 8000), torch.ones(b)) for b in (2, 3, 4, 5)])
print("== FastDropChunk defaults")
breaks(FastDropChunk(), wav)
print("== ChannelSwap")
breaks(ChannelSwap(min_swap=1, max_swap=2), torch.randn(2, 1000, 4))
print("== CutCat")
breaks(CutCat(), wav)
print("== DropBitResolution defaults")
breaks(DropBitResolution(), wav)
