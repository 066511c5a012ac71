"""schedulefree: Schedule-Free optimizers' steps, compiled the way users compile
`optimizer.step` (eval/corpus/torch_optimizer.py): the given gradients are stored in `.grad` and
`opt.step()` runs over a tiny MLP's parameters, three steps with different gradients.  As the
README says, `optimizer.train()` is called where `model.train()` is (here once, before the
steps); the `Closure` variants take `opt.step(closure)` instead, and two models compile a whole
training step (forward, backward, step) over batches 2 -> 3 -> 4 rows.
"""

from __future__ import annotations

import torch

from ._steps import _grads, _params

LIBRARY = "schedulefree"
DIST = "schedulefree==1.4.1"

_BATCH = (2, 3, 4)


def _step(make):
    def builder(shape=0):
        params = _params()
        opt = make(params)
        opt.train()

        def train_step(grads):
            for p, g in zip(params, grads):
                p.grad = g
            opt.step()

        return train_step, (_grads(params, shape),), {}

    return builder


def _make(name, **kwargs):
    def make(params):
        import schedulefree

        return getattr(schedulefree, name)(params, **kwargs)

    return make


def _wrapper(reference=False):
    def make(params):
        import schedulefree

        # SGD as the base: the README's RMSprop base fails in torch 2.13 (the wrapper's 'z' in the
        # shared state makes RMSprop skip its state initialisation: KeyError 'square_avg')
        base = torch.optim.SGD(params, lr=0.01)
        cls = schedulefree.ScheduleFreeWrapperReference if reference else schedulefree.ScheduleFreeWrapper
        return cls(base, momentum=0.9, weight_decay_at_y=0.1)

    return make


def _net():
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))


def _batch(shape):
    gen = torch.Generator().manual_seed(200 + shape)
    return torch.randn(_BATCH[shape], 8, generator=gen), torch.randn(_BATCH[shape], 4, generator=gen)


def adamw_train_step(shape=0):
    """model.train(); optimizer.train(); then the usual zero_grad / loss / backward / step."""
    import schedulefree

    model = _net().train()
    opt = schedulefree.AdamWScheduleFree(model.parameters(), lr=1e-3, warmup_steps=2)
    opt.train()

    def train_step(x, y):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return train_step, _batch(shape), {}


def sgd_closure_step(shape=0):
    """SGDScheduleFreeClosure: no train()/eval() switching, the step takes a closure."""
    import schedulefree

    model = _net().train()
    opt = schedulefree.SGDScheduleFreeClosure(model.parameters(), lr=0.05)

    def train_step(x, y):
        def closure():
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            return loss

        return opt.step(closure)

    return train_step, _batch(shape), {}


MODELS = {
    "schedulefree_adamw_step": ("train", _step(_make("AdamWScheduleFree", lr=1e-3, warmup_steps=2))),
    "schedulefree_adamw_reference_step": ("train", _step(_make("AdamWScheduleFreeReference", lr=1e-3))),
    "schedulefree_adamw_paper_step": ("train", _step(_make("AdamWScheduleFreePaper", lr=1e-3, weight_decay=0.01))),
    "schedulefree_sgd_step": ("train", _step(_make("SGDScheduleFree", lr=0.05, warmup_steps=2))),
    "schedulefree_sgd_reference_step": ("train", _step(_make("SGDScheduleFreeReference", lr=0.05))),
    "schedulefree_radam_step": ("train", _step(_make("RAdamScheduleFree", lr=1e-3))),
    "schedulefree_wrapper_sgd_step": ("train", _step(_wrapper())),
    "schedulefree_wrapper_reference_step": ("train", _step(_wrapper(reference=True))),
    "schedulefree_adamw_train_step": ("train", adamw_train_step),
    "schedulefree_sgd_closure_step": ("train", sgd_closure_step),
}
