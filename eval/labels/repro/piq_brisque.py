"""piq.BRISQUELoss: breaks from _validate_input asserts, get_padding, _ggd/_aggd asserts; the 1.5.0 warn is dead.

_score_svr (downloads SVR weights; not a flagged line) is replaced by a sum so nothing is fetched.
"""
import _common
import torch
import piq
import sys

sys.modules["piq.brisque"]._score_svr = lambda features: features.sum()
x = torch.rand(1, 3, 64, 64)
_common.breaks(piq.BRISQUELoss(data_range=1.0), x)
