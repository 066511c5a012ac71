# public-API findings (engine 702ca85): pytorch_widedeep metrics __call__ and BaseBayesianModel.sample_elbo
import torch, torch.nn as nn
from util import stub_missing, breaks
# torchvision in this venv has no build for torch 2.13 (its ops fail to load): stubbed, only wdtypes imports it
from util import stub
stub("torchvision", "transformers")  # transformers: only the HF text model imports it
stub_missing("pytorch_widedeep")
torch.manual_seed(0)
from pytorch_widedeep import metrics as M
from pytorch_widedeep.bayesian_models import BayesianWide
def T(name, fn, calls):
    print("==", name); breaks(fn, calls=calls)
yp = torch.rand(16, 3); yt = torch.randint(0, 3, (16,))
T("Accuracy multiclass", M.Accuracy(), [(yp, yt)])
ypb = torch.rand(16, 1); ytb = (torch.rand(16, 1) > 0.5).float()
T("FBetaScore binary", M.FBetaScore(beta=2), [(ypb, ytb)])
T("R2Score", M.R2Score(), [(torch.randn(16, 1), torch.randn(16, 1))])
yr = torch.rand(4 * 10); ytr = (torch.rand(4 * 10) > 0.6).float()
for cls in (M.NDCG_at_k, M.BinaryNDCG_at_k, M.MAP_at_k, M.HitRatio_at_k, M.Precision_at_k, M.Recall_at_k):
    T(cls.__name__, cls(n_cols=10, k=5), [(yr, ytr)])
m = BayesianWide(input_dim=20, pred_dim=1)
X = torch.randint(0, 20, (8, 3)); y = torch.rand(8, 1)
T("sample_elbo n_samples=2,2,2 (fixed, as the trainer passes)", m.sample_elbo, [(X, y, nn.MSELoss(), 2, 10)] * 3)
T("sample_elbo n_samples=2,3,4,5", m.sample_elbo, [(X, y, nn.MSELoss(), n, 10) for n in (2, 3, 4, 5)])
