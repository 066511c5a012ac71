"""Step functions over a tiny MLP's parameters, shared by the optimizer corpus modules.

`_opt(make, lrs)` builds a corpus builder: shape k gives the k-th step's gradients (and, with
`lrs`, the learning rate the caller sets before it), the way users compile `opt.step`.
"""

from __future__ import annotations

import torch


def _params():
    net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))
    return [p for p in net.parameters()]


def _grads(params, shape):
    gen = torch.Generator().manual_seed(100 + shape)
    return [torch.randn(p.shape, generator=gen) * 0.1 for p in params]


def _opt(make, lrs=None):
    def builder(shape=0):
        params = _params()
        opt = make(params)

        if lrs is not None:
            def train_step(grads, lr):
                for group in opt.param_groups:
                    group["lr"] = lr
                for p, g in zip(params, grads):
                    p.grad = g
                opt.step()

            return train_step, (_grads(params, shape), lrs[shape]), {}

        def train_step(grads):
            for p, g in zip(params, grads):
                p.grad = g
            opt.step()

        return train_step, (_grads(params, shape),), {}

    return builder
