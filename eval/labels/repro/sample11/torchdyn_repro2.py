# interpolated adjoint, ODEProblem (DEFuncBase wrapper only), adaptive solver with save_at
import sys, types, warnings, torch, torch.nn as nn
pl = types.ModuleType("pytorch_lightning")
class LightningModule(nn.Module): pass
pl.LightningModule = LightningModule; sys.modules["pytorch_lightning"] = pl
from util import breaks
from torchdyn.core import NeuralODE, ODEProblem
warnings.simplefilter("always")
torch.manual_seed(0)
f = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 2))
x = torch.randn(8, 2); t_span = torch.linspace(0, 1, 5)
print("== NeuralODE dopri5 interpolated_adjoint")
breaks(NeuralODE(f, solver="dopri5", sensitivity="interpolated_adjoint", interpolator="4th"), calls=[(x, t_span)] * 2)
print("== ODEProblem(f) rk4 (DEFuncBase wrapper), 4 calls")
prob = ODEProblem(f, solver="rk4")
breaks(lambda x, t: prob.odeint(x, t), calls=[(x, t_span)] * 4)
print("== NeuralODE dopri5 with save_at")
m = NeuralODE(f, solver="dopri5")
breaks(lambda x, t: m(x, t, save_at=t[1:]), calls=[(x, t_span)])
