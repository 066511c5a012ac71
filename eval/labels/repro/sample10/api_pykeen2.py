# public-API finding (engine 702ca85): pykeen.models.baseline.utils.marginal_score with both marginals (line 76)
import torch, numpy as np, scipy.sparse as sps, warnings, logging
warnings.filterwarnings("ignore")
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sample11"))
from util import breaks, stub  # noqa: E402  (sample11's util.py: compiles and records breaks)
stub("torchvision", "transformers")  # broken torchvision build in this venv; neither is used here
from pykeen.models.baseline.utils import marginal_score
torch.manual_seed(0)
rng = np.random.default_rng(0)
per_entity = sps.csr_matrix(rng.random((30, 30)) * (rng.random((30, 30)) < 0.2))
per_relation = sps.csr_matrix(rng.random((4, 30)) * (rng.random((4, 30)) < 0.5))
batch = torch.stack([torch.randint(0, 30, (8,)), torch.randint(0, 4, (8,))], 1)
print("== marginal_score(batch, per_entity, per_relation, 30)")
breaks(marginal_score, batch, per_entity, per_relation, 30)
