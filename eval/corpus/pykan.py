"""pykan: Kolmogorov-Arnold networks (learnable B-spline activations on edges) as its README and
tutorials use them: KAN forwards with activations saved for plotting / pruning and in "speed"
mode (the mode pykan itself offers to torch.compile), the `fit` loop's loss with its sparsity
regularization, a speed-mode training step, grid updates from samples, MultKAN with
multiplication nodes, edges fixed to symbolic functions, a bare KANLayer and node attribution.

All models are built from their constructors (`auto_save=False`: no checkpoint folder) with
random weights and a fixed seed. Shapes: batch 8 -> 12 -> 16 of 2 inputs (the KANLayer: 3).
"""

from __future__ import annotations

import torch

LIBRARY = "kan"
DIST = "pykan==0.2.8"

B = (8, 12, 16)


def _x(shape, n=2):
    gen = torch.Generator().manual_seed(10 + shape)
    return torch.rand(B[shape], n, generator=gen) * 2 - 1


def _y(x):
    return torch.exp(torch.sin(torch.pi * x[:, [0]]) + x[:, [1]] ** 2)


def _kan(width=(2, 5, 1), **kw):
    from kan import KAN

    return KAN(width=list(width), grid=5, k=3, seed=0, auto_save=False, **kw)


def kan_forward(shape=0):
    """The README's KAN(width=[2,5,1], grid=5, k=3): a forward that keeps every activation for
    plotting, pruning and attribution (eval mode)."""
    model = _kan().eval()
    return model, (_x(shape),), {}


def kan_speed_forward(shape=0):
    """`model.speed()`: symbolic branch and activation saving off, the mode pykan compiles."""
    model = _kan().speed().eval()
    return model, (_x(shape),), {}


def kan_fit_loss(shape=0):
    """One step of `KAN.fit`'s objective with opt="Adam": the MSE training loss plus `lamb`
    times the edge-forward-spline sparsity regularization (`get_reg`), in training mode."""
    model = _kan((2, 5, 1)).train()

    def loss_step(x, y):
        pred = model(x)
        train_loss = torch.nn.functional.mse_loss(pred, y)
        reg = model.get_reg("edge_forward_spline_n", 1.0, 2.0, 0.0, 0.0)
        return train_loss + 0.01 * reg

    x = _x(shape)
    return loss_step, (x, _y(x)), {}


def kan_speed_train_step(shape=0):
    """A user's training step in speed mode: zero_grad, MSE loss, backward, an Adam step."""
    model = _kan((2, 4, 4, 1)).speed().train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)

    def train_step(x, y):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss

    x = _x(shape)
    return train_step, (x, _y(x)), {}


def kan_update_grid(shape=0):
    """`update_grid_from_samples` (what `fit` calls every few steps): the spline grids re-fitted
    to the inputs' range, then the forward on them."""
    model = _kan().train()

    def update_and_forward(x):
        model.update_grid_from_samples(x)
        return model(x)

    return update_and_forward, (_x(shape) * 1.5,), {}


def multkan_forward(shape=0):
    """MultKAN with multiplication nodes: width=[2, [3, 2], 1] (3 sum and 2 product nodes),
    eval mode."""
    model = _kan((2, (3, 2), 1)).eval()
    return model, (_x(shape),), {}


def kan_symbolic_forward(shape=0):
    """A KAN whose first-layer edges were fixed to symbolic functions (`fix_symbolic` with sin and
    x^2, as the symbolic-regression tutorial does), the forward mixing spline and symbolic
    branches (eval mode)."""
    model = _kan().eval()
    model.fix_symbolic(0, 0, 0, "sin", fit_params_bool=False, log_history=False)
    model.fix_symbolic(0, 1, 0, "x^2", fit_params_bool=False, log_history=False)
    return model, (_x(shape),), {}


def kan_layer_forward(shape=0):
    """A bare KANLayer(in_dim=3, out_dim=2, num=5, k=3): output, pre-/post-activations and
    post-spline values (eval mode)."""
    from kan.KANLayer import KANLayer

    torch.manual_seed(0)
    layer = KANLayer(in_dim=3, out_dim=2, num=5, k=3).eval()
    return layer, (_x(shape, 3),), {}


def kan_attribute(shape=0):
    """The pruning tutorial's scores: a forward, then `attribute` (edge and node scores from the
    saved activations) and `feature_score`."""
    model = _kan((2, 5, 3, 1)).eval()

    def scores(x):
        model(x)
        model.attribute(plot=False)
        return model.feature_score

    return scores, (_x(shape),), {}


MODELS = {
    "kan_forward": ("eval", kan_forward),
    "kan_speed_forward": ("eval", kan_speed_forward),
    "kan_fit_loss": ("train", kan_fit_loss),
    "kan_speed_train_step": ("train", kan_speed_train_step),
    "kan_update_grid": ("train", kan_update_grid),
    "kan_multkan_forward": ("eval", multkan_forward),
    "kan_symbolic_forward": ("eval", kan_symbolic_forward),
    "kan_layer_forward": ("eval", kan_layer_forward),
    "kan_attribute": ("eval", kan_attribute),
}
