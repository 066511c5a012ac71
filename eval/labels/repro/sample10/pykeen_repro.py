import torch, sys, numpy as np, warnings, logging
warnings.filterwarnings("ignore")
logging.getLogger("pykeen").setLevel(logging.ERROR)
from util import breaks
torch.manual_seed(0)
from pykeen.triples import TriplesFactory
rng = np.random.default_rng(0)
ents = [f"e{i}" for i in range(30)]; rels = [f"r{i}" for i in range(4)]
tr = np.array([[ents[rng.integers(30)], rels[rng.integers(4)], ents[rng.integers(30)]] for _ in range(150)], dtype=str)
tf = TriplesFactory.from_labeled_triples(tr, create_inverse_triples=False)
hrt = tf.mapped_triples[:16]
which = sys.argv[1:]
def on(k): return not which or k in which
if on("rgcn"):
    from pykeen.models import RGCN
    for dec in ["bases", "block"]:
        m = RGCN(triples_factory=tf, embedding_dim=8, num_layers=1, decomposition=dec, random_seed=0).train()
        print(f"== RGCN(decomposition={dec}) train score_hrt"); breaks(m.score_hrt, hrt)
if on("weight"):
    from pykeen.nn.weighting import _inverse_frequency_weighting
    print("== _inverse_frequency_weighting"); breaks(_inverse_frequency_weighting, tf.mapped_triples[:, 2])
if on("partition"):
    from pykeen.nn.representation import PartitionRepresentation, Embedding
    assignment = torch.stack([torch.arange(10) % 2, torch.arange(10) // 2], -1)
    pr = PartitionRepresentation(assignment=assignment, bases=[Embedding, Embedding], bases_kwargs=[dict(max_id=5, shape=4), dict(max_id=5, shape=4)])
    print("== PartitionRepresentation forward(indices)"); breaks(pr, torch.tensor([0, 3, 7, 8]))
if on("bag"):
    from pykeen.nn.representation import EmbeddingBagRepresentation
    assignment = torch.stack([torch.arange(20) % 10, torch.arange(20) % 7], -1)
    eb = EmbeddingBagRepresentation(assignment=assignment, shape=4)
    print("== EmbeddingBagRepresentation forward(indices)"); breaks(eb, torch.tensor([0, 3, 7, 8]))
if on("text"):
    from pykeen.nn.representation import TextRepresentation
    tr_ = TextRepresentation(labels=[f"entity number {i}" for i in range(10)], encoder="characterembedding")
    print("== TextRepresentation(characterembedding) forward(indices)"); breaks(tr_, torch.tensor([0, 3, 7]))
if on("filter"):
    from pykeen.sampling.filtering import PythonSetFilterer
    fl = PythonSetFilterer(mapped_triples=tf.mapped_triples)
    print("== PythonSetFilterer.contains"); breaks(fl.contains, tf.mapped_triples[:8])
if on("textrc"):
    from pykeen.nn.representation import TextRepresentation
    tr_ = TextRepresentation(labels=[f"entity number {i}" for i in range(10)], encoder="characterembedding")
    print("== TextRepresentation forward over 4 different index sets (same shape): recompiles?")
    breaks(tr_, calls=[(torch.tensor(ix),) for ix in ([0, 3, 7], [1, 2, 5], [4, 6, 9], [8, 0, 2])])
