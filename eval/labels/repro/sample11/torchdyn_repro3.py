# GNF with a fresh input (in torchdyn_repro.py the shared x already had requires_grad set by an earlier eager run)
import sys, types, torch, torch.nn as nn
pl = types.ModuleType("pytorch_lightning")
class LightningModule(nn.Module): pass
pl.LightningModule = LightningModule; sys.modules["pytorch_lightning"] = pl
from util import breaks
from torchdyn.models.energy import GNF
torch.manual_seed(0)
print("== GNF forward, fresh input")
gnf = GNF(nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 1)))
breaks(gnf, torch.randn(8, 2))
