# visemenet with batch > stage2 window (64) so the stage-2 window list is non-empty; propainter attention with time_idx as the model passes it.
import torch, warnings
from util import breaks
warnings.simplefilter("ignore")
import sys, types, torch.nn as nn
class DeformConv2d(nn.Conv2d):  # torchvision stand-in, as in pytorchcv_repro.py
    def forward(self, input, offset, mask=None): return super().forward(input)
tv = types.ModuleType("torchvision"); tv.ops = types.ModuleType("torchvision.ops"); tv.ops.DeformConv2d = DeformConv2d
sys.modules["torchvision"] = tv; sys.modules["torchvision.ops"] = tv.ops
torch.manual_seed(0)
from pytorchcv.models.visemenet import visemenet20
from pytorchcv.models.propainter import SparseWindowAttention
print("== visemenet20 eval batch 70,71,72")
net = visemenet20().eval()
with torch.no_grad():
    breaks(net, calls=[(torch.randn(b, 8, 195), torch.randn(b, 76)) for b in (70, 71, 72)])
print("== SparseWindowAttention (propainter) with time_idx")
att = SparseWindowAttention(dim=64, num_heads=4, window_size=(5, 9), pool_size=(4, 4)).eval()
with torch.no_grad():
    breaks(att, calls=[(torch.randn(1, 3, 10, 18, 64), (torch.rand(1, 3, 10, 18, 1) > 0.5).float(), torch.arange(0, 3, 2))])
