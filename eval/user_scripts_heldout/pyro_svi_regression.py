"""pyro: Bayesian linear regression with an AutoNormal guide, compiled step on Trace_ELBO().differentiable_loss."""
import pyro
import pyro.distributions as dist
import torch
from pyro.infer import Trace_ELBO
from pyro.infer.autoguide import AutoNormal


def model(x, y=None):
    w = pyro.sample("w", dist.Normal(torch.zeros(3), 1.0).to_event(1))
    b = pyro.sample("b", dist.Normal(0.0, 1.0))
    sigma = pyro.sample("sigma", dist.HalfNormal(1.0))
    with pyro.plate("data", x.shape[0]):
        pyro.sample("obs", dist.Normal(x @ w + b, sigma), obs=y)


pyro.set_rng_seed(0)
x = torch.randn(50, 3)
y = x @ torch.tensor([1.0, -2.0, 0.5]) + 0.3 + 0.1 * torch.randn(50)

guide = AutoNormal(model)
guide(x, y)  # create the guide's parameters
loss_fn = Trace_ELBO().differentiable_loss
optimizer = torch.optim.Adam(guide.parameters(), lr=0.02)


def train_step(x, y):
    optimizer.zero_grad()
    loss = loss_fn(model, guide, x, y)
    loss.backward()
    optimizer.step()
    return loss


train_step = torch.compile(train_step)
for _ in range(2):
    print("elbo loss", train_step(x, y).item())
