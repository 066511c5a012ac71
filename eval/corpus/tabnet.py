"""pytorch-tabnet: the TabNet networks that `TabNetClassifier` / `TabNetRegressor` /
`TabNetPretrainer` build (`pytorch_tabnet.tab_network`), with the training loss their fit loop
computes (task loss minus `lambda_sparse * M_loss`; the pretrainer's `UnsupervisedLoss`),
eval-mode prediction and feature masks, and the sparsemax / entmax modules.  Tables of 10
features (two categorical): batch 2 -> 3 -> 4 rows (4 -> 6 -> 8 for ghost batch norm).
"""

from __future__ import annotations

import torch
from torch import nn

LIBRARY = "pytorch_tabnet"
DIST = "pytorch-tabnet==4.1.0"

_BATCH = (2, 3, 4)
_FEATURES = 10
_CAT_IDXS = [1, 4]
_CAT_DIMS = [5, 3]


def _table(shape, categorical=True, batches=_BATCH):
    gen = torch.Generator().manual_seed(shape)
    x = torch.randn(batches[shape], _FEATURES, generator=gen)
    if categorical:
        for idx, dim in zip(_CAT_IDXS, _CAT_DIMS):
            x[:, idx] = torch.randint(0, dim, (batches[shape],), generator=gen).float()
    return x


def _labels(shape, classes=3, batches=_BATCH):
    return torch.randint(0, classes, (batches[shape],))


def _net(output_dim=3, categorical=True, **extra):
    """As TabModel._set_network builds it: the group matrix from create_group_matrix."""
    from pytorch_tabnet.tab_network import TabNet
    from pytorch_tabnet.utils import create_group_matrix

    cfg = dict(n_d=8, n_a=8, n_steps=3, gamma=1.3, n_independent=2, n_shared=2, virtual_batch_size=128,
               momentum=0.02, mask_type="sparsemax")
    cfg.update(extra)
    if categorical:
        cfg.update(cat_idxs=_CAT_IDXS, cat_dims=_CAT_DIMS, cat_emb_dim=[2, 2])
    return TabNet(_FEATURES, output_dim, group_attention_matrix=create_group_matrix([], _FEATURES), **cfg)


class _ClassifierLoss(nn.Module):
    """TabNetClassifier's training step: cross-entropy minus lambda_sparse * M_loss."""

    def __init__(self, lambda_sparse=1e-3, **extra):
        super().__init__()
        self.network = _net(**extra)
        self.lambda_sparse = lambda_sparse

    def forward(self, x, y):
        output, m_loss = self.network(x)
        return nn.functional.cross_entropy(output, y) - self.lambda_sparse * m_loss


class _RegressorLoss(nn.Module):
    """TabNetRegressor's training step (MSE), entmax masks."""

    def __init__(self, lambda_sparse=1e-3):
        super().__init__()
        self.network = _net(output_dim=2, categorical=False, mask_type="entmax")
        self.lambda_sparse = lambda_sparse

    def forward(self, x, y):
        output, m_loss = self.network(x)
        return nn.functional.mse_loss(output, y) - self.lambda_sparse * m_loss


class _PretrainLoss(nn.Module):
    """TabNetPretrainer's training step: reconstruction of obfuscated features."""

    def __init__(self):
        super().__init__()
        from pytorch_tabnet.tab_network import TabNetPretraining
        from pytorch_tabnet.utils import create_group_matrix

        self.network = TabNetPretraining(_FEATURES, pretraining_ratio=0.2, n_d=8, n_a=8, n_steps=3,
                                         cat_idxs=_CAT_IDXS, cat_dims=_CAT_DIMS, cat_emb_dim=[2, 2],
                                         group_attention_matrix=create_group_matrix([], _FEATURES))

    def forward(self, x):
        from pytorch_tabnet.metrics import UnsupervisedLoss

        output, embedded_x, obf_vars = self.network(x)
        return UnsupervisedLoss(output, embedded_x, obf_vars)


def classifier_train(shape=0):
    return _ClassifierLoss().train(), (_table(shape), _labels(shape)), {}


def classifier_ghost_bn_train(shape=0):
    """Ghost batch norm active: a virtual batch of 2 rows, batches of 4 -> 6 -> 8 rows (whole
    virtual batches: a 1-row chunk cannot be batch-normalized in training)."""
    batches = (4, 6, 8)
    return (_ClassifierLoss(virtual_batch_size=2).train(),
            (_table(shape, batches=batches), _labels(shape, batches=batches)), {})


def classifier_eval(shape=0):
    return _net().eval(), (_table(shape),), {}


def regressor_train(shape=0):
    return _RegressorLoss().train(), (_table(shape, categorical=False), torch.randn(_BATCH[shape], 2)), {}


def multitask_eval(shape=0):
    """TabNetMultiTaskClassifier's network: one head per task (output_dim a list)."""
    return _net(output_dim=[3, 2]).eval(), (_table(shape),), {}


def forward_masks(shape=0):
    """The explain() path: feature importances per step."""
    net = _net().eval()
    return net.forward_masks, (_table(shape),), {}


def pretraining_train(shape=0):
    return _PretrainLoss().train(), (_table(shape),), {}


def sparsemax(shape=0):
    from pytorch_tabnet.sparsemax import Sparsemax

    return Sparsemax(dim=-1).train(), (torch.randn(_BATCH[shape], 8, requires_grad=True),), {}


def entmax15(shape=0):
    from pytorch_tabnet.sparsemax import Entmax15

    return Entmax15(dim=-1).train(), (torch.randn(_BATCH[shape], 8, requires_grad=True),), {}


MODELS = {
    "tabnet_classifier_train": ("train", classifier_train),
    "tabnet_classifier_ghost_bn_train": ("train", classifier_ghost_bn_train),
    "tabnet_classifier_eval": ("eval", classifier_eval),
    "tabnet_regressor_train": ("train", regressor_train),
    "tabnet_multitask_eval": ("eval", multitask_eval),
    "tabnet_forward_masks": ("eval", forward_masks),
    "tabnet_pretraining_train": ("train", pretraining_train),
    "tabnet_sparsemax": ("train", sparsemax),
    "tabnet_entmax15": ("train", entmax15),
}
