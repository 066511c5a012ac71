"""torchdiffeq: neural ODEs integrated with `odeint` / `odeint_adjoint` / `odeint_event`, as
torchdiffeq's README and examples use them (an `nn.Module` ODE function, a user module whose
forward integrates it; a training forward returning an MSE loss).  State (batch, 4): batch
2 -> 3 -> 4; the output time grid grows 5 -> 7 -> 9 points where the model returns a trajectory.
Loose tolerances and short spans keep the adaptive solvers to a few steps.
"""

from __future__ import annotations

import torch
from torch import nn

LIBRARY = "torchdiffeq"
DIST = "torchdiffeq==0.2.5"

_BATCH = (2, 3, 4)
_TIMES = (5, 7, 9)
_DIM = 4


class _ODEFunc(nn.Module):
    """The README's `func(t, y)`: a small MLP on the state (time-independent)."""

    def __init__(self, dim=_DIM, hidden=16):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, hidden), nn.Tanh(), nn.Linear(hidden, dim))

    def forward(self, t, y):
        return self.net(y)


class _TimeODEFunc(nn.Module):
    """A time-dependent ODE function (t concatenated to the state)."""

    def __init__(self, dim=_DIM, hidden=16):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim + 1, hidden), nn.Softplus(), nn.Linear(hidden, dim))

    def forward(self, t, y):
        tt = t.expand(y.shape[0], 1)
        return self.net(torch.cat([y, tt], dim=1))


def _y0(shape, grad=False):
    return torch.randn(_BATCH[shape], _DIM, requires_grad=grad)


def _t(shape, end=1.0):
    return torch.linspace(0.0, end, _TIMES[shape])


class _NeuralODE(nn.Module):
    """ODE block: integrate y0 over t and return the trajectory (time, batch, dim)."""

    def __init__(self, func, method, adjoint=False, **solver):
        super().__init__()
        self.func, self.method, self.adjoint, self.solver = func, method, adjoint, solver

    def forward(self, y0, t):
        from torchdiffeq import odeint, odeint_adjoint

        integrate = odeint_adjoint if self.adjoint else odeint
        return integrate(self.func, y0, t, method=self.method, **self.solver)


class _ODEBlockClassifier(nn.Module):
    """The ODE-Net of torchdiffeq's examples/odenet_mnist.py, shrunk: a linear stem, an ODE
    block integrated from 0 to 1 (last state only) and a linear head; the loss is
    cross-entropy."""

    def __init__(self, method="dopri5"):
        super().__init__()
        self.stem = nn.Linear(8, _DIM)
        self.func = _ODEFunc()
        self.head = nn.Linear(_DIM, 3)
        self.method = method
        self.register_buffer("integration_time", torch.tensor([0.0, 1.0]))

    def forward(self, x, labels):
        from torchdiffeq import odeint

        h = odeint(self.func, self.stem(x), self.integration_time, rtol=1e-3, atol=1e-3, method=self.method)[1]
        return nn.functional.cross_entropy(self.head(h), labels)


class _TrajectoryFit(nn.Module):
    """examples/ode_demo.py: integrate from the true initial state and fit the observed
    trajectory (MSE)."""

    def __init__(self, adjoint=False, method="rk4"):
        super().__init__()
        self.func, self.adjoint, self.method = _ODEFunc(), adjoint, method

    def forward(self, y0, t, target):
        from torchdiffeq import odeint, odeint_adjoint

        integrate = odeint_adjoint if self.adjoint else odeint
        pred = integrate(self.func, y0, t, method=self.method, options=dict(step_size=0.25))
        return torch.mean(torch.abs(pred - target))


def dopri5(shape=0):
    model = _NeuralODE(_ODEFunc(), "dopri5", rtol=1e-3, atol=1e-4)
    return model.eval(), (_y0(shape), _t(shape)), {}


def rk4_fixed(shape=0):
    model = _NeuralODE(_TimeODEFunc(), "rk4", options=dict(step_size=0.1))
    return model.eval(), (_y0(shape), _t(shape)), {}


def euler_fixed(shape=0):
    model = _NeuralODE(_ODEFunc(), "euler", options=dict(step_size=0.125))
    return model.eval(), (_y0(shape), _t(shape)), {}


def bosh3(shape=0):
    model = _NeuralODE(_TimeODEFunc(), "bosh3", rtol=1e-3, atol=1e-3)
    return model.eval(), (_y0(shape), _t(shape)), {}


def odenet_train(shape=0):
    b = _BATCH[shape]
    return _ODEBlockClassifier().train(), (torch.randn(b, 8), torch.randint(0, 3, (b,))), {}


def trajectory_fit_train(shape=0):
    b, n = _BATCH[shape], _TIMES[shape]
    return _TrajectoryFit().train(), (_y0(shape), _t(shape), torch.randn(n, b, _DIM)), {}


def adjoint_train(shape=0):
    b, n = _BATCH[shape], _TIMES[shape]
    return _TrajectoryFit(adjoint=True).train(), (_y0(shape), _t(shape), torch.randn(n, b, _DIM)), {}


def odeint_fn(shape=0):
    """A plain function users compile around odeint (midpoint, a fixed step)."""
    from torchdiffeq import odeint

    func = _ODEFunc().eval()

    def solve(y0, t):
        return odeint(func, y0, t, method="midpoint", options=dict(step_size=0.25))

    return solve, (_y0(shape), _t(shape)), {}


def odeint_event_fn(shape=0):
    """odeint_event: integrate until the first state component crosses a threshold."""
    from torchdiffeq import odeint_event

    func = _ODEFunc().eval()

    def event_fn(t, y):
        return y[..., 0].sum() - 10.0 + t

    def solve(y0):
        t0 = torch.tensor(0.0)
        event_t, states = odeint_event(func, y0, t0, event_fn=event_fn, method="rk4",
                                       options=dict(step_size=0.5))
        return event_t, states[-1]

    return solve, (_y0(shape),), {}


MODELS = {
    "torchdiffeq_dopri5": ("eval", dopri5),
    "torchdiffeq_rk4_fixed": ("eval", rk4_fixed),
    "torchdiffeq_euler_fixed": ("eval", euler_fixed),
    "torchdiffeq_bosh3": ("eval", bosh3),
    "torchdiffeq_odenet_train": ("train", odenet_train),
    "torchdiffeq_trajectory_fit_train": ("train", trajectory_fit_train),
    "torchdiffeq_adjoint_train": ("train", adjoint_train),
    "torchdiffeq_odeint_fn": ("eval", odeint_fn),
    "torchdiffeq_odeint_event_fn": ("eval", odeint_event_fn),
}
