"""julius.ResampleFrac.forward: tensor used as slice bound (resample.py:149) and the output_length
range check against a tensor (resample.py:143, only evaluated when output_length is passed)."""
import _common
import torch
import julius

r = julius.ResampleFrac(4, 5)
x = torch.randn(2, 80)
print("forward(x)")
_common.breaks(r, x)
print("forward(x, output_length=90)")
_common.breaks(lambda t: r(t, output_length=90), x)
