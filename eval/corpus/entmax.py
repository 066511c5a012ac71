"""entmax: sparse alternatives to softmax and their losses, as its README uses them: the
functions `sparsemax` / `entmax15` / `entmax_bisect` (also with `k` for the partial-sort
variant and a learned, per-head alpha), the modules `Entmax15` / `NormmaxBisect` as the
normalizer in a user's attention or classifier, and the Fenchel-Young losses (`Entmax15Loss`,
`SparsemaxLoss` with `ignore_index`, `EntmaxBisectLoss`) in a training forward.  Batch 2 -> 3
-> 4, sequence 6 -> 9 -> 12, 10 classes.
"""

from __future__ import annotations

import torch
from torch import nn

LIBRARY = "entmax"
DIST = "entmax==1.3"

_BATCH = (2, 3, 4)
_SEQ = (6, 9, 12)
_CLASSES = 10
_FEATURES = 16


def _logits(shape, grad=False):
    return torch.randn(_BATCH[shape], _SEQ[shape], _CLASSES, requires_grad=grad)


class _SparseAttention(nn.Module):
    """Single-head attention whose weights are entmax15 instead of softmax (sparse attention)."""

    def __init__(self, dim=_FEATURES):
        super().__init__()
        from entmax import Entmax15

        self.qkv = nn.Linear(dim, 3 * dim)
        self.normalize = Entmax15(dim=-1)
        self.scale = dim ** -0.5

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        return self.normalize(q @ k.transpose(-1, -2) * self.scale) @ v


class _LearnedAlphaAttention(nn.Module):
    """alpha-entmax attention with one learned alpha per head (> 1), via entmax_bisect."""

    def __init__(self, dim=_FEATURES, heads=2):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.pre_alpha = nn.Parameter(torch.zeros(heads))

    def forward(self, x):
        from entmax import entmax_bisect

        b, n, d = x.shape
        q, k, v = (t.view(b, n, self.heads, -1).transpose(1, 2) for t in self.qkv(x).chunk(3, dim=-1))
        alpha = (1 + torch.sigmoid(self.pre_alpha)).view(1, self.heads, 1, 1).expand(b, -1, n, 1)
        p = entmax_bisect(q @ k.transpose(-1, -2) / (d // self.heads) ** 0.5, alpha=alpha, dim=-1)
        return (p @ v).transpose(1, 2).reshape(b, n, d)


class _Classifier(nn.Module):
    """An MLP classifier trained with one of entmax's losses (flattened tokens)."""

    def __init__(self, loss):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(_FEATURES, 32), nn.ReLU(), nn.Linear(32, _CLASSES))
        self.loss = loss

    def forward(self, x, target):
        return self.loss(self.net(x).reshape(-1, _CLASSES), target.reshape(-1))


class _Normalized(nn.Module):
    """A projection to class scores followed by one of entmax's mapping modules."""

    def __init__(self, mapping):
        super().__init__()
        self.proj = nn.Linear(_FEATURES, _CLASSES)
        self.mapping = mapping

    def forward(self, x):
        return self.mapping(self.proj(x))


def _features(shape, grad=False):
    return torch.randn(_BATCH[shape], _SEQ[shape], _FEATURES, requires_grad=grad)


def _targets(shape, low=0):
    return torch.randint(low, _CLASSES, (_BATCH[shape], _SEQ[shape]))


def sparsemax_fn(shape=0):
    from entmax import sparsemax

    return sparsemax, (_logits(shape),), {"dim": -1}


def entmax15_fn(shape=0):
    from entmax import entmax15

    return entmax15, (_logits(shape, grad=True),), {"dim": -1}


def entmax15_topk(shape=0):
    """k: the partial-sort variant (threshold from the top 4, extended if it is not enough)."""
    from entmax import entmax15

    return entmax15, (_logits(shape),), {"dim": -1, "k": 4}


def bisect_fn(shape=0):
    from entmax import entmax_bisect

    return entmax_bisect, (_logits(shape, grad=True),), {"alpha": 1.3, "dim": -1, "n_iter": 30}


def sparse_attention_train(shape=0):
    return _SparseAttention().train(), (_features(shape, grad=True),), {}


def learned_alpha_attention(shape=0):
    return _LearnedAlphaAttention().train(), (_features(shape, grad=True),), {}


def entmax15_loss_train(shape=0):
    from entmax import Entmax15Loss

    return _Classifier(Entmax15Loss(k=5)).train(), (_features(shape), _targets(shape)), {}


def sparsemax_loss_ignore_index(shape=0):
    """Padding class 0 ignored, the mean over the other positions."""
    from entmax import SparsemaxLoss

    return _Classifier(SparsemaxLoss(ignore_index=0)).train(), (_features(shape), _targets(shape)), {}


def bisect_loss_train(shape=0):
    from entmax import EntmaxBisectLoss

    loss = EntmaxBisectLoss(alpha=1.5, n_iter=30, reduction="sum")
    return _Classifier(loss).train(), (_features(shape), _targets(shape)), {}


def normmax_module(shape=0):
    from entmax import NormmaxBisect

    return _Normalized(NormmaxBisect(alpha=2, dim=-1, n_iter=30)).eval(), (_features(shape),), {}


MODELS = {
    "entmax_sparsemax_fn": ("eval", sparsemax_fn),
    "entmax_entmax15_fn": ("train", entmax15_fn),
    "entmax_entmax15_topk": ("eval", entmax15_topk),
    "entmax_bisect_fn": ("train", bisect_fn),
    "entmax_sparse_attention_train": ("train", sparse_attention_train),
    "entmax_learned_alpha_attention": ("train", learned_alpha_attention),
    "entmax_entmax15_loss_train": ("train", entmax15_loss_train),
    "entmax_sparsemax_loss_ignore_index": ("train", sparsemax_loss_ignore_index),
    "entmax_bisect_loss_train": ("train", bisect_loss_train),
    "entmax_normmax_module": ("eval", normmax_module),
}
