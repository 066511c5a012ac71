"""piq.utils._validate_input: asserts on t.min()/t.max() with f-string messages (common.py:100,102)."""
import _common
import torch
from piq.utils import _validate_input


def f(x):
    _validate_input([x], dim_range=(4, 4), data_range=(0, 1.0))
    return x * 2


_common.breaks(f, torch.rand(1, 3, 8, 8))
