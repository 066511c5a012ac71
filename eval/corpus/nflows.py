"""nflows: normalizing flows (MAF, RealNVP, neural spline flows, conditional flows, a multiscale
Glow-style image flow) as users train and sample them: `log_prob`, the negative log-likelihood
training loss, `sample` and `sample_and_log_prob`.

Shapes: batch 2 -> 3 -> 4 (4 features; images 1 x 8 x 8 for the multiscale flow, whose transform
fixes the image size); the sampling targets draw 2 -> 3 -> 4 samples (an int argument), the
conditional ones for a context batch of 2 -> 3 -> 4.
"""

from __future__ import annotations

import torch

LIBRARY = "nflows"
DIST = "nflows==0.14"

F_ = 4
CTX = 3
B = (2, 3, 4)


def _x(shape, n=F_):
    return torch.randn(B[shape], n)


def _ctx(shape):
    return torch.randn(B[shape], CTX)


def _readme_flow(num_layers=2):
    """The README's flow: reverse permutations and masked affine autoregressive transforms."""
    from nflows.distributions.normal import StandardNormal
    from nflows.flows.base import Flow
    from nflows.transforms.autoregressive import MaskedAffineAutoregressiveTransform
    from nflows.transforms.base import CompositeTransform
    from nflows.transforms.permutations import ReversePermutation

    transforms = []
    for _ in range(num_layers):
        transforms.append(ReversePermutation(features=F_))
        transforms.append(MaskedAffineAutoregressiveTransform(features=F_, hidden_features=16))
    return Flow(CompositeTransform(transforms), StandardNormal(shape=[F_]))


def maf_log_prob(shape=0):
    """MaskedAutoregressiveFlow with batch norm between layers (training mode)."""
    from nflows.flows.autoregressive import MaskedAutoregressiveFlow

    flow = MaskedAutoregressiveFlow(features=F_, hidden_features=16, num_layers=2, num_blocks_per_layer=2,
                                    batch_norm_between_layers=True).train()
    return flow.log_prob, (_x(shape),), {}


def realnvp_log_prob(shape=0):
    """SimpleRealNVP: affine coupling layers over residual nets with batch norm."""
    from nflows.flows.realnvp import SimpleRealNVP

    flow = SimpleRealNVP(features=F_, hidden_features=16, num_layers=2, num_blocks_per_layer=2,
                         batch_norm_within_layers=True).train()
    return flow.log_prob, (_x(shape),), {}


def readme_sample(shape=0):
    """`flow.sample(num_samples)` from the README's MAF, in eval mode."""
    flow = _readme_flow().eval()
    return flow.sample, (B[shape],), {}


def nsf_autoregressive_loss(shape=0):
    """A training step's loss: rational-quadratic spline autoregressive flow (linear tails)."""
    from nflows.distributions.normal import StandardNormal
    from nflows.flows.base import Flow
    from nflows.transforms.autoregressive import MaskedPiecewiseRationalQuadraticAutoregressiveTransform
    from nflows.transforms.base import CompositeTransform
    from nflows.transforms.permutations import RandomPermutation

    transforms = []
    for _ in range(2):
        transforms.append(MaskedPiecewiseRationalQuadraticAutoregressiveTransform(
            features=F_, hidden_features=16, num_bins=4, tails="linear", tail_bound=3.0, num_blocks=1))
        transforms.append(RandomPermutation(features=F_))
    flow = Flow(CompositeTransform(transforms), StandardNormal(shape=[F_])).train()

    def loss_step(x):
        return -flow.log_prob(inputs=x).mean()

    return loss_step, (_x(shape),), {}


def nsf_coupling_lu_loss(shape=0):
    """A training step's loss: spline coupling layers, LU-decomposed linear layers and ActNorm."""
    from nflows.distributions.normal import StandardNormal
    from nflows.flows.base import Flow
    from nflows.nn import nets
    from nflows.transforms.base import CompositeTransform
    from nflows.transforms.coupling import PiecewiseRationalQuadraticCouplingTransform
    from nflows.transforms.lu import LULinear
    from nflows.transforms.normalization import ActNorm

    def net(in_features, out_features):
        return nets.ResidualNet(in_features, out_features, hidden_features=16, num_blocks=1)

    transforms = []
    mask = torch.tensor([1, 0, 1, 0])
    for _ in range(2):
        transforms.append(ActNorm(features=F_))
        transforms.append(LULinear(F_, identity_init=True))
        transforms.append(PiecewiseRationalQuadraticCouplingTransform(
            mask=mask, transform_net_create_fn=net, num_bins=4, tails="linear", tail_bound=3.0))
        mask = 1 - mask
    flow = Flow(CompositeTransform(transforms), StandardNormal(shape=[F_])).train()

    def loss_step(x):
        return -flow.log_prob(inputs=x).mean()

    return loss_step, (_x(shape),), {}


def _conditional_flow():
    from nflows.distributions.normal import ConditionalDiagonalNormal
    from nflows.flows.base import Flow
    from nflows.transforms.autoregressive import MaskedAffineAutoregressiveTransform
    from nflows.transforms.base import CompositeTransform
    from nflows.transforms.permutations import ReversePermutation

    transforms = []
    for _ in range(2):
        transforms.append(ReversePermutation(features=F_))
        transforms.append(MaskedAffineAutoregressiveTransform(features=F_, hidden_features=16,
                                                              context_features=CTX))
    base = ConditionalDiagonalNormal(shape=[F_], context_encoder=torch.nn.Linear(CTX, 2 * F_))
    return Flow(CompositeTransform(transforms), base, embedding_net=None)


def conditional_maf_log_prob(shape=0):
    """A conditional density estimator (simulation-based inference): log p(x | context)."""
    flow = _conditional_flow().train()
    return flow.log_prob, (_x(shape), _ctx(shape)), {}


def conditional_sample_and_log_prob(shape=0):
    """Five posterior samples per context row, with their log-probabilities (eval mode)."""
    flow = _conditional_flow().eval()
    return flow.sample_and_log_prob, (5,), {"context": _ctx(shape)}


def made_mog_log_prob(shape=0):
    """MADEMoG: a mixture-of-Gaussians MADE as a conditional density."""
    from nflows.distributions.mixture import MADEMoG

    dist = MADEMoG(features=F_, hidden_features=16, context_features=CTX, num_blocks=1,
                   num_mixture_components=3).train()
    return dist.log_prob, (_x(shape), _ctx(shape)), {}


def multiscale_image_log_prob(shape=0):
    """A Glow-style image flow: squeeze, ActNorm, invertible 1x1 convolutions and affine coupling
    over conv residual nets, split at each scale by MultiscaleCompositeTransform (eval mode)."""
    from nflows.distributions.normal import StandardNormal
    from nflows.flows.base import Flow
    from nflows.nn import nets
    from nflows.transforms.base import CompositeTransform, MultiscaleCompositeTransform
    from nflows.transforms.conv import OneByOneConvolution
    from nflows.transforms.coupling import AffineCouplingTransform
    from nflows.transforms.normalization import ActNorm
    from nflows.transforms.reshape import SqueezeTransform

    def conv_net(in_channels, out_channels):
        return nets.ConvResidualNet(in_channels, out_channels, hidden_channels=8, num_blocks=1)

    c, h, w = 1, 8, 8
    levels = 2
    multiscale = MultiscaleCompositeTransform(num_transforms=levels)
    for _ in range(levels):
        squeeze = SqueezeTransform()
        c, h, w = squeeze.get_output_shape(c, h, w)
        mask = torch.zeros(c)
        mask[::2] = 1
        level = CompositeTransform([
            squeeze,
            ActNorm(c),
            OneByOneConvolution(c),
            AffineCouplingTransform(mask=mask, transform_net_create_fn=conv_net),
        ])
        new_shape = multiscale.add_transform(level, (c, h, w))
        if new_shape:
            c, h, w = new_shape
    flow = Flow(multiscale, StandardNormal([64])).eval()
    return flow.log_prob, (torch.rand(B[shape], 1, 8, 8),), {}


MODELS = {
    "nflows_maf_log_prob": ("train", maf_log_prob),
    "nflows_realnvp_log_prob": ("train", realnvp_log_prob),
    "nflows_readme_maf_sample": ("eval", readme_sample),
    "nflows_nsf_autoregressive_loss": ("train", nsf_autoregressive_loss),
    "nflows_nsf_coupling_lu_loss": ("train", nsf_coupling_lu_loss),
    "nflows_conditional_maf_log_prob": ("train", conditional_maf_log_prob),
    "nflows_conditional_sample_and_log_prob": ("eval", conditional_sample_and_log_prob),
    "nflows_made_mog_log_prob": ("train", made_mog_log_prob),
    "nflows_multiscale_image_log_prob": ("eval", multiscale_image_log_prob),
}
