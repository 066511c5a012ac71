"""auraloss: audio losses in the time and frequency domains, (prediction, target) as a training
loop calls them.

Shapes: batch 2 -> 3 -> 4 and clip length 4096 -> 6144 -> 8192 samples (channels fixed).
The Mel / chroma STFT losses are left out: they need librosa for their filter banks; so is
STFTLoss(scale_invariance=True), which fails in eager mode for a batch of more than one.
"""

from __future__ import annotations

import torch

LIBRARY = "auraloss"
DIST = "auraloss==0.4.0"

B = (2, 3, 4)
T = (4096, 6144, 8192)


def _pair(shape, channels=1):
    b, t = B[shape], T[shape]
    pred = torch.randn(b, channels, t, requires_grad=True)
    target = torch.randn(b, channels, t)
    return pred, target


def _loss(make, channels=1):
    def builder(shape=0):
        return make().train(), _pair(shape, channels), {}

    return builder


def _f(name, **kw):
    def make():
        import auraloss

        return getattr(auraloss.freq, name)(**kw)

    return make


def _t(name, **kw):
    def make():
        import auraloss

        return getattr(auraloss.time, name)(**kw)

    return make


def fir_pre_emphasis(shape=0):
    """The perceptual FIR pre-emphasis filter (A-weighting taps designed with scipy)."""
    import auraloss

    filt = auraloss.perceptual.FIRFilter(filter_type="aw", coef=0.85, fs=16000, ntaps=101)
    return filt.train(), _pair(shape), {}


def stft_with_fir_step(shape=0):
    """A training-step loss: FIR-weighted signals into an STFT loss plus an ESR time loss."""
    import auraloss

    fir = auraloss.perceptual.FIRFilter(filter_type="hp", coef=0.85, fs=16000)
    stft = auraloss.freq.STFTLoss(fft_size=512, hop_size=128, win_length=512)
    esr = auraloss.time.ESRLoss()

    def loss_step(pred, target):
        p, t = fir(pred, target)
        return stft(p, t) + 0.5 * esr(pred, target)

    return loss_step, _pair(shape), {}


MODELS = {
    "auraloss_stft": ("train", _loss(_f("STFTLoss", fft_size=512, hop_size=128, win_length=512))),
    "auraloss_stft_phase_lin": ("train", _loss(_f("STFTLoss", fft_size=256, hop_size=64, win_length=256,
                                                  w_lin_mag=1.0, w_phs=1.0, mag_distance="L2"))),
    "auraloss_stft_perceptual": ("train", _loss(_f("STFTLoss", fft_size=512, hop_size=128, win_length=512,
                                                   perceptual_weighting=True, sample_rate=16000))),
    "auraloss_multi_resolution_stft": ("train", _loss(_f("MultiResolutionSTFTLoss", fft_sizes=[256, 512, 1024],
                                                         hop_sizes=[64, 128, 256],
                                                         win_lengths=[256, 512, 1024]))),
    "auraloss_random_resolution_stft": ("train", _loss(_f("RandomResolutionSTFTLoss", resolutions=2,
                                                          min_fft_size=256, max_fft_size=1024,
                                                          min_hop_size=0.25, max_hop_size=0.5))),
    "auraloss_sum_and_difference_stft": ("train", _loss(_f("SumAndDifferenceSTFTLoss", fft_sizes=[256, 512],
                                                           hop_sizes=[64, 128], win_lengths=[256, 512]),
                                                        channels=2)),
    "auraloss_esr": ("train", _loss(_t("ESRLoss"))),
    "auraloss_dc": ("train", _loss(_t("DCLoss"))),
    "auraloss_logcosh": ("train", _loss(_t("LogCoshLoss"))),
    "auraloss_snr": ("train", _loss(_t("SNRLoss"))),
    "auraloss_sisdr": ("train", _loss(_t("SISDRLoss"))),
    "auraloss_sdsdr": ("train", _loss(_t("SDSDRLoss"))),
    "auraloss_fir_pre_emphasis": ("train", fir_pre_emphasis),
    "auraloss_stft_fir_esr_step": ("train", stft_with_fir_step),
}
