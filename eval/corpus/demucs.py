"""demucs: music source separation: the waveform Demucs (v2/v3), Hybrid Demucs (HDemucs, v3,
with and without Wiener filtering) and Hybrid Transformer Demucs (HTDemucs, v4) forwards on short
stereo clips, `apply_model` (random shifts, overlapping split) as `demucs.separate` calls it, the
training solver's augmentation chain and its training-step loss.

All models are built from their constructors with random weights and tiny sizes (a few hidden
channels, a 64- or 256-point STFT, a 4096 Hz "sample rate" so that a segment is 1 s = 4096 samples):
the pretrained checkpoints (`demucs.pretrained.get_model`) are downloads and are left out.
Shapes: batch 2 -> 3 -> 4 stereo clips of 1024 -> 2048 -> 3072 samples (the augmentation chain:
4 -> 8 -> 12 tracks of 4 sources, as Remix groups the batch by 4).
"""

from __future__ import annotations

import torch

LIBRARY = "demucs"
DIST = "demucs==4.1.0"

SOURCES = ["drums", "bass", "other", "vocals"]
SR = 4096
B = (2, 3, 4)
T = (1024, 2048, 3072)


def _mix(shape):
    return torch.randn(B[shape], 2, T[shape])


def _demucs(**kw):
    from demucs.demucs import Demucs

    return Demucs(SOURCES, audio_channels=2, channels=8, depth=2, dconv_depth=1, samplerate=SR, segment=1, **kw)


def _small_demucs():
    """A one-layer waveform Demucs without resampling: the cheapest model `apply_model` takes."""
    from demucs.demucs import Demucs

    return Demucs(SOURCES, audio_channels=2, channels=8, depth=1, dconv_depth=1, resample=False,
                  samplerate=SR, segment=1)


def _hdemucs(**kw):
    from demucs.hdemucs import HDemucs

    # nfft 64 (hop 16 = 4 ** 2): after 2 layers of stride 4 the frequency branch is down to one
    # bin and the time branch to one step per frame, where the two branches merge.
    args = dict(channels=8, nfft=64, depth=2, dconv_depth=1, samplerate=SR, segment=1)
    args.update(kw)
    return HDemucs(SOURCES, audio_channels=2, **args)


def _htdemucs(**kw):
    from demucs.htdemucs import HTDemucs

    args = dict(channels=8, nfft=256, depth=2, dconv_depth=1, t_layers=1, t_heads=2, samplerate=SR, segment=1)
    args.update(kw)
    return HTDemucs(SOURCES, audio_channels=2, **args)


def demucs_v3_forward(shape=0):
    """The waveform Demucs with a BiLSTM bottleneck (resampling x2 with julius)."""
    model = _demucs(lstm_layers=1).eval()
    return model, (_mix(shape),), {}


def hdemucs_forward(shape=0):
    """Hybrid Demucs: spectrogram (complex-as-channels) and waveform branches merged."""
    model = _hdemucs().eval()
    return model, (_mix(shape),), {}


def hdemucs_wiener_forward(shape=0):
    """Hybrid Demucs on magnitudes, its masks refined by one multichannel Wiener iteration."""
    model = _hdemucs(cac=False, wiener_iters=1, end_iters=1).eval()
    return model, (_mix(shape),), {}


def htdemucs_forward(shape=0):
    """Hybrid Transformer Demucs (v4): cross-domain transformer between the two branches; in
    eval mode the clip is padded to the training segment."""
    model = _htdemucs().eval()
    return model, (_mix(shape),), {}


def htdemucs_train_loss(shape=0):
    """The solver's training step: augment the sources, mix them, separate, L1 loss."""
    from demucs import augment

    model = _htdemucs(t_dropout=0.1).train()
    augmentation = torch.nn.Sequential(augment.Shift(shift=256, same=False), augment.FlipSign(),
                                       augment.FlipChannels(), augment.Scale(proba=1, min=0.25, max=1.25)).train()

    def loss_step(sources):
        sources = augmentation(sources)
        mix = sources.sum(dim=1)
        estimate = model(mix)
        return torch.nn.functional.l1_loss(estimate, sources)

    sources = torch.randn(B[shape], len(SOURCES), 2, T[shape] + 256)
    return loss_step, (sources,), {}


def augment_chain(shape=0):
    """The solver's augmentation chain over a batch of (tracks, sources, channels, time)."""
    from demucs import augment

    chain = torch.nn.Sequential(augment.Shift(shift=256, same=False), augment.FlipSign(), augment.FlipChannels(),
                                augment.Scale(proba=1, min=0.25, max=1.25),
                                augment.Remix(proba=1, group_size=4)).train()
    n = (4, 8, 12)[shape]
    return chain, (torch.randn(n, len(SOURCES), 2, T[shape]),), {}


def apply_model_shifts(shape=0):
    """`apply_model` with the random time shift `demucs.separate --shifts` averages over (one
    shift, no split) over a one-layer waveform Demucs, in eval mode under no_grad."""
    from demucs.apply import apply_model

    model = _small_demucs().eval()

    def separate(mix):
        return apply_model(model, mix, shifts=1, split=False, progress=False)

    return separate, (_mix(shape),), {}


def apply_model_split_bag(shape=0):
    """`apply_model` on a BagOfModels (two one-layer Demucs, per-source weights) splitting the clip into
    overlapping 0.25 s chunks weighted by a triangle window, as `demucs.separate` runs it."""
    from demucs.apply import BagOfModels, apply_model

    bag = BagOfModels([_small_demucs(), _small_demucs()], weights=[[1.0, 1.0, 0.5, 1.0], [0.5, 1.0, 1.0, 1.0]],
                      segment=0.25)

    def separate(mix):
        return apply_model(bag, mix, shifts=0, split=True, overlap=0.25, progress=False)

    return separate, (_mix(shape),), {}


MODELS = {
    "demucs_v3_forward": ("eval", demucs_v3_forward),
    "demucs_hdemucs_forward": ("eval", hdemucs_forward),
    "demucs_hdemucs_wiener_forward": ("eval", hdemucs_wiener_forward),
    "demucs_htdemucs_forward": ("eval", htdemucs_forward),
    "demucs_htdemucs_train_loss": ("train", htdemucs_train_loss),
    "demucs_augment_chain": ("train", augment_chain),
    "demucs_apply_model_shifts": ("eval", apply_model_shifts),
    "demucs_apply_model_split_bag": ("eval", apply_model_split_bag),
}
