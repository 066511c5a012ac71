"""pykeen: knowledge-graph embedding models' scoring (`score_hrt` for triples, `score_t` / `score_h`
for link prediction against all entities) and the training losses of its sLCWA and LCWA
training loops (negative sampling, self-adversarial and BCE losses with label smoothing,
regularization terms).

Every model is built on a tiny synthetic knowledge graph: a `CoreTriplesFactory` made from a
tensor of 64 random (head, relation, tail) ID triples over 20 entities and 4 relations (no
dataset download).  Shapes: batches of 8 -> 12 -> 16 triples (or (head, relation) pairs).
Models with complex-valued embeddings (ComplEx, RotatE) are left out: under torch 2.13 their
compiled call fails outright (an InternalTorchDynamoError from the fake-tensor view_as_complex of
the complex embeddings, "Tensor must have a last dimension of size 2") while eager works.
"""

from __future__ import annotations

import torch

LIBRARY = "pykeen"
DIST = "pykeen==1.11.1"

NUM_ENTITIES = 20
NUM_RELATIONS = 4
B = (8, 12, 16)
DIM = 16


def _triples(n, seed):
    gen = torch.Generator().manual_seed(seed)
    h = torch.randint(0, NUM_ENTITIES, (n,), generator=gen)
    r = torch.randint(0, NUM_RELATIONS, (n,), generator=gen)
    t = torch.randint(0, NUM_ENTITIES, (n,), generator=gen)
    return torch.stack([h, r, t], dim=1)


def _factory(create_inverse_triples=False):
    from pykeen.triples import CoreTriplesFactory

    return CoreTriplesFactory.create(mapped_triples=_triples(64, seed=0), num_entities=NUM_ENTITIES,
                                     num_relations=NUM_RELATIONS, create_inverse_triples=create_inverse_triples)


def _batch(shape):
    """A training batch: the first B[shape] triples of the graph."""
    return _triples(64, seed=0)[: B[shape]]


def _model(name, inverse=False, **kw):
    from pykeen.models import model_resolver

    return model_resolver.make(name, triples_factory=_factory(inverse), random_seed=0, **kw)


def transe_score_hrt(shape=0):
    """TransE's triple scores, -||h + r - t||."""
    model = _model("TransE", embedding_dim=DIM).eval()
    return model.score_hrt, (_batch(shape),), {}


def mure_score_t(shape=0):
    """MuRE link prediction: scores of every tail entity for (head, relation) pairs."""
    model = _model("MuRE", embedding_dim=DIM).eval()
    return model.score_t, (_batch(shape)[:, :2],), {}


def transh_slcwa_nssa_loss(shape=0):
    """An sLCWA training step's loss: TransH, Bernoulli negative sampling (2 per positive),
    the self-adversarial NSSA loss, plus the model's regularization term."""
    from pykeen.losses import NSSALoss
    from pykeen.sampling import BernoulliNegativeSampler

    factory = _factory()
    model = _model("TransH", embedding_dim=DIM).train()
    sampler = BernoulliNegativeSampler(mapped_triples=factory.mapped_triples, num_entities=NUM_ENTITIES,
                                       num_relations=NUM_RELATIONS, num_negs_per_pos=2)
    loss = NSSALoss(margin=9.0, adversarial_temperature=1.0)

    def loss_step(positive_batch):
        negative_batch, _ = sampler.sample(positive_batch)
        positive_scores = model.score_hrt(positive_batch)
        negative_scores = model.score_hrt(negative_batch.view(-1, 3)).view(*negative_batch.shape[:-1])
        return loss.process_slcwa_scores(positive_scores=positive_scores, negative_scores=negative_scores,
                                         num_entities=NUM_ENTITIES) + model.collect_regularization_term()

    return loss_step, (_batch(shape),), {}


def distmult_lcwa_bce_loss(shape=0):
    """An LCWA training step's loss: DistMult scores against all tails, BCE-with-logits on the
    multi-hot tail labels with label smoothing, plus DistMult's Lp regularizer."""
    from pykeen.losses import BCEWithLogitsLoss

    model = _model("DistMult", embedding_dim=DIM).train()
    loss = BCEWithLogitsLoss()

    def loss_step(hr_batch, labels):
        predictions = model.score_t(hr_batch)
        return loss.process_lcwa_scores(predictions=predictions, labels=labels, label_smoothing=0.1,
                                        num_entities=NUM_ENTITIES) + model.collect_regularization_term()

    batch = _batch(shape)
    labels = torch.zeros(B[shape], NUM_ENTITIES)
    labels[torch.arange(B[shape]), batch[:, 2]] = 1.0
    return loss_step, (batch[:, :2], labels), {}


def conve_score_t(shape=0):
    """ConvE (trained with inverse triples): 2-D convolution over reshaped embeddings, batch
    norm and dropout in training mode, scores of every tail."""
    model = _model("ConvE", inverse=True, embedding_dim=DIM, embedding_height=4, embedding_width=4,
                   output_channels=4).train()
    return model.score_t, (_batch(shape)[:, :2],), {}


def tucker_score_h(shape=0):
    """TuckER's head prediction (core-tensor interaction with batch norm and dropout)."""
    model = _model("TuckER", embedding_dim=DIM, relation_dim=8).train()
    return model.score_h, (_batch(shape)[:, 1:],), {}


def rgcn_score_hrt(shape=0):
    """R-GCN: one relational message-passing layer over the training graph with basis
    decomposition, edge and self-loop dropout (training mode), DistMult decoder."""
    model = _model("RGCN", embedding_dim=DIM, num_layers=1, decomposition="bases",
                   decomposition_kwargs=dict(num_bases=2)).train()
    return model.score_hrt, (_batch(shape),), {}


def nodepiece_score_t(shape=0):
    """NodePiece: entities as hashes of their relation tokens, an MLP aggregation, scores of
    every tail (inverse triples, as NodePiece requires)."""
    model = _model("NodePiece", inverse=True, embedding_dim=DIM, tokenizers="RelationTokenizer",
                   num_tokens=4, aggregation="mlp").eval()
    return model.score_t, (_batch(shape)[:, :2],), {}


def pairre_score_hrt(shape=0):
    """PairRE: paired relation vectors scaling head and tail, in training mode."""
    model = _model("PairRE", embedding_dim=DIM).train()
    return model.score_hrt, (_batch(shape),), {}


MODELS = {
    "pykeen_transe_score_hrt": ("eval", transe_score_hrt),
    "pykeen_mure_score_t": ("eval", mure_score_t),
    "pykeen_transh_slcwa_nssa_loss": ("train", transh_slcwa_nssa_loss),
    "pykeen_distmult_lcwa_bce_loss": ("train", distmult_lcwa_bce_loss),
    "pykeen_conve_score_t": ("train", conve_score_t),
    "pykeen_tucker_score_h": ("train", tucker_score_h),
    "pykeen_rgcn_score_hrt": ("train", rgcn_score_hrt),
    "pykeen_nodepiece_score_t": ("eval", nodepiece_score_t),
    "pykeen_pairre_score_hrt": ("train", pairre_score_hrt),
}
