"""opacus DPLSTM / DPMultiheadAttention under torch.compile (backend=eager): graph breaks and recompiles."""
import os, sys; sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _util import breaks, report
import torch
from torch.nn.utils.rnn import pack_padded_sequence
from opacus.layers import DPLSTM, DPMultiheadAttention

torch.manual_seed(0)
m = DPLSTM(4, 8, num_layers=2, bidirectional=True)
print("== DPLSTM packed input")
x = torch.randn(6, 3, 4)
p = pack_padded_sequence(x, torch.tensor([6, 4, 2]))
breaks(m, p)
print("== DPLSTM padded input, seq lengths 3,4,5,6 (batch 2)")
breaks(m, None, calls=[(torch.randn(T, 2, 4),) for T in (3, 4, 5, 6)])
print("== DPLSTM padded input, batch sizes 2,3,4,5 (T=4)")
breaks(m, None, calls=[(torch.randn(4, B, 4),) for B in (2, 3, 4, 5)])
print("== DPMultiheadAttention with uint8 attn_mask / key_padding_mask")
a = DPMultiheadAttention(8, 2)
q = torch.randn(5, 2, 8)
breaks(lambda q, am, kpm: a(q, q, q, attn_mask=am, key_padding_mask=kpm), q,
       torch.zeros(5, 5, dtype=torch.uint8), torch.zeros(2, 5, dtype=torch.uint8))
print("== DPMultiheadAttention with bool masks")
breaks(lambda q, am, kpm: a(q, q, q, attn_mask=am, key_padding_mask=kpm), q,
       torch.zeros(5, 5, dtype=torch.bool), torch.zeros(2, 5, dtype=torch.bool))
