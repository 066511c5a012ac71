"""pytorch-crf (`torchcrf`): a linear-chain CRF, used as its README shows (`crf(emissions,
tags, mask=mask)` is the log-likelihood, `crf.decode(emissions, mask=mask)` the Viterbi
paths; bool masks of right-padded sequences) and inside the usual BiLSTM-CRF / conv-CRF
taggers whose training forward returns the negative log-likelihood.  Batch 2 -> 3 -> 4,
sequence length 6 -> 9 -> 12, 5 tags.
"""

from __future__ import annotations

import torch
from torch import nn

LIBRARY = "torchcrf"
DIST = "pytorch-crf==0.7.2"

_BATCH = (2, 3, 4)
_SEQ = (6, 9, 12)
_TAGS = 5
_VOCAB = 50


def _emissions(shape, batch_first=True, grad=False):
    b, t = _BATCH[shape], _SEQ[shape]
    size = (b, t, _TAGS) if batch_first else (t, b, _TAGS)
    return torch.randn(*size, requires_grad=grad)


def _tags(shape, batch_first=True):
    b, t = _BATCH[shape], _SEQ[shape]
    return torch.randint(0, _TAGS, (b, t) if batch_first else (t, b))


def _mask(shape):
    """Right-padded sequences: row i keeps its first t - i positions (the first row is full)."""
    b, t = _BATCH[shape], _SEQ[shape]
    lengths = torch.tensor([t - i for i in range(b)])
    return torch.arange(t)[None, :] < lengths[:, None]


class _BiLSTMCRF(nn.Module):
    """Embedding -> BiLSTM -> linear emissions -> CRF; forward returns the NLL (train) or the
    decoded tag sequences (eval)."""

    def __init__(self, hidden=16):
        super().__init__()
        from torchcrf import CRF

        self.embed = nn.Embedding(_VOCAB, 16, padding_idx=0)
        self.lstm = nn.LSTM(16, hidden, batch_first=True, bidirectional=True)
        self.proj = nn.Linear(2 * hidden, _TAGS)
        self.crf = CRF(_TAGS, batch_first=True)

    def emissions(self, ids):
        return self.proj(self.lstm(self.embed(ids))[0])

    def forward(self, ids, tags, mask):
        return -self.crf(self.emissions(ids), tags, mask=mask, reduction="mean")


class _BiLSTMCRFDecode(_BiLSTMCRF):
    def forward(self, ids, mask):
        return self.crf.decode(self.emissions(ids), mask=mask)


class _ConvCRF(nn.Module):
    """A convolutional tagger over features with a token-mean CRF loss."""

    def __init__(self, features=8):
        super().__init__()
        from torchcrf import CRF

        self.conv = nn.Conv1d(features, 16, 3, padding=1)
        self.proj = nn.Linear(16, _TAGS)
        self.crf = CRF(_TAGS, batch_first=True)

    def forward(self, x, tags, mask):
        h = torch.relu(self.conv(x.transpose(1, 2))).transpose(1, 2)
        return -self.crf(self.proj(h), tags, mask=mask, reduction="token_mean")


def _ids(shape):
    return torch.randint(1, _VOCAB, (_BATCH[shape], _SEQ[shape]))


def crf_llh_masked(shape=0):
    from torchcrf import CRF

    crf = CRF(_TAGS, batch_first=True).train()
    return crf, (_emissions(shape, grad=True), _tags(shape)), {"mask": _mask(shape), "reduction": "mean"}


def crf_llh_seq_first(shape=0):
    """The default layout (seq_len, batch, tags), a (seq_len, batch) mask, no reduction."""
    from torchcrf import CRF

    crf = CRF(_TAGS).train()
    args = (_emissions(shape, batch_first=False, grad=True), _tags(shape, batch_first=False))
    return crf, args, {"mask": _mask(shape).t().contiguous(), "reduction": "none"}


def crf_decode_masked(shape=0):
    from torchcrf import CRF

    crf = CRF(_TAGS, batch_first=True).eval()
    return crf.decode, (_emissions(shape),), {"mask": _mask(shape)}


def bilstm_crf_train(shape=0):
    return _BiLSTMCRF().train(), (_ids(shape), _tags(shape), _mask(shape)), {}


def bilstm_crf_decode(shape=0):
    return _BiLSTMCRFDecode().eval(), (_ids(shape), _mask(shape)), {}


def conv_crf_train(shape=0):
    b, t = _BATCH[shape], _SEQ[shape]
    return _ConvCRF().train(), (torch.randn(b, t, 8), _tags(shape), _mask(shape)), {}


MODELS = {
    "torchcrf_llh_masked": ("train", crf_llh_masked),
    "torchcrf_llh_seq_first": ("train", crf_llh_seq_first),
    "torchcrf_decode_masked": ("eval", crf_decode_masked),
    "torchcrf_bilstm_crf_train": ("train", bilstm_crf_train),
    "torchcrf_bilstm_crf_decode": ("eval", bilstm_crf_decode),
    "torchcrf_conv_crf_train": ("train", conv_crf_train),
}
