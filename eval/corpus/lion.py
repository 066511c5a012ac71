"""lion-pytorch: the Lion optimizer's step (plain, foreach and cautious variants) and its update
function, compiled the way users compile `optimizer.step`.

The step functions take the gradients as tensors and store them in `.grad` before
`opt.step()` over a tiny MLP's parameters.  Parameter shapes cannot change between real calls,
so the three "shapes" are three steps with different gradient values (and, for the
`_lr_schedule` model, a learning rate lowered between steps and passed in as a float).  The
bare `update_fn` is called by the optimizer once per parameter, so it sees parameters of
different sizes: there the shapes are 2 -> 3 -> 4 rows of 16.
"""

from __future__ import annotations

import torch

from ._steps import _opt

LIBRARY = "lion_pytorch"
DIST = "lion-pytorch==0.2.5"

LRS = (1e-3, 9e-4, 8.1e-4)


def _lion(**kw):
    def make(params):
        from lion_pytorch import Lion

        return Lion(params, **kw)

    return make


def _foreach(**kw):
    def make(params):
        from lion_pytorch.foreach import Lion

        return Lion(params, **kw)

    return make


def _cautious(**kw):
    def make(params):
        from lion_pytorch.cautious_lion import Lion

        return Lion(params, **kw)

    return make


def update_fn(shape=0):
    from lion_pytorch.lion_pytorch import update_fn as fn

    n = (2, 3, 4)[shape]
    p, grad, exp_avg = torch.randn(n, 16), torch.randn(n, 16), torch.randn(n, 16)
    return fn, (p, grad, exp_avg, 1e-4, 1e-2, 0.9, 0.99), {}


MODELS = {
    "lion_step": ("train", _opt(_lion(lr=1e-4))),
    "lion_step_weight_decay": ("train", _opt(_lion(lr=1e-4, weight_decay=1e-2))),
    "lion_step_decoupled_wd_lr_schedule": ("train", _opt(_lion(lr=1e-3, weight_decay=1e-2,
                                                               decoupled_weight_decay=True), lrs=LRS)),
    "lion_foreach_step": ("train", _opt(_foreach(lr=1e-4, weight_decay=1e-2))),
    "lion_cautious_step": ("train", _opt(_cautious(lr=1e-4, weight_decay=1e-2, cautious_factor=0.1,
                                                   cautious_wd=True))),
    "lion_update_fn": ("train", update_fn),
}
