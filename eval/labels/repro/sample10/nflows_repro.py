import torch, torch.nn as nn
from util import breaks
from nflows.transforms import nonlinearities, coupling
from nflows.nn import nets
from nflows.utils import torchutils
torch.manual_seed(0)
D = 6
mask = torchutils.create_alternating_binary_mask(D, even=True)
class UserNet(nn.Module):
    def __init__(self, i, o):
        super().__init__(); self.net = nn.Sequential(nn.Linear(i, 32), nn.ReLU(), nn.Linear(32, o))
    def forward(self, x, context=None): return self.net(x)
def mlp(i, o): return UserNet(i, o)
def res(i, o): return nets.ResidualNet(i, o, hidden_features=32, num_blocks=2)
x = torch.randn(64, D) * 2

print("== LogTanh forward")
breaks(nonlinearities.LogTanh(cut_point=1), x)
print("== RQ coupling, nn.Sequential net (warn path)")
breaks(coupling.PiecewiseRationalQuadraticCouplingTransform(mask, mlp, tails="linear", tail_bound=3.0), x)
print("== RQ coupling, ResidualNet")
breaks(coupling.PiecewiseRationalQuadraticCouplingTransform(mask, res, tails="linear", tail_bound=3.0), x)
for tails in [None, "linear"]:
    xi = torch.rand(64, D) if tails is None else x
    print("== Cubic coupling forward tails", tails)
    t = coupling.PiecewiseCubicCouplingTransform(mask, res, tails=tails, tail_bound=3.0)
    breaks(t, xi)
    print("== Cubic coupling inverse tails", tails)
    breaks(t.inverse, xi)
    print("== Quadratic coupling forward tails", tails)
    breaks(coupling.PiecewiseQuadraticCouplingTransform(mask, res, tails=tails, tail_bound=3.0), xi)
    print("== Linear coupling forward tails", tails)
    breaks(coupling.PiecewiseLinearCouplingTransform(mask, res, tails=tails, tail_bound=3.0), xi)
