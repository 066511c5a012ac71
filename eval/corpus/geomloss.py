"""geomloss: optimal-transport and kernel distances between point clouds, as its documentation
uses them: `SamplesLoss(loss=..., p=2, blur=...)` called on two clouds (batched (B, N, D), also
with weights `loss(a, x, b, y)`), the Sinkhorn divergence balanced and unbalanced (`reach`), with
`potentials=True`, without debiasing, the kernel (energy / gaussian) losses, and a
user's generator trained with the Sinkhorn loss.  Batch 2 -> 3 -> 4; clouds of 16 -> 24 -> 32
points (the target cloud 4 more) in 3-D.
"""

from __future__ import annotations

import torch
from torch import nn

LIBRARY = "geomloss"
DIST = "geomloss==0.3.1"

_BATCH = (2, 3, 4)
_POINTS = (16, 24, 32)
_DIM = 3


def _clouds(shape, grad=True):
    b, n = _BATCH[shape], _POINTS[shape]
    x = torch.randn(b, n, _DIM, requires_grad=grad)
    y = torch.randn(b, n + 4, _DIM) + 0.5
    return x, y


def _loss(shape, **kwargs):
    from geomloss import SamplesLoss

    return SamplesLoss(**kwargs).train(), _clouds(shape), {}


def sinkhorn(shape=0):
    return _loss(shape, loss="sinkhorn", p=2, blur=0.05)


def sinkhorn_p1(shape=0):
    return _loss(shape, loss="sinkhorn", p=1, blur=0.1, scaling=0.8)


def sinkhorn_unbalanced(shape=0):
    return _loss(shape, loss="sinkhorn", p=2, blur=0.05, reach=0.5)


def sinkhorn_weighted(shape=0):
    """loss(a, x, b, y): weighted measures (each row of weights sums to one)."""
    from geomloss import SamplesLoss

    x, y = _clouds(shape)
    a = torch.softmax(torch.randn(x.shape[:2]), dim=1)
    b = torch.softmax(torch.randn(y.shape[:2]), dim=1)
    return SamplesLoss("sinkhorn", p=2, blur=0.05).train(), (a, x, b, y), {}


def sinkhorn_potentials(shape=0):
    """potentials=True: the dual potentials F, G instead of the loss value."""
    return _loss(shape, loss="sinkhorn", p=2, blur=0.1, potentials=True)


def energy(shape=0):
    return _loss(shape, loss="energy")


def gaussian(shape=0):
    return _loss(shape, loss="gaussian", blur=0.5)


def sinkhorn_biased(shape=0):
    """debias=False: the plain entropic OT cost instead of the divergence."""
    return _loss(shape, loss="sinkhorn", p=2, blur=0.05, debias=False)


class _Generator(nn.Module):
    """Maps latent codes to a 3-D point cloud, trained to match a target cloud."""

    def __init__(self):
        super().__init__()
        from geomloss import SamplesLoss

        self.net = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, _DIM))
        self.loss = SamplesLoss("sinkhorn", p=2, blur=0.05, scaling=0.7)

    def forward(self, z, target):
        return self.loss(self.net(z), target)


def generator_train(shape=0):
    b, n = _BATCH[shape], _POINTS[shape]
    return _Generator().train(), (torch.randn(b, n, 4), torch.randn(b, n, _DIM)), {}


MODELS = {
    "geomloss_sinkhorn": ("train", sinkhorn),
    "geomloss_sinkhorn_p1": ("train", sinkhorn_p1),
    "geomloss_sinkhorn_unbalanced": ("train", sinkhorn_unbalanced),
    "geomloss_sinkhorn_weighted": ("train", sinkhorn_weighted),
    "geomloss_sinkhorn_potentials": ("train", sinkhorn_potentials),
    "geomloss_energy": ("train", energy),
    "geomloss_gaussian": ("train", gaussian),
    "geomloss_sinkhorn_biased": ("train", sinkhorn_biased),
    "geomloss_generator_train": ("train", generator_train),
}
