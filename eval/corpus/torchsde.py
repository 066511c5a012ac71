"""torchsde: neural SDEs integrated with `sdeint` / `sdeint_adjoint`, as torchsde's README and
examples write them (an `nn.Module` with `noise_type`, `sde_type`, drift `f` and diffusion `g`;
a user module integrating it; training forwards returning a loss, the latent SDE with its KL
term from `logqp=True`).  State (batch, 3): batch 2 -> 3 -> 4; the output time grid grows
5 -> 7 -> 9 points over [0, 1] (fixed dt 0.1).
"""

from __future__ import annotations

import torch
from torch import nn

LIBRARY = "torchsde"
DIST = "torchsde==0.2.6"

_BATCH = (2, 3, 4)
_TIMES = (5, 7, 9)
_DIM = 3
_BM = 2  # Brownian motion size of the general-noise SDEs


def _y0(shape, grad=False):
    return torch.full((_BATCH[shape], _DIM), 0.1).add(torch.randn(_BATCH[shape], _DIM) * 0.1).requires_grad_(grad)


def _ts(shape):
    return torch.linspace(0.0, 1.0, _TIMES[shape])


class _DiagonalSDE(nn.Module):
    """The README's SDE: drift and diagonal diffusion from small networks."""

    def __init__(self, sde_type="ito", dim=_DIM, hidden=16):
        super().__init__()
        self.noise_type = "diagonal"
        self.sde_type = sde_type
        self.mu = nn.Sequential(nn.Linear(dim, hidden), nn.Tanh(), nn.Linear(hidden, dim))
        self.sigma = nn.Sequential(nn.Linear(dim, hidden), nn.Tanh(), nn.Linear(hidden, dim), nn.Sigmoid())

    def f(self, t, y):
        return self.mu(y)

    def g(self, t, y):
        return 0.3 * self.sigma(y)


class _GeneralSDE(nn.Module):
    """General noise: g returns (batch, state, brownian)."""

    def __init__(self, sde_type="ito", dim=_DIM, bm=_BM, hidden=16):
        super().__init__()
        self.noise_type = "general"
        self.sde_type = sde_type
        self.dim, self.bm = dim, bm
        self.mu = nn.Linear(dim, dim)
        self.sigma = nn.Sequential(nn.Linear(dim, hidden), nn.Tanh(), nn.Linear(hidden, dim * bm))

    def f(self, t, y):
        return self.mu(y)

    def g(self, t, y):
        return 0.2 * torch.tanh(self.sigma(y)).view(y.size(0), self.dim, self.bm)


class _ScalarSDE(nn.Module):
    """Scalar noise, time-dependent drift (t enters the network)."""

    noise_type = "scalar"
    sde_type = "ito"

    def __init__(self, dim=_DIM):
        super().__init__()
        self.mu = nn.Linear(dim + 1, dim)
        self.sigma = nn.Linear(dim, dim)

    def f(self, t, y):
        return self.mu(torch.cat([y, t.expand(y.size(0), 1)], dim=1))

    def g(self, t, y):
        return 0.1 * torch.sigmoid(self.sigma(y)).unsqueeze(-1)


class _SDEBlock(nn.Module):
    """Integrate y0 over ts and return the path (time, batch, dim)."""

    def __init__(self, sde, **solver):
        super().__init__()
        self.sde, self.solver = sde, solver

    def forward(self, y0, ts):
        import torchsde

        return torchsde.sdeint(self.sde, y0, ts, dt=0.1, **self.solver)


class _PathFit(nn.Module):
    """Fit observed paths (MSE) through sdeint or sdeint_adjoint."""

    def __init__(self, sde, adjoint=False, **solver):
        super().__init__()
        self.sde, self.adjoint, self.solver = sde, adjoint, solver

    def forward(self, y0, ts, target):
        import torchsde

        integrate = torchsde.sdeint_adjoint if self.adjoint else torchsde.sdeint
        ys = integrate(self.sde, y0, ts, dt=0.1, **self.solver)
        return ((ys - target) ** 2).mean()


class _LatentSDE(nn.Module):
    """examples/latent_sde.py, shrunk: posterior drift f (with a context), prior drift h,
    shared diagonal diffusion g; sdeint(..., logqp=True) gives the path and the KL term; the
    loss is the negative log-likelihood of the observations plus the KL."""

    noise_type = "diagonal"
    sde_type = "ito"

    def __init__(self, dim=_DIM, hidden=16):
        super().__init__()
        self.f_net = nn.Sequential(nn.Linear(dim, hidden), nn.Tanh(), nn.Linear(hidden, dim))
        self.h_net = nn.Sequential(nn.Linear(dim, hidden), nn.Tanh(), nn.Linear(hidden, dim))
        self.g_net = nn.Sequential(nn.Linear(dim, dim), nn.Sigmoid())
        self.qy0_mean = nn.Parameter(torch.zeros(1, dim))
        self.qy0_logstd = nn.Parameter(torch.zeros(1, dim))

    def f(self, t, y):
        return self.f_net(y)

    def h(self, t, y):
        return self.h_net(y)

    def g(self, t, y):
        return 0.5 * self.g_net(y)

    def forward(self, ts, ys_obs, eps):
        import torchsde

        y0 = self.qy0_mean + eps * self.qy0_logstd.exp()
        ys, log_ratio = torchsde.sdeint(self, y0, ts, dt=0.1, method="euler", logqp=True)
        likelihood = torch.distributions.Laplace(loc=ys, scale=0.1).log_prob(ys_obs).sum(dim=(0, 2)).mean()
        kl = log_ratio.sum(dim=0).mean()
        return -likelihood + kl


def euler(shape=0):
    return _SDEBlock(_DiagonalSDE(), method="euler").eval(), (_y0(shape), _ts(shape)), {}


def milstein(shape=0):
    return _SDEBlock(_DiagonalSDE(), method="milstein").eval(), (_y0(shape), _ts(shape)), {}


def srk(shape=0):
    return _SDEBlock(_DiagonalSDE(), method="srk").eval(), (_y0(shape), _ts(shape)), {}


def stratonovich_midpoint(shape=0):
    sde = _DiagonalSDE(sde_type="stratonovich")
    return _SDEBlock(sde, method="midpoint").eval(), (_y0(shape), _ts(shape)), {}


def general_noise(shape=0):
    return _SDEBlock(_GeneralSDE(), method="euler").eval(), (_y0(shape), _ts(shape)), {}


def fit_train(shape=0):
    b, n = _BATCH[shape], _TIMES[shape]
    model = _PathFit(_DiagonalSDE(), method="euler")
    return model.train(), (_y0(shape), _ts(shape), torch.randn(n, b, _DIM) * 0.1), {}


def adjoint_train(shape=0):
    b, n = _BATCH[shape], _TIMES[shape]
    model = _PathFit(_GeneralSDE(sde_type="stratonovich"), adjoint=True, method="reversible_heun",
                     adjoint_method="adjoint_reversible_heun")
    return model.train(), (_y0(shape), _ts(shape), torch.randn(n, b, _DIM) * 0.1), {}


def latent_sde_train(shape=0):
    b, n = _BATCH[shape], _TIMES[shape]
    return _LatentSDE().train(), (_ts(shape), torch.randn(n, b, _DIM) * 0.1, torch.randn(b, _DIM)), {}


def brownian_interval_fn(shape=0):
    """A plain sampling function: a fixed-seed BrownianInterval, then sdeint on a scalar-noise
    SDE (README: `bm = torchsde.BrownianInterval(t0, t1, size, ...)`)."""
    import torchsde

    sde = _ScalarSDE().eval()

    def sample(y0, ts):
        bm = torchsde.BrownianInterval(t0=0.0, t1=1.0, size=(y0.size(0), 1), entropy=0)
        return torchsde.sdeint(sde, y0, ts, bm=bm, dt=0.1, method="euler")

    return sample, (_y0(shape), _ts(shape)), {}


MODELS = {
    "torchsde_euler": ("eval", euler),
    "torchsde_milstein": ("eval", milstein),
    "torchsde_srk": ("eval", srk),
    "torchsde_stratonovich_midpoint": ("eval", stratonovich_midpoint),
    "torchsde_general_noise": ("eval", general_noise),
    "torchsde_fit_train": ("train", fit_train),
    "torchsde_adjoint_train": ("train", adjoint_train),
    "torchsde_latent_sde_train": ("train", latent_sde_train),
    "torchsde_brownian_interval_fn": ("eval", brownian_interval_fn),
}
