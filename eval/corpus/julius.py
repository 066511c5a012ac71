"""julius: fast sinc resampling, low/high/band-pass filters, band splitting and FFT
convolutions on audio batches (batch, channels, time): batch 2 -> 3 -> 4, time 800 -> 1200 -> 1600.
Modules and the functions julius's README shows (`julius.resample_frac(x, old_sr, new_sr)`).
"""

from __future__ import annotations

import torch

LIBRARY = "julius"
DIST = "julius==0.2.8"

_AUDIO = [(2, 800), (3, 1200), (4, 1600)]


def _wav(shape, channels=1, grad=False):
    b, t = _AUDIO[shape]
    return torch.randn(b, channels, t, requires_grad=grad)


def resample_frac_module(shape=0):
    import julius

    return julius.ResampleFrac(4, 5).eval(), (_wav(shape, 2),), {}


def resample_frac_fn(shape=0):
    import julius

    return julius.resample_frac, (_wav(shape), 16, 11), {}


def lowpass(shape=0):
    import julius

    return julius.LowPassFilter(0.1).eval(), (_wav(shape),), {}


def lowpass_filters(shape=0):
    import julius

    return julius.LowPassFilters([0.05, 0.1, 0.25]).eval(), (_wav(shape, 2),), {}


def lowpass_filter_fn(shape=0):
    import julius

    return julius.lowpass_filter, (_wav(shape), 0.25), {}


def highpass_fft(shape=0):
    import julius

    return julius.HighPassFilter(0.2, fft=True).eval(), (_wav(shape),), {}


def highpass_filters(shape=0):
    import julius

    return julius.HighPassFilters([0.1, 0.3]).train(), (_wav(shape, grad=True),), {}


def bandpass(shape=0):
    import julius

    return julius.BandPassFilter(0.1, 0.3).eval(), (_wav(shape, 2),), {}


def split_bands(shape=0):
    import julius

    return julius.SplitBands(sample_rate=16000, n_bands=4).eval(), (_wav(shape),), {}


def split_bands_fn(shape=0):
    import julius

    return julius.split_bands, (_wav(shape), 16000), {"cutoffs": [500, 2000, 4000]}


def fft_conv1d(shape=0):
    import julius

    return julius.FFTConv1d(2, 4, 64, stride=2).train(), (_wav(shape, 2, grad=True),), {}


MODELS = {
    "julius_resample_frac_module": ("eval", resample_frac_module),
    "julius_resample_frac_fn": ("eval", resample_frac_fn),
    "julius_lowpass": ("eval", lowpass),
    "julius_lowpass_filters": ("eval", lowpass_filters),
    "julius_lowpass_filter_fn": ("eval", lowpass_filter_fn),
    "julius_highpass_fft": ("eval", highpass_fft),
    "julius_highpass_filters": ("train", highpass_filters),
    "julius_bandpass": ("eval", bandpass),
    "julius_split_bands": ("eval", split_bands),
    "julius_split_bands_fn": ("eval", split_bands_fn),
    "julius_fft_conv1d": ("train", fft_conv1d),
}
