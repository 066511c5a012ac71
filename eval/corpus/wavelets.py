"""pytorch-wavelets: discrete and dual-tree complex wavelet transforms as its README uses them:
`DWTForward(J, wave, mode)` / `DWTInverse` on images (alone and as a round trip), the 1-D
`DWT1DForward` / `DWT1DInverse`, `DTCWTForward` / `DTCWTInverse`,
the scattering layers `ScatLayer` / `ScatLayerj2` in front of a small classifier, and the
transforms inside user networks: wavelet pooling in a CNN and a wavelet-domain reconstruction
loss.  Batch 2 -> 3 -> 4; images 32 -> 40 -> 48 pixels, signals 64 -> 80 -> 96 samples.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

LIBRARY = "pytorch_wavelets"
DIST = "pytorch-wavelets==1.3.0"

_BATCH = (2, 3, 4)
_IMG = (32, 40, 48)
_SIG = (64, 80, 96)


def _img(shape, channels=3, grad=False):
    s = _IMG[shape]
    return torch.randn(_BATCH[shape], channels, s, s, requires_grad=grad)


class _RoundTrip(nn.Module):
    """Forward transform, shrink the detail coefficients (soft threshold), inverse transform."""

    def __init__(self, xfm, ifm, threshold=0.1):
        super().__init__()
        self.xfm, self.ifm, self.threshold = xfm, ifm, threshold

    def forward(self, x):
        low, highs = self.xfm(x)
        highs = [torch.sign(h) * F.relu(h.abs() - self.threshold) for h in highs]
        return self.ifm((low, highs))


class _ScatNet(nn.Module):
    """A scattering front end (fixed wavelets) and a trained linear classifier."""

    def __init__(self, scat, channels):
        super().__init__()
        self.scat = scat
        self.head = nn.Sequential(nn.Conv2d(channels, 16, 3, padding=1), nn.ReLU(),
                                  nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))

    def forward(self, x):
        return self.head(self.scat(x))


class _WaveletPoolCNN(nn.Module):
    """Downsampling by a one-level Haar DWT (the low band and the three detail bands stacked)."""

    def __init__(self):
        super().__init__()
        from pytorch_wavelets import DWTForward

        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.pool = DWTForward(J=1, wave="haar", mode="periodization")
        self.conv2 = nn.Conv2d(32, 16, 3, padding=1)
        self.fc = nn.Linear(16, 10)

    def wavelet_pool(self, x):
        low, (high,) = self.pool(x)
        return torch.cat([low, high.flatten(1, 2)], dim=1)

    def forward(self, x):
        x = self.wavelet_pool(F.relu(self.conv1(x)))
        x = F.relu(self.conv2(x))
        return self.fc(x.mean(dim=(2, 3)))


class _WaveletLoss(nn.Module):
    """An autoencoder trained with L1 on every band of a two-level DWT of output and target."""

    def __init__(self):
        super().__init__()
        from pytorch_wavelets import DWTForward

        self.net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 3, 3, padding=1))
        self.dwt = DWTForward(J=2, wave="db2", mode="symmetric")

    def forward(self, x):
        out = self.net(x)
        (lo_o, hi_o), (lo_x, hi_x) = self.dwt(out), self.dwt(x)
        loss = F.l1_loss(lo_o, lo_x)
        for a, b in zip(hi_o, hi_x):
            loss = loss + F.l1_loss(a, b)
        return loss


def dwt2d(shape=0):
    from pytorch_wavelets import DWTForward

    return DWTForward(J=3, wave="db3", mode="zero").eval(), (_img(shape),), {}


def dwt2d_roundtrip(shape=0):
    from pytorch_wavelets import DWTForward, DWTInverse

    model = _RoundTrip(DWTForward(J=2, wave="db2", mode="symmetric"), DWTInverse(wave="db2", mode="symmetric"))
    return model.eval(), (_img(shape),), {}


def dwt1d_roundtrip(shape=0):
    from pytorch_wavelets import DWT1DForward, DWT1DInverse

    model = _RoundTrip(DWT1DForward(J=3, wave="db4", mode="reflect"), DWT1DInverse(wave="db4", mode="reflect"))
    return model.eval(), (torch.randn(_BATCH[shape], 2, _SIG[shape]),), {}


def dtcwt(shape=0):
    from pytorch_wavelets import DTCWTForward

    return DTCWTForward(J=3, biort="near_sym_b", qshift="qshift_b").eval(), (_img(shape),), {}


def dtcwt_roundtrip(shape=0):
    from pytorch_wavelets import DTCWTForward, DTCWTInverse

    model = _RoundTrip(DTCWTForward(J=2, biort="near_sym_a", qshift="qshift_a"),
                       DTCWTInverse(biort="near_sym_a", qshift="qshift_a"))
    return model.eval(), (_img(shape),), {}


def scatnet_train(shape=0):
    from pytorch_wavelets import ScatLayer

    return _ScatNet(ScatLayer(), channels=3 * 7).train(), (_img(shape),), {}


def scatnet_j2_train(shape=0):
    from pytorch_wavelets import ScatLayerj2

    return _ScatNet(ScatLayerj2(), channels=3 * 49).train(), (_img(shape),), {}


def wavelet_pool_cnn_train(shape=0):
    return _WaveletPoolCNN().train(), (_img(shape, grad=True),), {}


def wavelet_loss_train(shape=0):
    return _WaveletLoss().train(), (_img(shape),), {}


MODELS = {
    "wavelets_dwt2d": ("eval", dwt2d),
    "wavelets_dwt2d_roundtrip": ("eval", dwt2d_roundtrip),
    "wavelets_dwt1d_roundtrip": ("eval", dwt1d_roundtrip),
    "wavelets_dtcwt": ("eval", dtcwt),
    "wavelets_dtcwt_roundtrip": ("eval", dtcwt_roundtrip),
    "wavelets_scatnet_train": ("train", scatnet_train),
    "wavelets_scatnet_j2_train": ("train", scatnet_j2_train),
    "wavelets_wavelet_pool_cnn_train": ("train", wavelet_pool_cnn_train),
    "wavelets_wavelet_loss_train": ("train", wavelet_loss_train),
}
