"""asteroid-filterbanks: learnable and fixed audio filterbanks as Asteroid's docs use them:
`Encoder(STFTFB(...))` and `transforms.mag`, `make_enc_dec` for congruent encoder/decoder pairs
(free, analytic free, STFT with a pseudo-inverse decoder), a parametrized sinc filterbank,
`TorchSTFTFB`, `PCEN` on a magnitude spectrogram, `griffin_lim`, and the masking
separators built on them (a TasNet-style real mask on a free filterbank, a complex mask on an
STFT) trained in a user module.  Batch 2 -> 3 -> 4, waveforms of 800 -> 1000 -> 1200 samples.
"""

from __future__ import annotations

import torch
from torch import nn

LIBRARY = "asteroid_filterbanks"
DIST = "asteroid-filterbanks==0.4.0"

_BATCH = (2, 3, 4)
_SAMPLES = (800, 1000, 1200)


def _wav(shape, channels=None, grad=False):
    size = (_BATCH[shape], _SAMPLES[shape]) if channels is None else (_BATCH[shape], channels, _SAMPLES[shape])
    return torch.randn(*size, requires_grad=grad)


class _Spectrogram(nn.Module):
    """Encoder(filterbank) then the magnitude of the complex representation."""

    def __init__(self, fb):
        super().__init__()
        from asteroid_filterbanks import Encoder

        self.enc = Encoder(fb)

    def forward(self, wav):
        from asteroid_filterbanks import transforms

        return transforms.mag(self.enc(wav))


class _RoundTrip(nn.Module):
    def __init__(self, enc, dec):
        super().__init__()
        self.enc, self.dec = enc, dec

    def forward(self, wav):
        return self.dec(self.enc(wav))


class _MaskSeparator(nn.Module):
    """Two-source TasNet-style separation: free encoder, a conv mask net, decoder."""

    def __init__(self, n_src=2, n_filters=32):
        super().__init__()
        from asteroid_filterbanks import make_enc_dec

        self.enc, self.dec = make_enc_dec("free", n_filters=n_filters, kernel_size=16, stride=8)
        self.n_src = n_src
        self.masker = nn.Sequential(nn.Conv1d(n_filters, 64, 1), nn.ReLU(), nn.Conv1d(64, n_src * n_filters, 1))

    def forward(self, wav, sources):
        from asteroid_filterbanks import transforms

        tf = self.enc(wav)                                           # (B, F, T)
        masks = torch.sigmoid(self.masker(tf)).view(tf.shape[0], self.n_src, tf.shape[1], -1)
        est = self.dec(transforms.apply_real_mask(tf.unsqueeze(1), masks))
        est = torch.nn.functional.pad(est, (0, sources.shape[-1] - est.shape[-1]))
        return ((est - sources) ** 2).mean()


class _ComplexMask(nn.Module):
    """Speech enhancement with a complex ratio mask on an STFT filterbank (pinv decoder)."""

    def __init__(self, n_filters=64):
        super().__init__()
        from asteroid_filterbanks import make_enc_dec

        self.enc, self.dec = make_enc_dec("stft", n_filters=n_filters, kernel_size=64, stride=16,
                                          who_is_pinv="dec")
        self.net = nn.Conv1d(n_filters + 2, n_filters + 2, 3, padding=1)

    def forward(self, noisy, clean):
        from asteroid_filterbanks import transforms

        tf = self.enc(noisy)
        est = self.dec(transforms.apply_complex_mask(tf, self.net(tf)))
        est = torch.nn.functional.pad(est, (0, clean.shape[-1] - est.shape[-1]))
        return (est - clean).abs().mean()


class _PCENFrontEnd(nn.Module):
    """STFT magnitude -> trainable PCEN -> a small keyword classifier."""

    def __init__(self):
        super().__init__()
        from asteroid_filterbanks import STFTFB, Encoder
        from asteroid_filterbanks.pcen import PCEN

        self.enc = Encoder(STFTFB(n_filters=64, kernel_size=64, stride=32))
        self.pcen = PCEN(n_channels=1, trainable=True)
        self.head = nn.Sequential(nn.Conv1d(33, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool1d(1),
                                  nn.Flatten(), nn.Linear(16, 5))

    def forward(self, wav):
        from asteroid_filterbanks import transforms

        return self.head(self.pcen(transforms.mag(self.enc(wav))))


def stft_mag(shape=0):
    from asteroid_filterbanks import STFTFB

    return _Spectrogram(STFTFB(n_filters=64, kernel_size=64, stride=32)).eval(), (_wav(shape, channels=2),), {}


def param_sinc_train(shape=0):
    from asteroid_filterbanks import ParamSincFB

    return _Spectrogram(ParamSincFB(n_filters=32, kernel_size=33, stride=16)).train(), (_wav(shape),), {}


def analytic_free_roundtrip(shape=0):
    from asteroid_filterbanks import make_enc_dec

    enc, dec = make_enc_dec("analytic_free", n_filters=32, kernel_size=16, stride=8)
    return _RoundTrip(enc, dec).train(), (_wav(shape),), {}


def stft_pinv_roundtrip(shape=0):
    from asteroid_filterbanks import make_enc_dec

    enc, dec = make_enc_dec("stft", n_filters=64, kernel_size=64, stride=16, who_is_pinv="dec")
    return _RoundTrip(enc, dec).eval(), (_wav(shape),), {}


def torch_stft_roundtrip(shape=0):
    from asteroid_filterbanks import Decoder, Encoder, TorchSTFTFB

    fb = TorchSTFTFB(n_filters=64, kernel_size=64, stride=16)
    return _RoundTrip(Encoder(fb), Decoder(fb)).eval(), (_wav(shape),), {}


def pcen_front_end_train(shape=0):
    return _PCENFrontEnd().train(), (_wav(shape, channels=1),), {}


def griffin_lim_fn(shape=0):
    """griffin_lim(mag, stft_enc, istft_dec=...): phase recovery from an STFT magnitude."""
    from asteroid_filterbanks import Decoder, Encoder, STFTFB, griffin_lim, transforms

    fb = STFTFB(n_filters=64, kernel_size=64, stride=16)
    enc, dec = Encoder(fb), Decoder(fb)
    mag = transforms.mag(enc(_wav(shape)))

    def recover(mag_spec, angles):
        return griffin_lim(mag_spec, enc, angles=angles, istft_dec=dec, n_iter=4)

    return recover, (mag, torch.rand_like(mag) * 6.28), {}


def mask_separator_train(shape=0):
    wav = _wav(shape, channels=1)
    return _MaskSeparator().train(), (wav, torch.randn(_BATCH[shape], 2, _SAMPLES[shape])), {}


def complex_mask_train(shape=0):
    return _ComplexMask().train(), (_wav(shape, channels=1), _wav(shape, channels=1)), {}


MODELS = {
    "asteroid_fb_stft_mag": ("eval", stft_mag),
    "asteroid_fb_param_sinc_train": ("train", param_sinc_train),
    "asteroid_fb_analytic_free_roundtrip": ("train", analytic_free_roundtrip),
    "asteroid_fb_stft_pinv_roundtrip": ("eval", stft_pinv_roundtrip),
    "asteroid_fb_torch_stft_roundtrip": ("eval", torch_stft_roundtrip),
    "asteroid_fb_pcen_front_end_train": ("train", pcen_front_end_train),
    "asteroid_fb_griffin_lim": ("eval", griffin_lim_fn),
    "asteroid_fb_mask_separator_train": ("train", mask_separator_train),
    "asteroid_fb_complex_mask_train": ("train", complex_mask_train),
}
