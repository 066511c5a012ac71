"""piq IW-SSIM (boolean-mask setitem at iw_ssim.py:348; levels loop) and MS-GMSD (num_scales loop):
break sites, then graphs compiled per call over 3 image sizes (TCL505 on a buffer's size)."""
import _common
import torch
import piq


def mk(s):
    return (torch.rand(1, 1, s, s), torch.rand(1, 1, s, s))


iw = piq.InformationWeightedSSIMLoss(data_range=1.0)
print("IW-SSIM breaks")
_common.breaks(iw, *mk(176))
print("IW-SSIM recompiles over sizes 176/192/208")
_common.recompiles(iw, [mk(176), mk(192), mk(208)])
g = piq.MultiScaleGMSDLoss(data_range=1.0)
print("MS-GMSD recompiles over sizes 32/40/48")
_common.recompiles(g, [mk(32), mk(40), mk(48)])
