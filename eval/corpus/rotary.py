"""rotary-embedding-torch: rotary positional embeddings as its README uses them, inside the
user's attention layers: `rotate_queries_or_keys` on heads-split queries and keys before the
dot product (also causal), `rotate_queries_with_cached_keys` for a key/value-cache decoding step, axial frequencies (`get_axial_freqs` + `apply_rotary_emb`)
for video tokens, `interpolate_factor`, learned frequencies, partial rotation (rotary dim below
the head dim) and the reference (non-Triton) `flash_attn_with_rotary`.  Batch 2 -> 3 -> 4,
sequence 8 -> 12 -> 16, 2 heads of 16 features.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

LIBRARY = "rotary_embedding_torch"
DIST = "rotary-embedding-torch==0.9.1"

_BATCH = (2, 3, 4)
_SEQ = (8, 12, 16)
_DIM = 32
_HEADS = 2
_HEAD_DIM = _DIM // _HEADS
_VOCAB = 64


def _x(shape, grad=False):
    return torch.randn(_BATCH[shape], _SEQ[shape], _DIM, requires_grad=grad)


class _Attention(nn.Module):
    """Multi-head self-attention whose queries and keys are rotated (the README's recipe)."""

    def __init__(self, rotary_dim=_HEAD_DIM, causal=False, **rotary_kwargs):
        super().__init__()
        from rotary_embedding_torch import RotaryEmbedding

        self.qkv = nn.Linear(_DIM, 3 * _DIM, bias=False)
        self.out = nn.Linear(_DIM, _DIM)
        self.rotary = RotaryEmbedding(dim=rotary_dim, **rotary_kwargs)
        self.causal = causal

    def heads(self, t):
        b, n, _ = t.shape
        return t.view(b, n, _HEADS, _HEAD_DIM).transpose(1, 2)

    def rotate(self, q, k):
        return self.rotary.rotate_queries_or_keys(q), self.rotary.rotate_queries_or_keys(k)

    def forward(self, x):
        q, k, v = map(self.heads, self.qkv(x).chunk(3, dim=-1))
        q, k = self.rotate(q, k)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        return self.out(o.transpose(1, 2).reshape(x.shape))


class _Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(_DIM), nn.LayerNorm(_DIM)
        self.attn = _Attention(causal=True)
        self.ff = nn.Sequential(nn.Linear(_DIM, 4 * _DIM), nn.GELU(), nn.Linear(4 * _DIM, _DIM))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.ff(self.norm2(x))


class _RotaryLM(nn.Module):
    """A two-layer causal LM with rotary attention; forward returns the next-token loss."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(_VOCAB, _DIM)
        self.blocks = nn.ModuleList([_Block() for _ in range(2)])
        self.norm = nn.LayerNorm(_DIM)
        self.head = nn.Linear(_DIM, _VOCAB)

    def forward(self, ids):
        x = self.embed(ids)
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.norm(x))
        return F.cross_entropy(logits[:, :-1].reshape(-1, _VOCAB), ids[:, 1:].reshape(-1))


class _CachedDecode(nn.Module):
    """One decoding step: a single new query against keys with the cache concatenated."""

    def __init__(self):
        super().__init__()
        from rotary_embedding_torch import RotaryEmbedding

        self.rotary = RotaryEmbedding(dim=_HEAD_DIM)

    def forward(self, q, k, v):
        q, k = self.rotary.rotate_queries_with_cached_keys(q, k)
        return F.scaled_dot_product_attention(q, k, v)


class _AxialVideo(nn.Module):
    """Video tokens (frames, height, width): axial pixel frequencies rotated into q and k."""

    def __init__(self):
        super().__init__()
        from rotary_embedding_torch import RotaryEmbedding

        self.pos_emb = RotaryEmbedding(dim=4, freqs_for="pixel", max_freq=64)
        self.to_qk = nn.Linear(12, 24, bias=False)

    def forward(self, x):
        from rotary_embedding_torch import apply_rotary_emb

        q, k = self.to_qk(x).chunk(2, dim=-1)
        freqs = self.pos_emb.get_axial_freqs(*x.shape[1:4])
        q, k = apply_rotary_emb(freqs, q), apply_rotary_emb(freqs, k)
        b = x.shape[0]
        q, k = q.reshape(b, -1, 12), k.reshape(b, -1, 12)
        return torch.softmax(q @ k.transpose(-1, -2) / 12 ** 0.5, dim=-1)


class _FlashReference(nn.Module):
    """flash_attn_with_rotary with its PyTorch fallback (no Triton on CPU), two CLS tokens
    left unrotated through rotary_pos_emb_indices."""

    def __init__(self):
        super().__init__()
        from rotary_embedding_torch import RotaryEmbedding

        self.rotary = RotaryEmbedding(dim=_HEAD_DIM)

    def forward(self, q, k, v):
        from rotary_embedding_torch.flash_attn_with_rotary import flash_attn_with_rotary

        n = q.shape[-2] - 2
        freqs = self.rotary(torch.arange(n))
        return flash_attn_with_rotary(q, k, v, rotary_pos_emb=freqs,
                                      rotary_pos_emb_indices=torch.arange(n) + 2, is_causal=True)


def attention_train(shape=0):
    return _Attention().train(), (_x(shape, grad=True),), {}


def attention_eval(shape=0):
    return _Attention().eval(), (_x(shape),), {}


def interpolated(shape=0):
    return _Attention(interpolate_factor=2.0).eval(), (_x(shape),), {}


def learned_freq_train(shape=0):
    return _Attention(learned_freq=True).train(), (_x(shape, grad=True),), {}


def partial_rotary(shape=0):
    """rotary dim 8 of a 16-feature head: the rest passes through."""
    return _Attention(rotary_dim=8).train(), (_x(shape, grad=True),), {}


def lm_train(shape=0):
    return _RotaryLM().train(), (torch.randint(0, _VOCAB, (_BATCH[shape], _SEQ[shape])),), {}


def cached_decode(shape=0):
    b, n = _BATCH[shape], _SEQ[shape]
    q = torch.randn(b, _HEADS, 1, _HEAD_DIM)
    k, v = torch.randn(b, _HEADS, n, _HEAD_DIM), torch.randn(b, _HEADS, n, _HEAD_DIM)
    return _CachedDecode().eval(), (q, k, v), {}


def axial_video(shape=0):
    b, s = _BATCH[shape], (4, 6, 8)[shape]
    return _AxialVideo().eval(), (torch.randn(b, 2, s, s, 12),), {}


def flash_reference(shape=0):
    b, n = _BATCH[shape], _SEQ[shape] + 2
    q, k, v = (torch.randn(b, _HEADS, n, _HEAD_DIM) for _ in range(3))
    return _FlashReference().eval(), (q, k, v), {}


MODELS = {
    "rotary_attention_train": ("train", attention_train),
    "rotary_attention_eval": ("eval", attention_eval),
    "rotary_interpolated": ("eval", interpolated),
    "rotary_learned_freq_train": ("train", learned_freq_train),
    "rotary_partial_rotary": ("train", partial_rotary),
    "rotary_lm_train": ("train", lm_train),
    "rotary_cached_decode": ("eval", cached_decode),
    "rotary_axial_video": ("eval", axial_video),
    "rotary_flash_reference": ("eval", flash_reference),
}
