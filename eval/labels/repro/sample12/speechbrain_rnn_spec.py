"""Which line specialises the sequence length in QuasiRNN / CLiGRU / QLiGRU (eval)? Run with TORCH_LOGS=dynamic."""
import os, sys; sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _sb  # noqa: F401
import torch
from speechbrain.nnet.RNN import QuasiRNN
from speechbrain.nnet.complex_networks.c_RNN import CLiGRU
from speechbrain.nnet.quaternion_networks.q_RNN import QLiGRU
for cls in (QuasiRNN, CLiGRU, QLiGRU):
    print("==", cls.__name__, flush=True)
    torch._dynamo.reset()
    m = cls(hidden_size=8, input_shape=(4, 10, 8)); m.eval()
    cf = torch.compile(m, backend="eager")
    for T in (10, 12, 14):
        cf(torch.randn(4, T, 8))
