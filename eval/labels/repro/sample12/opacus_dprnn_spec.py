"""Which line specialises the sequence length of DPLSTM (padded input)? Run with TORCH_LOGS=dynamic."""
import torch
from opacus.layers import DPLSTM
torch.manual_seed(0)
m = DPLSTM(4, 8, num_layers=1)
cf = torch.compile(m, backend="eager")
for T in (3, 4, 5, 6):
    cf(torch.randn(T, 2, 4))
