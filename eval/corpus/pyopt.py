"""pytorch-optimizer (kozistr): optimizers' step functions compiled the way users compile
`optimizer.step`, as in eval/corpus/torch_optimizer.py: a small function stores the given
gradients in `.grad` and calls `opt.step()` over a tiny MLP's parameters, the three "shapes"
being three steps with different gradients (and, for `_lr_schedule`, a learning rate set on the
param groups before the step).  The library's README builds them as `Optimizer(model.parameters(),
lr=...)` and `Lookahead(optimizer, k, alpha)`.  Two of its losses (bi-tempered logistic, focal
Tversky) are compiled as loss modules over batch 2 -> 3 -> 4 (images 16 -> 20 -> 24 pixels).
"""

from __future__ import annotations

import torch

from ._steps import _opt

LIBRARY = "pytorch_optimizer"
DIST = "pytorch-optimizer==4.1.0"

LRS = (1e-2, 9e-3, 8.1e-3)
_BATCH = (2, 3, 4)


def _make(name, **kwargs):
    def make(params):
        import pytorch_optimizer

        return getattr(pytorch_optimizer, name)(params, **kwargs)

    return make


def _lookahead(params):
    from pytorch_optimizer import AdamW, Lookahead

    return Lookahead(AdamW(params, lr=1e-3), k=2, alpha=0.5)


def bi_tempered_loss(shape=0):
    from pytorch_optimizer import BiTemperedLogisticLoss

    b = _BATCH[shape] * 4
    logits = torch.randn(b, 10, requires_grad=True)
    return BiTemperedLogisticLoss(t1=0.8, t2=1.2, label_smooth=0.1).train(), (logits, torch.randint(0, 10, (b,))), {}


def focal_tversky_loss(shape=0):
    from pytorch_optimizer import FocalTverskyLoss

    b, s = _BATCH[shape], (16, 20, 24)[shape]
    pred = torch.randn(b, 1, s, s, requires_grad=True)
    return FocalTverskyLoss(alpha=0.5, beta=0.5, gamma=1.0).train(), (pred, (torch.rand(b, 1, s, s) > 0.5).float()), {}


MODELS = {
    "pyopt_adopt_step": ("train", _opt(_make("ADOPT", lr=1e-3))),
    "pyopt_adan_step": ("train", _opt(_make("Adan", lr=1e-3))),
    "pyopt_came_step": ("train", _opt(_make("CAME", lr=1e-3))),
    "pyopt_dadapt_adam_step": ("train", _opt(_make("DAdaptAdam", lr=1.0))),
    "pyopt_prodigy_step": ("train", _opt(_make("Prodigy", lr=1.0))),
    "pyopt_soap_step": ("train", _opt(_make("SOAP", lr=1e-3, precondition_frequency=1))),
    "pyopt_stable_adamw_lr_schedule": ("train", _opt(_make("StableAdamW", lr=LRS[0]), lrs=LRS)),
    "pyopt_lookahead_adamw_step": ("train", _opt(_lookahead)),
    "pyopt_bi_tempered_loss": ("train", bi_tempered_loss),
    "pyopt_focal_tversky_loss": ("train", focal_tversky_loss),
}
