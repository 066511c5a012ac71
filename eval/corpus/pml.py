"""pytorch-metric-learning: metric losses (with labels), miners, loss + miner as users compile them.

Metric losses need several samples per class in a batch, so the three shapes are batches of
8 -> 12 -> 16 embeddings (labels cycle over 4 classes), embedding size fixed at 16.
"""

from __future__ import annotations

import torch

LIBRARY = "pytorch_metric_learning"
DIST = "pytorch-metric-learning==2.9.0"

EMB = 16
CLASSES = 4


def _batch(shape):
    n = (8, 12, 16)[shape]
    emb = torch.randn(n, EMB, requires_grad=True)
    labels = torch.arange(n) % CLASSES
    return emb, labels


def _loss(make):
    def builder(shape=0):
        loss = make()
        emb, labels = _batch(shape)
        return loss.train(), (emb, labels), {}

    return builder


def _with_miner(make_loss, make_miner):
    """`loss(emb, labels, miner(emb, labels))` in one compiled training-step function."""

    def builder(shape=0):
        loss_fn, miner = make_loss(), make_miner()

        def loss_with_miner(emb, labels):
            tuples = miner(emb, labels)
            return loss_fn(emb, labels, tuples)

        emb, labels = _batch(shape)
        return loss_with_miner, (emb, labels), {}

    return builder


def _triplet():
    from pytorch_metric_learning import losses

    return losses.TripletMarginLoss(margin=0.1)


def _contrastive():
    from pytorch_metric_learning import distances, losses

    return losses.ContrastiveLoss(pos_margin=0, neg_margin=1, distance=distances.LpDistance())


def _multi_similarity():
    from pytorch_metric_learning import losses

    return losses.MultiSimilarityLoss(alpha=2, beta=50, base=0.5)


def _ntxent():
    from pytorch_metric_learning import losses

    return losses.NTXentLoss(temperature=0.07)


def _circle():
    from pytorch_metric_learning import losses

    return losses.CircleLoss(m=0.4, gamma=80)


def _supcon():
    from pytorch_metric_learning import losses

    return losses.SupConLoss(temperature=0.1)


def _lifted():
    from pytorch_metric_learning import losses

    return losses.LiftedStructureLoss(neg_margin=1, pos_margin=0)


def _arcface():
    from pytorch_metric_learning import losses

    return losses.ArcFaceLoss(num_classes=CLASSES, embedding_size=EMB, margin=28.6, scale=64)


def _cosface():
    from pytorch_metric_learning import losses

    return losses.CosFaceLoss(num_classes=CLASSES, embedding_size=EMB)


def _subcenter_arcface():
    from pytorch_metric_learning import losses

    return losses.SubCenterArcFaceLoss(num_classes=CLASSES, embedding_size=EMB, sub_centers=3)


def _proxy_anchor():
    from pytorch_metric_learning import losses

    return losses.ProxyAnchorLoss(num_classes=CLASSES, embedding_size=EMB, margin=0.1, alpha=32)


def _margin():
    from pytorch_metric_learning import losses

    return losses.MarginLoss(margin=0.2, nu=0, beta=1.2, learn_beta=True, num_classes=CLASSES)


def _smooth_ap():
    from pytorch_metric_learning import losses

    return losses.SmoothAPLoss(temperature=0.01)


def _fast_ap():
    from pytorch_metric_learning import losses

    return losses.FastAPLoss(num_bins=10)


def _triplet_miner():
    from pytorch_metric_learning import miners

    return miners.TripletMarginMiner(margin=0.2, type_of_triplets="semihard")


def _ms_miner():
    from pytorch_metric_learning import miners

    return miners.MultiSimilarityMiner(epsilon=0.1)


def _batch_hard_miner():
    from pytorch_metric_learning import miners

    return miners.BatchHardMiner()


def _pair_margin_miner():
    from pytorch_metric_learning import miners

    return miners.PairMarginMiner(pos_margin=0.2, neg_margin=0.8)


def self_supervised_ntxent(shape=0):
    """SimCLR-style: two views' embeddings, no labels (SelfSupervisedLoss wrapper)."""
    from pytorch_metric_learning import losses

    loss = losses.SelfSupervisedLoss(losses.NTXentLoss(temperature=0.1))
    n = (8, 12, 16)[shape]
    return loss.train(), (torch.randn(n, EMB, requires_grad=True), torch.randn(n, EMB)), {}


def cross_batch_memory(shape=0):
    """Contrastive loss over a memory bank of past batches (XBM): a queue updated in place."""
    from pytorch_metric_learning import losses

    loss = losses.CrossBatchMemory(losses.ContrastiveLoss(), embedding_size=EMB, memory_size=64)
    emb, labels = _batch(shape)
    return loss.train(), (emb, labels), {}


def miner_only(shape=0):
    """A miner on its own (its indices feed a loss outside the compiled region)."""
    miner = _triplet_miner()
    emb, labels = _batch(shape)
    return miner, (emb.detach(), labels), {}


MODELS = {
    "pml_triplet_margin": ("train", _loss(_triplet)),
    "pml_contrastive": ("train", _loss(_contrastive)),
    "pml_multi_similarity": ("train", _loss(_multi_similarity)),
    "pml_ntxent": ("train", _loss(_ntxent)),
    "pml_circle": ("train", _loss(_circle)),
    "pml_supcon": ("train", _loss(_supcon)),
    "pml_lifted_structure": ("train", _loss(_lifted)),
    "pml_arcface": ("train", _loss(_arcface)),
    "pml_cosface": ("train", _loss(_cosface)),
    "pml_subcenter_arcface": ("train", _loss(_subcenter_arcface)),
    "pml_proxy_anchor": ("train", _loss(_proxy_anchor)),
    "pml_margin_learn_beta": ("train", _loss(_margin)),
    "pml_smooth_ap": ("train", _loss(_smooth_ap)),
    "pml_fast_ap": ("train", _loss(_fast_ap)),
    "pml_triplet_semihard_miner": ("train", _with_miner(_triplet, _triplet_miner)),
    "pml_ms_loss_ms_miner": ("train", _with_miner(_multi_similarity, _ms_miner)),
    "pml_batch_hard_triplet": ("train", _with_miner(_triplet, _batch_hard_miner)),
    "pml_contrastive_pair_miner": ("train", _with_miner(_contrastive, _pair_margin_miner)),
    "pml_self_supervised_ntxent": ("train", self_supervised_ntxent),
    "pml_cross_batch_memory": ("train", cross_batch_memory),
    "pml_triplet_miner_only": ("train", miner_only),
}
