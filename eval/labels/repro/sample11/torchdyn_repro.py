import sys, types, warnings, torch, torch.nn as nn
# pytorch_lightning is only a base class of NeuralODE here (no forward/__call__ override): stand-in module
pl = types.ModuleType("pytorch_lightning")
class LightningModule(nn.Module): pass
pl.LightningModule = LightningModule; sys.modules["pytorch_lightning"] = pl
from util import breaks
from torchdyn.core import NeuralODE
from torchdyn.models import CNF, HNN, LNN
from torchdyn.models.energy import ConservativeLinearSNF, GNF
from torchdyn.nn import GalLinear, DepthCat
from torchdyn.nn.galerkin import Chebychev
from torchdyn.numerics import odeint
from torchdyn.numerics.systems import VanDerPol
warnings.simplefilter("always")
torch.manual_seed(0)
f = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 2))
x = torch.randn(8, 2); t_span = torch.linspace(0, 1, 5)
def T(name, fn, calls):
    print("==", name); breaks(fn, calls=calls)
for solver in ("rk4", "euler", "dopri5", "tsit5"):
    for sens in ("autograd", "adjoint"):
        m = NeuralODE(f, solver=solver, sensitivity=sens)
        T(f"NeuralODE {solver} {sens}, 3 calls", m, [(x, t_span)] * 3)
T("NeuralODE rk4 with atol set (fixed-step, tolerance warning)", NeuralODE(f, solver="rk4", atol=1e-4), [(x, t_span)])
T("odeint dopri5 with save_at", lambda x, t: odeint(f, x, t, solver="dopri5", save_at=t), [(x, t_span)])
vdp = VanDerPol()
T("odeint(VanDerPol) dopri5 3 calls", lambda x, t: odeint(vdp, x, t, solver="dopri5"), [(x, t_span)] * 3)
T("NeuralODE(VanDerPol) rk4 3 calls", NeuralODE(vdp, solver="rk4"), [(x, t_span)] * 3)
cnf = CNF(nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 2)))
T("NeuralODE(CNF) rk4", NeuralODE(cnf, solver="rk4", sensitivity="autograd"), [(torch.cat([torch.zeros(8, 1), x], 1), t_span)])
T("CNF forward", cnf, [(torch.cat([torch.zeros(8, 1), x], 1),)])
hnn = HNN(nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 1)))
T("HNN forward", hnn, [(x,)])
lnn = LNN(nn.Sequential(nn.Linear(2, 16), nn.Softplus(), nn.Linear(16, 1)))
T("LNN forward batch 8,9,10", lnn, [(torch.randn(b, 2),) for b in (8, 9, 10)])
snf = ConservativeLinearSNF(nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 1)), nn.Linear(2, 2))
T("ConservativeLinearSNF forward", snf, [(x,)])
gnf = GNF(nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 1)))
T("GNF forward", gnf, [(x,)])
gal = nn.Sequential(DepthCat(1), GalLinear(3, 16, expfunc=Chebychev(5)), nn.Tanh(), nn.Linear(16, 2))
T("NeuralODE(GalLinear Chebychev) rk4", NeuralODE(gal, solver="rk4"), [(x, t_span)])
