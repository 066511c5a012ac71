# ModelFuser projection path again, printing the innermost part of the break's user stack
import torch, torch.nn as nn
from util import stub_missing, breaks
stub_missing("pytorch_widedeep")
from pytorch_widedeep.models.model_fusion import ModelFuser
class Comp(nn.Module):
    def __init__(self, i, o): super().__init__(); self.l = nn.Linear(i, o); self.output_dim = o
    def forward(self, x): return self.l(x)
print("== ModelFuser sum + projection")
breaks(ModelFuser([Comp(4, 8), Comp(4, 6)], fusion_method="sum", projection_method="max"), [torch.randn(5, 4), torch.randn(5, 4)])
