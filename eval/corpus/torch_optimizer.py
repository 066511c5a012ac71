"""torch-optimizer: optimizers' step functions, compiled the way users compile `optimizer.step`.

The target is a small function that takes the gradients as tensors, stores them in `.grad` and
calls `opt.step()` over a tiny MLP's parameters (a 2-D weight and a 1-D bias per layer).
Parameter shapes cannot change between real calls, so the three "shapes" are three steps with
different gradient values (and, for the `_lr_schedule` models, a learning rate that a scheduler
lowers between steps, passed in as a float the way a hand-written schedule does).
"""

from __future__ import annotations

import torch

from ._steps import _grads, _opt, _params

LIBRARY = "torch_optimizer"
DIST = "torch-optimizer==0.3.0"

LRS = (1e-2, 9e-3, 8.1e-3)


def _zero_grad_step(make):
    """`opt.zero_grad(); <grads accumulate>; opt.step()` with the grads added in place."""

    def builder(shape=0):
        params = _params()
        opt = make(params)
        for p in params:
            p.grad = torch.zeros_like(p)

        def train_step(grads):
            opt.zero_grad(set_to_none=False)
            for p, g in zip(params, grads):
                p.grad.add_(g)
            opt.step()

        return train_step, (_grads(params, shape),), {}

    return builder


def _o(name, **kw):
    def make(params):
        import torch_optimizer as optim

        return getattr(optim, name)(params, **kw)

    return make


def _lookahead_yogi(params):
    import torch_optimizer as optim

    return optim.Lookahead(optim.Yogi(params, lr=1e-2), k=2, alpha=0.5)


MODELS = {
    "torch_optimizer_adabelief": ("train", _opt(_o("AdaBelief", lr=1e-3, weight_decouple=True, rectify=True))),
    "torch_optimizer_adabound": ("train", _opt(_o("AdaBound", lr=1e-3, final_lr=0.1))),
    "torch_optimizer_adafactor": ("train", _opt(_o("Adafactor", lr=None, relative_step=True, warmup_init=True))),
    "torch_optimizer_adamp": ("train", _opt(_o("AdamP", lr=1e-3, weight_decay=1e-2))),
    "torch_optimizer_diffgrad": ("train", _opt(_o("DiffGrad", lr=1e-3))),
    "torch_optimizer_lamb": ("train", _opt(_o("Lamb", lr=1e-3, weight_decay=1e-2))),
    "torch_optimizer_madgrad": ("train", _opt(_o("MADGRAD", lr=1e-2, momentum=0.9))),
    "torch_optimizer_novograd": ("train", _opt(_o("NovoGrad", lr=1e-3, grad_averaging=True))),
    "torch_optimizer_radam": ("train", _opt(_o("RAdam", lr=1e-3))),
    "torch_optimizer_yogi": ("train", _opt(_o("Yogi", lr=1e-2))),
    "torch_optimizer_qhadam": ("train", _opt(_o("QHAdam", lr=1e-3, nus=(0.7, 1.0)))),
    "torch_optimizer_swats": ("train", _opt(_o("SWATS", lr=1e-3))),
    "torch_optimizer_shampoo": ("train", _opt(_o("Shampoo", lr=1e-1, update_freq=1))),
    "torch_optimizer_a2grad_exp": ("train", _opt(_o("A2GradExp", lips=10.0))),
    "torch_optimizer_aggmo": ("train", _opt(_o("AggMo", lr=1e-3, betas=(0.0, 0.9, 0.99)))),
    "torch_optimizer_apollo": ("train", _opt(_o("Apollo", lr=1e-2, warmup=2))),
    "torch_optimizer_pid": ("train", _opt(_o("PID", lr=1e-3, momentum=0.9, integral=5.0, derivative=10.0))),
    "torch_optimizer_sgdp": ("train", _opt(_o("SGDP", lr=1e-2, momentum=0.9, nesterov=True))),
    "torch_optimizer_lookahead_yogi": ("train", _opt(_lookahead_yogi)),
    "torch_optimizer_lamb_lr_schedule": ("train", _opt(_o("Lamb", lr=1e-2), lrs=LRS)),
    "torch_optimizer_radam_lr_schedule": ("train", _opt(_o("RAdam", lr=1e-2), lrs=LRS)),
    "torch_optimizer_sgdw_zero_grad": ("train", _zero_grad_step(_o("SGDW", lr=1e-2, momentum=0.9))),
    "torch_optimizer_accsgd_zero_grad": ("train", _zero_grad_step(_o("AccSGD", lr=1e-2))),
}
