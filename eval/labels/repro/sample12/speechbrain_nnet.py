"""speechbrain nnet / lobes / processing modules under torch.compile (backend=eager): graph breaks and recompiles."""
import os, sys; sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _sb  # noqa: F401
from _util import breaks
import torch
torch.manual_seed(0)
from speechbrain.nnet.RNN import LSTM, GRU, LiGRU, QuasiRNN
from speechbrain.nnet.complex_networks.c_RNN import CLSTM, CLiGRU
from speechbrain.nnet.quaternion_networks.q_RNN import QLSTM, QLiGRU
from speechbrain.nnet.quaternion_networks.q_normalization import QBatchNorm
from speechbrain.nnet.attention import RoPEMHA
from speechbrain.processing.features import InputNormalization
from speechbrain.nnet.loss.guidedattn_loss import GuidedAttentionLoss
from speechbrain.nnet.losses import LaplacianVarianceLoss
from speechbrain.lobes.models.transformer.Transformer import get_mask_from_lengths

def sect(t): print("==", t)
x = torch.randn(4, 10, 8)
sect("LSTM"); breaks(LSTM(hidden_size=8, input_shape=x.shape), x)
sect("GRU"); breaks(GRU(hidden_size=8, input_shape=x.shape), x)
for name, cls, inp in [("LiGRU", LiGRU, x), ("CLSTM", CLSTM, x), ("QLSTM", QLSTM, x),
                       ("CLiGRU", CLiGRU, x), ("QLiGRU", QLiGRU, x)]:
    m = cls(hidden_size=8, input_shape=inp.shape); m.train()
    sect(f"{name} train(), same input 4 times")
    breaks(m, None, calls=[(inp,)] * 4)
    m.eval()
    sect(f"{name} eval(), seq lengths 10,12,14,16")
    breaks(m, None, calls=[(torch.randn(4, T, 8),) for T in (10, 12, 14, 16)])
m = QuasiRNN(hidden_size=8, input_shape=x.shape); m.eval()
sect("QuasiRNN eval(), seq lengths 10,12,14,16")
breaks(m, None, calls=[(torch.randn(4, T, 8),) for T in (10, 12, 14, 16)])
sect("QBatchNorm train()")
qb = QBatchNorm(input_size=8); qb.train(); breaks(qb, None, calls=[(torch.randn(4, 8),)] * 2)
sect("RoPEMHA self-attention (q, k, v are the same tensor)")
mha = RoPEMHA(num_heads=2, embed_dim=8); inp = torch.randn(2, 6, 8)
breaks(lambda a: mha(a, a, a), inp)
sect("InputNormalization train(), same input 4 times")
norm = InputNormalization(); norm.train()
breaks(norm, None, calls=[(torch.randn(4, 10, 8), torch.ones(4))] * 4)
sect("GuidedAttentionLoss defaults")
breaks(GuidedAttentionLoss(), torch.rand(2, 12, 7), torch.tensor([7, 5]), torch.tensor([12, 9]))
sect("LaplacianVarianceLoss defaults")
breaks(LaplacianVarianceLoss(), torch.randn(2, 1, 16, 16), torch.tensor([1.0, 0.75]))
sect("get_mask_from_lengths(lengths)  (Tacotron2 decoder call)")
breaks(get_mask_from_lengths, torch.tensor([3, 2, 4]))
