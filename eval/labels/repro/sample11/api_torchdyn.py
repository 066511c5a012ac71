# public-API findings (engine 702ca85): torchdyn odeint / odeint_symplectic / odeint_hybrid, SDEFunc.f, MS solvers' root_solve
import sys, types, warnings, attr, torch, torch.nn as nn
pl = types.ModuleType("pytorch_lightning")
class LightningModule(nn.Module): pass
pl.LightningModule = LightningModule; sys.modules["pytorch_lightning"] = pl
from util import breaks
from torchdyn.core import MultipleShootingLayer
from torchdyn.core.defunc import SDEFunc
from torchdyn.numerics import odeint, odeint_symplectic, odeint_hybrid
from torchdyn.numerics.utils import EventCallback
warnings.simplefilter("always")
torch.manual_seed(0)
net = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 2))
class VF(nn.Module):  # vector field called as f(t, x), as odeint expects
    def __init__(self): super().__init__(); self.net = net
    def forward(self, t, x): return self.net(x)
f = VF()
x = torch.randn(8, 2); t_span = torch.linspace(0, 1, 5); t_rev = torch.linspace(1, 0, 5)
def T(name, fn, calls):
    print("==", name); breaks(fn, calls=calls)
T("odeint rk4 reversed t_span verbose=True", lambda x, t: odeint(f, x, t, solver="rk4", verbose=True), [(x, t_rev)])
T("odeint rk4 forward t_span verbose=True", lambda x, t: odeint(f, x, t, solver="rk4", verbose=True), [(x, t_span)])
T("odeint tsit5 verbose=True", lambda x, t: odeint(f, x, t, solver="tsit5", verbose=True), [(x, t_span)])
class HamF(nn.Module):
    order = 1
    def __init__(self): super().__init__(); self.net = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 2))
    def forward(self, t, q): return self.net(q)
hf = HamF(); xv = torch.randn(8, 4)
T("odeint_symplectic alf reversed verbose=True", lambda x, t: odeint_symplectic(hf, x, t, solver="alf", verbose=True), [(xv, t_rev)])
T("odeint_symplectic alf forward", lambda x, t: odeint_symplectic(hf, x, t, solver="alf"), [(xv, t_span)])
T("odeint_symplectic alf atol=1e-4 (fixed-step tolerance warning)", lambda x, t: odeint_symplectic(hf, x, t, solver="alf", atol=1e-4), [(xv, t_span)])
@attr.s
class Bounce(EventCallback):
    def check_event(self, t, x): return (x[:, :1] < 0).any()
    def jump_map(self, t, x): return torch.cat([x[:, :1].abs(), -0.8 * x[:, 1:]], 1)
g = lambda t, x: torch.cat([x[:, 1:], -9.81 * torch.ones_like(x[:, :1])], 1)
x0 = torch.tensor([[1.0, 0.0]])
T("odeint_hybrid dopri5 bouncing ball", lambda x, t: odeint_hybrid(g, x, t, j_span=5, solver="dopri5", callbacks=[Bounce()]), [(x0, torch.linspace(0, 1, 5))])
class Drift(nn.Module):  # SDEFunc.f calls f_func(x, args)
    def __init__(self): super().__init__(); self.l = nn.Linear(2, 2)
    def forward(self, x, args=None): return self.l(x)
sf = SDEFunc(f=Drift(), g=Drift())
print("SDEFunc nfe type", type(sf.nfe))
T("SDEFunc.f 4 calls (as the SDE solver calls it per step)", sf.f, [(torch.tensor(0.1 * i), x) for i in range(4)])
for solver in ("msbackward", "ieuler"):
    # MSBackward raises IndexError in eager too for maxiter > 1 (library bug), so maxiter=1
    ms = MultipleShootingLayer(net, solver=solver, maxiter=1, fine_steps=4)
    T(f"MultipleShootingLayer {solver}", ms, [(x, t_span)])
