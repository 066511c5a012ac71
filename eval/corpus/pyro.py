"""pyro-ppl: probabilistic programs as Pyro's tutorials write them: normalizing flows from
`pyro.distributions.transforms` (spline coupling, affine autoregressive, conditional affine
coupling) trained by `-TransformedDistribution(...).log_prob(x)`, planar flows by a reverse KL of
their own `rsample`s; an ELBO's `differentiable_loss(model, guide, x)` for a Bayesian regression
with an `AutoNormal` guide and for a VAE (`pyro.module`, `pyro.plate`); a Bayesian neural network (`PyroModule` with
`PyroSample` priors) sampled in its forward; `Predictive` posterior samples; and a
`pyro.contrib.gp` GP regression's predictive forward.  Batch 2 -> 3 -> 4 (data points 8 -> 12
-> 16 where a model sees a data set), 4 features.
"""

from __future__ import annotations

import torch
from torch import nn

LIBRARY = "pyro"
DIST = "pyro-ppl==1.9.2"

_BATCH = (2, 3, 4)
_POINTS = (8, 12, 16)
_DIM = 4


def _x(shape, rows=_BATCH):
    return torch.randn(rows[shape], _DIM)


class _Flow(nn.Module):
    """A standard-normal base pushed through Pyro transform modules; forward is the NLL."""

    def __init__(self, transforms):
        super().__init__()
        self.transforms = list(transforms)  # Permute is a Transform, not a module
        self.trainable = nn.ModuleList([t for t in transforms if isinstance(t, nn.Module)])
        self.register_buffer("loc", torch.zeros(_DIM))
        self.register_buffer("scale", torch.ones(_DIM))

    def distribution(self):
        import pyro.distributions as dist

        base = dist.Normal(self.loc, self.scale).to_event(1)
        return dist.TransformedDistribution(base, self.transforms)

    def forward(self, x):
        return -self.distribution().log_prob(x).mean()


class _ConditionalFlow(nn.Module):
    """p(x | c): a conditional affine coupling flow, conditioned on a context vector."""

    def __init__(self, context_dim=3):
        super().__init__()
        import pyro.distributions.transforms as T

        self.transform = T.conditional_affine_coupling(_DIM, context_dim, hidden_dims=[16])
        self.register_buffer("loc", torch.zeros(_DIM))
        self.register_buffer("scale", torch.ones(_DIM))

    def forward(self, x, context):
        import pyro.distributions as dist

        base = dist.Normal(self.loc, self.scale).to_event(1)
        flow = dist.ConditionalTransformedDistribution(base, [self.transform]).condition(context)
        return -flow.log_prob(x).mean()


def spline_coupling_flow(shape=0):
    import pyro.distributions.transforms as T

    return _Flow([T.spline_coupling(_DIM, count_bins=4)]).train(), (_x(shape),), {}


def affine_autoregressive_flow(shape=0):
    import pyro.distributions.transforms as T

    flows = [T.affine_autoregressive(_DIM, hidden_dims=[16]), T.Permute(torch.tensor([3, 2, 1, 0])),
             T.affine_autoregressive(_DIM, hidden_dims=[16])]
    return _Flow(flows).train(), (_x(shape),), {}


class _PlanarVI(_Flow):
    """Planar flows (not invertible) fitted by sampling: the reverse KL to a target density,
    rsample then log_prob of the cached samples; as many samples as the batch given."""

    def forward(self, x):
        flow = self.distribution()
        z = flow.rsample(x.shape[:1])
        target = -0.5 * ((z - 1.0) ** 2).sum(-1)
        return (flow.log_prob(z) - target).mean()


def planar_flow(shape=0):
    import pyro.distributions.transforms as T

    return _PlanarVI([T.planar(_DIM) for _ in range(3)]).train(), (_x(shape),), {}


def conditional_coupling_flow(shape=0):
    return _ConditionalFlow().train(), (_x(shape), torch.randn(_BATCH[shape], 3)), {}


def _regression():
    import pyro
    import pyro.distributions as dist

    def model(x, y=None):
        w = pyro.sample("w", dist.Normal(torch.zeros(_DIM), torch.ones(_DIM)).to_event(1))
        b = pyro.sample("b", dist.Normal(0.0, 1.0))
        sigma = pyro.sample("sigma", dist.HalfNormal(1.0))
        with pyro.plate("data", x.shape[0]):
            return pyro.sample("obs", dist.Normal(x @ w + b, sigma), obs=y)

    return model


_FITTED = {}


def _fitted(key, make):
    """One model/guide per process: the builder's other shapes reuse it (Pyro's parameter store
    is global; building a second guide of the same names would share or clear it)."""
    if key not in _FITTED:
        import pyro

        pyro.set_rng_seed(0)
        _FITTED[key] = make()
    return _FITTED[key]


def _regression_with_guide():
    from pyro.infer.autoguide import AutoNormal

    model = _regression()
    guide = AutoNormal(model)
    guide(torch.randn(8, _DIM), torch.randn(8))  # sets the guide up, as the first SVI step would
    return model, guide


def elbo_regression(shape=0):
    """Trace_ELBO().differentiable_loss for Bayesian linear regression with an AutoNormal guide."""
    from pyro.infer import Trace_ELBO

    model, guide = _fitted("regression", _regression_with_guide)
    elbo = Trace_ELBO()

    def loss_fn(x, y):
        return elbo.differentiable_loss(model, guide, x, y)

    return loss_fn, (_x(shape, _POINTS), torch.randn(_POINTS[shape])), {}


class _VAE(nn.Module):
    """The Pyro tutorial's VAE (tiny): model and guide over a plate of data rows."""

    def __init__(self, z_dim=2, x_dim=8):
        super().__init__()
        self.z_dim = z_dim
        self.decoder = nn.Sequential(nn.Linear(z_dim, 16), nn.Softplus(), nn.Linear(16, x_dim), nn.Sigmoid())
        self.encoder = nn.Sequential(nn.Linear(x_dim, 16), nn.Softplus(), nn.Linear(16, 2 * z_dim))

    def model(self, x):
        import pyro
        import pyro.distributions as dist

        pyro.module("decoder", self.decoder)
        with pyro.plate("data", x.shape[0]):
            z_loc = x.new_zeros(torch.Size((x.shape[0], self.z_dim)))
            z_scale = x.new_ones(torch.Size((x.shape[0], self.z_dim)))
            z = pyro.sample("latent", dist.Normal(z_loc, z_scale).to_event(1))
            pyro.sample("obs", dist.Bernoulli(self.decoder(z), validate_args=False).to_event(1), obs=x)

    def guide(self, x):
        import pyro
        import pyro.distributions as dist

        pyro.module("encoder", self.encoder)
        with pyro.plate("data", x.shape[0]):
            loc, log_scale = self.encoder(x).chunk(2, dim=-1)
            pyro.sample("latent", dist.Normal(loc, log_scale.exp()).to_event(1))

    def forward(self, x):
        from pyro.infer import Trace_ELBO

        return Trace_ELBO().differentiable_loss(self.model, self.guide, x)


def vae_elbo(shape=0):
    import pyro

    pyro.clear_param_store()
    return _VAE().train(), (torch.rand(_BATCH[shape], 8).round(),), {}


def _bnn():
    import pyro.distributions as dist
    from pyro.nn import PyroModule, PyroSample

    class BNN(PyroModule):
        def __init__(self):
            super().__init__()
            self.fc1 = PyroModule[nn.Linear](_DIM, 8)
            self.fc1.weight = PyroSample(dist.Normal(0.0, 1.0).expand([8, _DIM]).to_event(2))
            self.fc1.bias = PyroSample(dist.Normal(0.0, 1.0).expand([8]).to_event(1))
            self.fc2 = PyroModule[nn.Linear](8, 1)
            self.fc2.weight = PyroSample(dist.Normal(0.0, 1.0).expand([1, 8]).to_event(2))
            self.fc2.bias = PyroSample(dist.Normal(0.0, 1.0).expand([1]).to_event(1))

        def forward(self, x):
            return self.fc2(torch.tanh(self.fc1(x))).squeeze(-1)

    return BNN()


def bayesian_nn(shape=0):
    """A PyroModule BNN: each forward samples its weights from the priors."""
    import pyro

    pyro.set_rng_seed(0)
    return _bnn().eval(), (_x(shape),), {}


def predictive(shape=0):
    """Predictive(model, guide=AutoNormal, num_samples=5) over new inputs."""
    from pyro.infer import Predictive

    model, guide = _fitted("regression", _regression_with_guide)
    return Predictive(model, guide=guide, num_samples=5, return_sites=("obs",)).eval(), (_x(shape),), {}


def _gp():
    import pyro.contrib.gp as gp

    gen = torch.Generator().manual_seed(1)
    X, y = torch.randn(10, _DIM, generator=gen), torch.randn(10, generator=gen)
    return gp.models.GPRegression(X, y, gp.kernels.RBF(input_dim=_DIM), noise=torch.tensor(0.1))


def gp_regression(shape=0):
    """GPRegression(X, y, RBF) on 10 points; forward(Xnew) is the predictive mean and variance."""
    return _fitted("gp", _gp).eval(), (_x(shape, _POINTS),), {"full_cov": False}


MODELS = {
    "pyro_spline_coupling_flow": ("train", spline_coupling_flow),
    "pyro_affine_autoregressive_flow": ("train", affine_autoregressive_flow),
    "pyro_planar_flow": ("train", planar_flow),
    "pyro_conditional_coupling_flow": ("train", conditional_coupling_flow),
    "pyro_elbo_regression": ("train", elbo_regression),
    "pyro_vae_elbo": ("train", vae_elbo),
    "pyro_bayesian_nn": ("eval", bayesian_nn),
    "pyro_predictive": ("eval", predictive),
    "pyro_gp_regression": ("eval", gp_regression),
}
