# public-API findings (engine 702ca85): pykeen losses' process_lcwa_scores, evaluation filters, EA helpers,
# NodePiece tokenization helpers, initializers, utils (_reorder via interactions, ensure_complex, isin_many_dim), FixedModel
import torch, sys, numpy as np, pandas as pd, warnings, logging
warnings.filterwarnings("ignore")
logging.getLogger("pykeen").setLevel(logging.ERROR)
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sample11"))
from util import breaks, stub  # noqa: E402  (sample11's util.py: compiles and records breaks)
stub("torchvision", "transformers")  # broken torchvision build in this venv; neither is used by the code exercised
torch.manual_seed(0)
from pykeen.triples import TriplesFactory
from pykeen.losses import MarginPairwiseLoss, AdversarialBCEWithLogitsLoss, NSSALoss
from pykeen.evaluation.evaluator import create_sparse_positive_filter_, filter_scores_
from pykeen.datasets.ea.combination import swap_index_triples, filter_map_alignment
from pykeen.nn.node_piece.tokenization import RelationTokenizer
from pykeen.nn.node_piece.utils import random_sample_no_replacement, prepare_edges_for_metis
from pykeen.nn.utils import safe_diagonal
from pykeen.nn import init as pinit
from pykeen.nn.modules import DistMultInteraction, RotatEInteraction
from pykeen.utils import isin_many_dim, format_relative_comparison, complex_normalize
from pykeen.models import FixedModel
def T(name, fn, calls, kw=None):
    print("==", name); breaks(fn, calls=calls, **(kw or {}))
rng = np.random.default_rng(0)
ents = [f"e{i}" for i in range(30)]; rels = [f"r{i}" for i in range(4)]
tr = np.array([[ents[rng.integers(30)], rels[rng.integers(4)], ents[rng.integers(30)]] for _ in range(150)], dtype=str)
tf = TriplesFactory.from_labeled_triples(tr, create_inverse_triples=False)
mt = tf.mapped_triples
pred = torch.randn(8, 30); lab = (torch.rand(8, 30) < 0.2).float(); lab[:, 0] = 1.0
T("MarginPairwiseLoss.process_lcwa_scores", MarginPairwiseLoss().process_lcwa_scores, [(pred, lab)])
T("NSSALoss (AdversarialLoss).process_lcwa_scores", NSSALoss().process_lcwa_scores, [(pred, lab)])
T("create_sparse_positive_filter_(hrt_batch, all_pos_triples)", create_sparse_positive_filter_, [(mt[:8], mt)])
fb = torch.stack([torch.arange(8), torch.randint(0, 30, (8,))], 1)
T("filter_scores_(scores, filter_batch)", filter_scores_, [(torch.randn(8, 30), fb)])
dense = torch.full((30,), -1); dense[:15] = torch.arange(15) + 30
T("swap_index_triples(mapped_triples, dense_map, 0)", swap_index_triples, [(mt, dense, 0)])
tf2 = TriplesFactory.from_labeled_triples(tr, create_inverse_triples=False)
al = pd.DataFrame({"left": ents[:10], "right": ents[5:15]})
T("filter_map_alignment(alignment, left, right, offsets)", filter_map_alignment, [(al, tf, tf2, torch.tensor([0, 30]))])
T("RelationTokenizer()(mapped_triples, ...)", RelationTokenizer(), [(mt, 2, 30, 4)])
pool = {i: {0, 1, 2} for i in range(10)}
T("random_sample_no_replacement(pool, 2, 10)", random_sample_no_replacement, [(pool, 2, 10)])
T("prepare_edges_for_metis(edge_index)", prepare_edges_for_metis, [(mt[:, [0, 2]].t(),)])
sp = torch.sparse_coo_tensor(torch.tensor([[0, 1, 2, 1], [0, 1, 0, 2]]), torch.tensor([1., 2., 3., 4.]), (3, 3))
T("safe_diagonal(sparse matrix)", safe_diagonal, [(sp,)])
T("xavier_uniform_(w) 3 shapes", pinit.xavier_uniform_, [(torch.empty(10, d),) for d in (8, 12, 16)])
T("xavier_normal_(w)", pinit.xavier_normal_, [(torch.empty(10, 8),)])
T("init_phases(view_as_real(complex weight)) (as Embedding passes it)", pinit.init_phases, [(torch.empty(10, 4, 2),)])
T("isin_many_dim(elements, test_elements)", isin_many_dim, [(mt[:10], mt[5:40])])
T("format_relative_comparison(int, int)", format_relative_comparison, [(3, 10)])
dm = DistMultInteraction()
T("DistMultInteraction forward (score_t shapes), batch 4,6,8,10", dm,
  [(torch.randn(b, 1, 8), torch.randn(b, 1, 8), torch.randn(1, 30, 8)) for b in (4, 6, 8, 10)])
T("DistMultInteraction forward (hrt shapes), batch 4,6,8,10", dm,
  [(torch.randn(b, 8), torch.randn(b, 8), torch.randn(b, 8)) for b in (4, 6, 8, 10)])
ro = RotatEInteraction()
T("RotatEInteraction forward complex inputs", ro, [(torch.randn(4, 8, dtype=torch.cfloat), torch.randn(4, 8, dtype=torch.cfloat), torch.randn(4, 8, dtype=torch.cfloat))])
T("complex_normalize(complex)", complex_normalize, [(torch.randn(4, 8, dtype=torch.cfloat),)])
fm = FixedModel(triples_factory=tf)
T("FixedModel.score_hrt", fm.score_hrt, [(mt[:8],)])
