"""pytorch-msssim: SSIM and MS-SSIM as its README uses them: the functions `ssim` / `ms_ssim`,
the modules `SSIM` / `MS_SSIM`, and the usual reconstruction losses built on them (`1 - ssim`,
MS-SSIM mixed with L1) in a user module's training forward.  Batch 2 -> 3 -> 4; images grow
32 -> 40 -> 48 (ms_ssim's default 11-tap window needs more than 160 pixels: 168 -> 176 -> 184;
with a 3-tap window 48 -> 56 -> 64); the 5-D (video) case grows 16 -> 20 -> 24 pixels.
"""

from __future__ import annotations

import torch
from torch import nn

LIBRARY = "pytorch_msssim"
DIST = "pytorch-msssim==1.0.0"

_BATCH = (2, 3, 4)


def _pair(shape, sizes, channels=3, scale=255.0, grad=False):
    b, s = _BATCH[shape], sizes[shape]
    x = (torch.rand(b, channels, s, s) * scale).requires_grad_(grad)
    y = (torch.rand(b, channels, s, s) * scale)
    return x, y


_IMG = (32, 40, 48)
_BIG = (168, 176, 184)
_MID = (48, 56, 64)


class _Autoencoder(nn.Module):
    """A tiny conv autoencoder trained with an SSIM-based reconstruction loss."""

    def __init__(self, channels=3):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(channels, 8, 3, padding=1), nn.ReLU(),
                                 nn.Conv2d(8, channels, 3, padding=1), nn.Sigmoid())


class _SSIMLoss(_Autoencoder):
    def __init__(self):
        super().__init__()
        from pytorch_msssim import SSIM

        self.ssim = SSIM(data_range=1.0, size_average=True, channel=3)

    def forward(self, x):
        return 1 - self.ssim(self.net(x), x)


class _MixLoss(_Autoencoder):
    """alpha * (1 - MS-SSIM) + (1 - alpha) * L1 (Zhao et al.), the common mixed loss."""

    def __init__(self, alpha=0.84):
        super().__init__(channels=1)
        from pytorch_msssim import MS_SSIM

        self.alpha = alpha
        self.ms_ssim = MS_SSIM(data_range=1.0, size_average=True, channel=1, win_size=3)

    def forward(self, x):
        out = self.net(x)
        return self.alpha * (1 - self.ms_ssim(out, x)) + (1 - self.alpha) * nn.functional.l1_loss(out, x)


def ssim_fn(shape=0):
    from pytorch_msssim import ssim

    return ssim, _pair(shape, _IMG), {"data_range": 255, "size_average": True}


def ms_ssim_fn(shape=0):
    from pytorch_msssim import ms_ssim

    return ms_ssim, _pair(shape, _BIG), {"data_range": 255, "size_average": True}


def ms_ssim_small_window(shape=0):
    from pytorch_msssim import ms_ssim

    return ms_ssim, _pair(shape, _MID, scale=1.0), {"data_range": 1.0, "win_size": 3,
                                                    "weights": [0.2, 0.3, 0.5]}


def ssim_module(shape=0):
    from pytorch_msssim import SSIM

    return SSIM(data_range=255, size_average=True, channel=3).eval(), _pair(shape, _IMG), {}


def ms_ssim_module(shape=0):
    from pytorch_msssim import MS_SSIM

    module = MS_SSIM(data_range=255, size_average=False, channel=3)
    return module.eval(), _pair(shape, _BIG), {}


def ssim_loss_train(shape=0):
    b, s = _BATCH[shape], _IMG[shape]
    return _SSIMLoss().train(), (torch.rand(b, 3, s, s),), {}


def mix_loss_train(shape=0):
    b, s = _BATCH[shape], _MID[shape]
    return _MixLoss().train(), (torch.rand(b, 1, s, s),), {}


def ssim_video(shape=0):
    """5-D inputs (N, C, T, H, W): ssim filters with a 3-D gaussian."""
    from pytorch_msssim import ssim

    b, s = _BATCH[shape], (16, 20, 24)[shape]
    x, y = torch.rand(b, 1, 8, s, s), torch.rand(b, 1, 8, s, s)
    return ssim, (x, y), {"data_range": 1.0, "win_size": 7}


MODELS = {
    "msssim_ssim_fn": ("eval", ssim_fn),
    "msssim_ms_ssim_fn": ("eval", ms_ssim_fn),
    "msssim_ms_ssim_small_window": ("eval", ms_ssim_small_window),
    "msssim_ssim_module": ("eval", ssim_module),
    "msssim_ms_ssim_module": ("eval", ms_ssim_module),
    "msssim_ssim_loss_train": ("train", ssim_loss_train),
    "msssim_mix_loss_train": ("train", mix_loss_train),
    "msssim_ssim_video": ("eval", ssim_video),
}
