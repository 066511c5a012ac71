"""ema-pytorch: exponential moving averages of a model's weights, updated after each optimizer
step, and the averaged model's inference.

The `_update` targets take the online model's weight changes (what an optimizer step did) as
tensors, apply them and call `ema.update()`: parameter shapes cannot change between real calls,
so the three "shapes" are three steps with different weight changes.  Forward targets take a
batch of 2 -> 3 -> 4 inputs.
"""

from __future__ import annotations

import torch

LIBRARY = "ema_pytorch"
DIST = "ema-pytorch==0.8.3"


def _net():
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.BatchNorm1d(16), torch.nn.ReLU(),
                               torch.nn.Linear(16, 4))


def _deltas(net, shape):
    gen = torch.Generator().manual_seed(100 + shape)
    return [torch.randn(p.shape, generator=gen) * 1e-2 for p in net.parameters()]


def _update(make):
    def builder(shape=0):
        net = _net()
        ema = make(net)
        ema.update()  # the first update copies the weights (what the first training step does)

        def train_step_update(deltas):
            with torch.no_grad():
                for p, d in zip(net.parameters(), deltas):
                    p.add_(d)
            ema.update()

        return train_step_update, (_deltas(net, shape),), {}

    return builder


def _ema(**kw):
    def make(net):
        from ema_pytorch import EMA

        return EMA(net, **kw)

    return make


def _karras(net):
    from ema_pytorch import KarrasEMA

    return KarrasEMA(net, sigma_rel=0.05, update_every=1)


def _post_hoc(net):
    import tempfile

    from ema_pytorch import PostHocEMA

    return PostHocEMA(net, sigma_rels=(0.05, 0.28), update_every=1, checkpoint_every_num_steps="manual",
                      checkpoint_folder=tempfile.mkdtemp(prefix="post_hoc_ema_"))


def _x(shape):
    return torch.randn((2, 3, 4)[shape], 8)


def forward_eval(shape=0):
    """`ema.forward_eval(x)`: the averaged model in eval mode under no_grad."""
    from ema_pytorch import EMA

    ema = EMA(_net(), beta=0.999, update_after_step=0, update_every=1)
    ema.update()
    return ema.forward_eval, (_x(shape),), {}


def module_wrapper_eval(shape=0):
    """EMAModuleWrapper's forward, which runs the averaged model.  Its bound method is the target:
    the wrapper holds an EMA, which cannot be deep-copied (EMA.__new__ needs the model)."""
    from ema_pytorch import EMAModuleWrapper

    wrapper = EMAModuleWrapper(_net(), beta=0.999, update_after_step=0, update_every=1)
    wrapper.ema.update()
    wrapper.eval()
    return wrapper.forward, (_x(shape),), {}


def pytree_update(shape=0):
    """EMAPytree over a dict of tensors (not a module)."""
    from ema_pytorch import EMAPytree

    tree = {"w": torch.randn(16, 8), "b": torch.zeros(16)}
    ema = EMAPytree(tree, beta=0.99, update_after_step=0, update_every=1)
    ema.update()

    def train_step_update(dw, db):
        tree["w"].add_(dw)
        tree["b"].add_(db)
        ema.update()

    gen = torch.Generator().manual_seed(100 + shape)
    return train_step_update, (torch.randn(16, 8, generator=gen) * 1e-2, torch.randn(16, generator=gen) * 1e-2), {}


MODELS = {
    "ema_update": ("train", _update(_ema(beta=0.999, update_after_step=0, update_every=1))),
    "ema_update_foreach": ("train", _update(_ema(beta=0.999, update_after_step=0, update_every=1,
                                                 use_foreach=True))),
    "ema_update_warmup_every2": ("train", _update(_ema(beta=0.9999, update_after_step=1, update_every=2,
                                                       power=3 / 4))),
    "ema_update_model_with_ema": ("train", _update(_ema(beta=0.99, update_after_step=0, update_every=1,
                                                        update_model_with_ema_every=2,
                                                        update_model_with_ema_beta=0.5))),
    "ema_karras_update": ("train", _update(_karras)),
    "ema_post_hoc_update": ("train", _update(_post_hoc)),
    "ema_pytree_update": ("train", pytree_update),
    "ema_forward_eval": ("eval", forward_eval),
    "ema_module_wrapper_eval": ("eval", module_wrapper_eval),
}
