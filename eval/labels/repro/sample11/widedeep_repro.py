import torch, torch.nn as nn
from util import stub_missing, breaks
# heavy optional deps of pytorch_widedeep's package __init__ (text/image preprocessing, metrics, data frames),
# none installed here: stubbed; none is used by the model/loss code exercised here
stub_missing("pytorch_widedeep")
torch.manual_seed(0)
from pytorch_widedeep.losses import EncoderDecoderLoss
from pytorch_widedeep.models.model_fusion import ModelFuser
from pytorch_widedeep.models.tabular.embeddings_layers import FullEmbeddingDropout
from pytorch_widedeep.models.tabular.self_supervised._augmentations import cut_mix
from pytorch_widedeep.models.tabular.tabnet._layers import GBN
from pytorch_widedeep.models.text.rnns.basic_rnn import BasicRNN
def T(name, fn, calls):
    print("==", name); breaks(fn, calls=calls)
xt = torch.randn(16, 6); xp = torch.randn(16, 6); xt[:, 2] = 0.0
T("EncoderDecoderLoss", EncoderDecoderLoss(), [(xt, xp, (torch.rand(16, 6) > 0.5).float())])
class Comp(nn.Module):
    def __init__(self, i, o): super().__init__(); self.l = nn.Linear(i, o); self.output_dim = o
    def forward(self, x): return self.l(x)
fuser = ModelFuser([Comp(4, 8), Comp(4, 6)], fusion_method="sum", projection_method="max")
T("ModelFuser sum + projection", fuser, [([torch.randn(5, 4), torch.randn(5, 4)],)])
d = FullEmbeddingDropout(0.2).train()
T("FullEmbeddingDropout train", d, [(torch.randn(8, 5, 4),)])
T("cut_mix", cut_mix, [(torch.randn(8, 5),)])
g = GBN(6, virtual_batch_size=4).train()
T("GBN batch 8,12,16", g, [(torch.randn(b, 6),) for b in (8, 12, 16)])
T("BasicRNN lstm", BasicRNN(vocab_size=50, embed_dim=8, rnn_type="lstm", hidden_dim=8, n_layers=1).eval(), [(torch.randint(0, 50, (4, 7)),)])
T("BasicRNN gru", BasicRNN(vocab_size=50, embed_dim=8, rnn_type="gru", hidden_dim=8, n_layers=1).eval(), [(torch.randint(0, 50, (4, 7)),)])
