"""piq: image quality metrics (full-reference, no-reference, distribution) and their losses.

Metrics are compiled as the functions users call (`piq.ssim(x, y, data_range=1.)`); losses as
the `nn.Module`s they train with, the prediction requiring grad.  Metrics that need
downloaded weights (LPIPS, DISTS, PieAPP, BRISQUE, CLIP-IQA, content/style losses) are left
out.
"""

from __future__ import annotations

import torch

LIBRARY = "piq"
DIST = "piq==0.8.0"

# (batch, image side) for shapes 0, 1, 2
_IMG = [(2, 32), (3, 40), (4, 48)]
# VIF-p needs a side of at least 41, SR-SIM one of at least 40 (a 0.25 downscale, 10x10 kernel)
_MID = [(2, 64), (3, 80), (4, 96)]
# MS-SSIM's five scales with an 11x11 window need a side of at least 161
_BIG = [(2, 176), (3, 192), (4, 208)]


def _pair(shape, sizes=_IMG, channels=3, grad=False):
    b, s = sizes[shape]
    x = torch.rand(b, channels, s, s)
    y = torch.rand(b, channels, s, s)
    if grad:
        x.requires_grad_(True)
    return x, y


def psnr(shape=0):
    import piq

    return piq.psnr, _pair(shape), {"data_range": 1.0, "reduction": "none"}


def ssim(shape=0):
    import piq

    return piq.ssim, _pair(shape), {"data_range": 1.0}


def ssim_loss(shape=0):
    import piq

    return piq.SSIMLoss(data_range=1.0).train(), _pair(shape, grad=True), {}


def ms_ssim_loss(shape=0):
    import piq

    return piq.MultiScaleSSIMLoss(data_range=1.0).train(), _pair(shape, _BIG, grad=True), {}


def gmsd(shape=0):
    import piq

    return piq.gmsd, _pair(shape), {"data_range": 1.0}


def ms_gmsd_loss(shape=0):
    import piq

    return piq.MultiScaleGMSDLoss(chromatic=True, data_range=1.0).train(), _pair(shape, grad=True), {}


def fsim(shape=0):
    import piq

    return piq.fsim, _pair(shape), {"data_range": 1.0, "chromatic": True}


def vsi_loss(shape=0):
    import piq

    return piq.VSILoss(data_range=1.0).train(), _pair(shape, grad=True), {}


def haarpsi(shape=0):
    import piq

    return piq.haarpsi, _pair(shape), {"data_range": 1.0}


def mdsi(shape=0):
    import piq

    return piq.mdsi, _pair(shape), {"data_range": 1.0}


def vif_p(shape=0):
    import piq

    return piq.vif_p, _pair(shape, _MID, channels=1), {"data_range": 1.0}


def tv_loss(shape=0):
    import piq

    b, s = _IMG[shape]
    x = torch.rand(b, 3, s, s, requires_grad=True)
    return piq.TVLoss(norm_type="l2").train(), (x,), {}


def dss(shape=0):
    import piq

    return piq.dss, _pair(shape), {"data_range": 1.0}


def srsim(shape=0):
    import piq

    return piq.srsim, _pair(shape, _MID), {"data_range": 1.0, "chromatic": True}


def fid(shape=0):
    import piq

    n = (32, 48, 64)[shape]
    metric = piq.FID()
    return metric.compute_metric, (torch.randn(n, 16), torch.randn(n, 16)), {}


def kid(shape=0):
    import piq

    n = (32, 48, 64)[shape]
    metric = piq.KID(subset_size=16)
    return metric.compute_metric, (torch.randn(n, 16), torch.randn(n, 16)), {}


MODELS = {
    "piq_psnr": ("eval", psnr),
    "piq_ssim": ("eval", ssim),
    "piq_ssim_loss": ("train", ssim_loss),
    "piq_ms_ssim_loss": ("train", ms_ssim_loss),
    "piq_gmsd": ("eval", gmsd),
    "piq_ms_gmsd_loss": ("train", ms_gmsd_loss),
    "piq_fsim": ("eval", fsim),
    "piq_vsi_loss": ("train", vsi_loss),
    "piq_haarpsi": ("eval", haarpsi),
    "piq_mdsi": ("eval", mdsi),
    "piq_vif_p": ("eval", vif_p),
    "piq_tv_loss": ("train", tv_loss),
    "piq_dss": ("eval", dss),
    "piq_srsim": ("eval", srsim),
    "piq_fid": ("eval", fid),
    "piq_kid": ("eval", kid),
}
