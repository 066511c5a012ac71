"""normflows: normalizing flows put together as normflows's README and examples do (a base
distribution, a list of flow layers, `nf.NormalizingFlow`), compiled the way they are used:
the training loss `model.forward_kld(x)` / `model.reverse_kld(num_samples)`, `model.log_prob(x)`
and `model.sample(num_samples)`.  Batch (or the number of samples) 2 -> 3 -> 4; the Glow model
takes (batch, 2, 8, 8) images (its base distribution fixes the image size).
"""

from __future__ import annotations

import torch

LIBRARY = "normflows"
DIST = "normflows==1.7.3"

_BATCH = (2, 3, 4)


def _x(shape, dim=2):
    return torch.randn(_BATCH[shape], dim)


def _realnvp(dim=2, layers=4):
    """The README's Real NVP: affine coupling blocks over an MLP, swap permutations."""
    import normflows as nf

    base = nf.distributions.base.DiagGaussian(dim)
    flows = []
    for _ in range(layers):
        param_map = nf.nets.MLP([dim // 2, 16, 16, dim], init_zeros=True)
        flows.append(nf.flows.AffineCouplingBlock(param_map))
        flows.append(nf.flows.Permute(dim, mode="swap"))
    return nf.NormalizingFlow(base, flows)


def _nsf(dim=2, layers=3):
    """The README's neural spline flow: autoregressive rational-quadratic splines and LU
    permutations."""
    import normflows as nf

    flows = []
    for _ in range(layers):
        flows.append(nf.flows.AutoregressiveRationalQuadraticSpline(dim, 1, 16))
        flows.append(nf.flows.LULinearPermute(dim))
    return nf.NormalizingFlow(nf.distributions.DiagGaussian(dim, trainable=False), flows)


def realnvp_forward_kld(shape=0):
    model = _realnvp().train()
    return model.forward_kld, (_x(shape),), {}


def realnvp_log_prob(shape=0):
    model = _realnvp().eval()
    return (lambda x: model.log_prob(x)), (_x(shape),), {}


def realnvp_sample(shape=0):
    model = _realnvp().eval()
    return model.sample, (_BATCH[shape],), {}


def nsf_forward_kld(shape=0):
    model = _nsf().train()
    return model.forward_kld, (_x(shape),), {}


def coupled_spline_log_prob(shape=0):
    import normflows as nf

    flows = []
    for i in range(2):
        flows.append(nf.flows.CoupledRationalQuadraticSpline(4, 1, 16, reverse_mask=bool(i % 2)))
        flows.append(nf.flows.Permute(4, mode="shuffle"))
    model = nf.NormalizingFlow(nf.distributions.DiagGaussian(4), flows).eval()
    return model.log_prob, (_x(shape, 4),), {}


def maf_forward_kld(shape=0):
    """Masked autoregressive flow with ActNorm, a shuffle permutation between layers."""
    import normflows as nf

    flows = []
    for _ in range(3):
        flows.append(nf.flows.MaskedAffineAutoregressive(4, 16, num_blocks=1))
        flows.append(nf.flows.ActNorm(4))
        flows.append(nf.flows.Permute(4, mode="shuffle"))
    model = nf.NormalizingFlow(nf.distributions.DiagGaussian(4), flows).train()
    return model.forward_kld, (_x(shape, 4),), {}


def planar_reverse_kld(shape=0):
    """Planar flows fit to the two-moons target by the reverse KL (examples/planar.ipynb)."""
    import normflows as nf

    flows = [nf.flows.Planar((2,)) for _ in range(6)]
    target = nf.distributions.TwoMoons()
    model = nf.NormalizingFlow(nf.distributions.DiagGaussian(2), flows, target).train()
    return model.reverse_kld, (_BATCH[shape],), {}


def glow_forward_kld(shape=0):
    """Glow blocks (affine coupling, invertible 1x1 conv, ActNorm) on small images."""
    import normflows as nf

    flows = [nf.flows.GlowBlock(2, 8, split_mode="channel", scale=True) for _ in range(2)]
    model = nf.NormalizingFlow(nf.distributions.DiagGaussian((2, 8, 8)), flows).train()
    return model.forward_kld, (torch.randn(_BATCH[shape], 2, 8, 8),), {}


def residual_log_prob(shape=0):
    """Residual flow: Lipschitz-constrained MLPs, exact log-determinant off (eval)."""
    import normflows as nf

    flows = []
    for _ in range(2):
        net = nf.nets.LipschitzMLP([2, 16, 2], init_zeros=True, lipschitz_const=0.9)
        flows.append(nf.flows.Residual(net, reduce_memory=True))
        flows.append(nf.flows.ActNorm(2))
    model = nf.NormalizingFlow(nf.distributions.DiagGaussian(2), flows).eval()
    return model.log_prob, (_x(shape),), {}


MODELS = {
    "normflows_realnvp_forward_kld": ("train", realnvp_forward_kld),
    "normflows_realnvp_log_prob": ("eval", realnvp_log_prob),
    "normflows_realnvp_sample": ("eval", realnvp_sample),
    "normflows_nsf_forward_kld": ("train", nsf_forward_kld),
    "normflows_coupled_spline_log_prob": ("eval", coupled_spline_log_prob),
    "normflows_maf_forward_kld": ("train", maf_forward_kld),
    "normflows_planar_reverse_kld": ("train", planar_reverse_kld),
    "normflows_glow_forward_kld": ("train", glow_forward_kld),
    "normflows_residual_log_prob": ("eval", residual_log_prob),
}
