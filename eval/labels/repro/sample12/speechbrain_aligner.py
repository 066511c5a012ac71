"""speechbrain HMMAligner forward (forward and viterbi algorithms) under torch.compile (backend=eager)."""
import os, sys; sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _sb  # noqa: F401
from _util import breaks
import torch
from speechbrain.alignment.aligner import HMMAligner

torch.manual_seed(0)
al = HMMAligner()
B, T, V, U = 2, 20, 6, 5
emis = torch.randn(B, T, V).log_softmax(-1)
lens = torch.tensor([1.0, 0.8]); phns = torch.randint(1, V, (B, U)); phn_lens = torch.tensor([1.0, 0.6])
print("== forward algorithm")
breaks(lambda e, l, p, pl: al(e, l, p, pl, "forward"), emis, lens, phns, phn_lens)
print("== viterbi algorithm")
breaks(lambda e, l, p, pl: al(e, l, p, pl, "viterbi"), emis, lens, phns, phn_lens)
print("== viterbi algorithm with prob_matrices (lexicon path)")
pm = {"pi_prob": torch.full((B, U), -1e4).index_fill_(1, torch.tensor([0]), 0.0),
      "trans_prob": torch.zeros(B, U, U).log_softmax(-1),
      "final_states": [torch.tensor([U - 1, U - 2]), torch.tensor([1, 2])]}
breaks(lambda e, l, p, pl: al(e, l, p, pl, "viterbi", pm), emis, lens, phns, phn_lens)
