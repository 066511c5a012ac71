"""performer-pytorch: FAVOR+ linear attention, as its README uses it: `PerformerLM` (bidirectional
and causal, with local-attention heads, reversible layers), `Performer`
on embeddings, `SelfAttention`, `FastAttention`, the `AutoregressiveWrapper` loss and sampling,
and `PerformerEncDec`.  Batch 2 -> 3 -> 4, sequence 16 -> 24 -> 32 tokens.
"""

from __future__ import annotations

import torch

LIBRARY = "performer_pytorch"
DIST = "performer-pytorch==1.1.4"

_BATCH = (2, 3, 4)
_SEQ = (16, 24, 32)
_VOCAB = 64
_DIM = 32


def _ids(shape, extra=0):
    return torch.randint(1, _VOCAB, (_BATCH[shape], _SEQ[shape] + extra))


def _mask(shape):
    b, n = _BATCH[shape], _SEQ[shape]
    mask = torch.ones(b, n, dtype=torch.bool)
    mask[1:, -2:] = False  # the later rows right-padded
    return mask


def _lm(**extra):
    from performer_pytorch import PerformerLM

    cfg = dict(num_tokens=_VOCAB, max_seq_len=64, dim=_DIM, depth=2, heads=2, dim_head=16, nb_features=16)
    cfg.update(extra)
    return PerformerLM(**cfg)


def lm_eval(shape=0):
    return _lm().eval(), (_ids(shape),), {"mask": _mask(shape)}


def lm_causal_train(shape=0):
    from performer_pytorch import AutoregressiveWrapper

    # the wrapper's loss predicts token i+1 from tokens <= i (one more input token)
    return AutoregressiveWrapper(_lm(causal=True)).train(), (_ids(shape, extra=1),), {}


def lm_local_heads(shape=0):
    """Half of the heads local (windowed) attention, as the README's `local_attn_heads`."""
    return _lm(heads=4, local_attn_heads=2, local_window_size=8).eval(), (_ids(shape),), {}


def lm_reversible_train(shape=0):
    from performer_pytorch import AutoregressiveWrapper

    net = _lm(causal=True, reversible=True, ff_chunks=2, use_scalenorm=True)
    return AutoregressiveWrapper(net).train(), (_ids(shape, extra=1),), {}


def encoder(shape=0):
    from performer_pytorch import Performer

    model = Performer(dim=_DIM, depth=1, heads=2, dim_head=16, causal=False, nb_features=16)
    return model.eval(), (torch.randn(_BATCH[shape], _SEQ[shape], _DIM),), {}


def self_attention_train(shape=0):
    from performer_pytorch import SelfAttention

    attn = SelfAttention(dim=_DIM, heads=2, dim_head=16, causal=False, nb_features=16)
    return attn.train(), (torch.randn(_BATCH[shape], _SEQ[shape], _DIM, requires_grad=True),), {}


def fast_attention(shape=0):
    from performer_pytorch import FastAttention

    attn = FastAttention(dim_heads=16, nb_features=32, causal=False)
    b, n = _BATCH[shape], _SEQ[shape]
    q, k, v = (torch.randn(b, 2, n, 16) for _ in range(3))
    return attn.eval(), (q, k, v), {}


def enc_dec_train(shape=0):
    from performer_pytorch import PerformerEncDec

    model = PerformerEncDec(dim=_DIM, enc_num_tokens=_VOCAB, enc_depth=1, enc_heads=2, enc_dim_head=16,
                            enc_max_seq_len=64, enc_nb_features=16, dec_num_tokens=_VOCAB, dec_depth=1,
                            dec_heads=2, dec_dim_head=16, dec_max_seq_len=64, dec_nb_features=16)
    src = _ids(shape)
    tgt = torch.randint(1, _VOCAB, (_BATCH[shape], _SEQ[shape] // 2 + 1))
    return model.train(), (src, tgt), {"enc_mask": _mask(shape)}


def generate(shape=0):
    """AutoregressiveWrapper.generate: 4 sampled tokens after a prompt of 4 -> 6 -> 8 tokens."""
    from performer_pytorch import AutoregressiveWrapper

    wrapper = AutoregressiveWrapper(_lm(causal=True)).eval()
    prompt = torch.randint(1, _VOCAB, (_BATCH[shape], 4 + 2 * shape))
    return wrapper.generate, (prompt, 4), {}


MODELS = {
    "performer_lm_eval": ("eval", lm_eval),
    "performer_lm_causal_train": ("train", lm_causal_train),
    "performer_lm_local_heads": ("eval", lm_local_heads),
    "performer_lm_reversible_train": ("train", lm_reversible_train),
    "performer_encoder": ("eval", encoder),
    "performer_self_attention_train": ("train", self_attention_train),
    "performer_fast_attention": ("eval", fast_attention),
    "performer_enc_dec_train": ("train", enc_dec_train),
    "performer_generate": ("eval", generate),
}
