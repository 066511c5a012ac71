"""reformer-pytorch: the Reformer (LSH attention, reversible residual layers, chunked
feed-forwards) as its README uses it: ReformerLM forwards and language-model training losses
through TrainingWrapper (which pads with Autopadder), axial position embeddings with
local-attention heads, Reformer on embeddings, the ReformerEncDec
encoder-decoder's training loss, sampling with `generate`, LSHSelfAttention over a context,
the full-attention threshold and the attention Recorder.

All models are built from their constructors with random weights, dim 32, 2 heads, bucket size 4
and 2 hashes. Shapes: batch 2 -> 3 -> 4 of 16 -> 24 -> 40 tokens (a multiple of twice the
bucket size; the TrainingWrapper losses take one token more and pad); `generate` continues 4 -> 6
-> 8 start tokens of a batch of 2 -> 3 -> 4 by 4 tokens.
"""

from __future__ import annotations

import torch

LIBRARY = "reformer_pytorch"
DIST = "reformer-pytorch==1.4.4"

V = 64
DIM = 32
B = (2, 3, 4)
L = (16, 24, 40)
SMALL = dict(dim=DIM, heads=2, bucket_size=4, n_hashes=2)
# The inference models set the README's `reverse_thres` above their sequence lengths: plain
# residual layers instead of the reversible ones, whose autograd.Function stops Dynamo in eval mode
# (InternalTorchDynamoError on `ctx.y = x.detach()`); the training losses keep reversible layers.
INFER = 64


def _tokens(shape, extra=0, batch=None, length=None):
    gen = torch.Generator().manual_seed(10 + shape)
    return torch.randint(1, V, (B[shape] if batch is None else batch, (L[shape] if length is None else length) + extra),
                         generator=gen)


def _lm(**kw):
    from reformer_pytorch import ReformerLM

    args = dict(num_tokens=V, depth=2, max_seq_len=64, dim_head=16, **SMALL)
    args.update(kw)
    return ReformerLM(**args)


def lm_forward(shape=0):
    """The README's causal ReformerLM (LSH attention) for inference: logits, eval mode."""
    torch.manual_seed(0)
    model = _lm(causal=True, reverse_thres=INFER).eval()
    return model, (_tokens(shape),), {}


def lm_train_loss(shape=0):
    """TrainingWrapper's next-token loss (`return_loss=True`) over a causal ReformerLM with LSH /
    feed-forward dropout and chunked attention / feed-forwards, in training mode."""
    from reformer_pytorch.generative_tools import TrainingWrapper

    torch.manual_seed(0)
    model = TrainingWrapper(_lm(causal=True, lsh_dropout=0.1, ff_dropout=0.1, post_attn_dropout=0.1,
                                ff_chunks=2, attn_chunks=2)).train()

    def loss_step(x):
        return model(x, return_loss=True)

    return loss_step, (_tokens(shape, extra=1),), {}


def lm_axial_local(shape=0):
    """ReformerLM with axial position embeddings, a local-attention head, ScaleNorm, GLU
    feed-forwards and tied embeddings, under an input mask (eval mode)."""
    torch.manual_seed(0)
    model = _lm(axial_position_emb=True, axial_position_shape=(8, 8), n_local_attn_heads=1, use_scale_norm=True,
                ff_glu=True, weight_tie_embedding=True, reverse_thres=INFER).eval()
    x = _tokens(shape)
    mask = torch.ones_like(x, dtype=torch.bool)
    mask[:, -3:] = False
    return model, (x,), {"input_mask": mask}


def reformer_embeddings_train_loss(shape=0):
    """Reformer on embeddings (no token embedding), ReZero residuals, one shared value head and
    per-head random rotations, with layer dropout: a regression loss in training mode."""
    from reformer_pytorch import Reformer

    torch.manual_seed(0)
    model = Reformer(depth=2, use_rezero=True, one_value_head=True, random_rotations_per_head=True,
                     layer_dropout=0.1, **SMALL).train()

    def loss_step(x):
        return model(x).pow(2).mean()

    gen = torch.Generator().manual_seed(20 + shape)
    return loss_step, (torch.randn(B[shape], L[shape], DIM, generator=gen),), {}


def encdec_train_loss(shape=0):
    """The README's ReformerEncDec: encoder keys fed to a causal decoder, the decoder's loss
    under an encoder input mask (training mode)."""
    from reformer_pytorch import ReformerEncDec

    torch.manual_seed(0)
    model = ReformerEncDec(dim=DIM, enc_num_tokens=V, enc_depth=1, enc_max_seq_len=64, enc_heads=2,
                           enc_bucket_size=4, enc_n_hashes=2, dec_num_tokens=V, dec_depth=1, dec_max_seq_len=64,
                           dec_heads=2, dec_n_hashes=2).train()

    def loss_step(seq_in, seq_out, mask):
        return model(seq_in, seq_out, return_loss=True, enc_input_mask=mask)

    seq_in = _tokens(shape)
    seq_out = _tokens(shape, extra=1)
    mask = torch.ones_like(seq_in, dtype=torch.bool)
    return loss_step, (seq_in, seq_out, mask), {}


def lm_generate(shape=0):
    """`TrainingWrapper.generate`: top-k sampling of 4 tokens after a prompt (eval, no_grad)."""
    from reformer_pytorch.generative_tools import TrainingWrapper

    torch.manual_seed(0)
    model = TrainingWrapper(_lm(causal=True, max_seq_len=32, reverse_thres=INFER)).eval()

    def generate(prompt):
        return model.generate(prompt, 4, temperature=1.0)

    return generate, (_tokens(shape, length=(4, 6, 8)[shape]),), {}


def lsh_self_attention_context(shape=0):
    """LSHSelfAttention attending over the sequence and an extra context (`keys`), with memory
    key / values, padded to the bucket size by Autopadder (eval mode)."""
    from reformer_pytorch import Autopadder, LSHSelfAttention

    torch.manual_seed(0)
    attn = Autopadder(LSHSelfAttention(dim=DIM, heads=2, bucket_size=4, n_hashes=2, causal=False,
                                       num_mem_kv=2)).eval()
    gen = torch.Generator().manual_seed(30 + shape)
    x = torch.randn(B[shape], L[shape] - 3, DIM, generator=gen)
    keys = torch.randn(B[shape], 5, DIM, generator=gen)
    return attn, (x,), {"keys": keys}


def lm_full_attn_threshold(shape=0):
    """ReformerLM with `full_attn_thres=24`: full attention up to 24 tokens, LSH above; memory
    key / values and absolute position embeddings (eval mode)."""
    from reformer_pytorch import Autopadder

    torch.manual_seed(0)
    model = Autopadder(_lm(full_attn_thres=24, num_mem_kv=2, absolute_position_emb=True, reverse_thres=INFER)).eval()
    return model, (_tokens(shape),), {}


def recorder_attention(shape=0):
    """The README's Recorder: a ReformerLM whose LSH attention weights and buckets are recorded
    on every call (eval mode)."""
    from reformer_pytorch import Recorder

    torch.manual_seed(0)
    model = Recorder(_lm(depth=1, reverse_thres=INFER)).eval()
    return model, (_tokens(shape),), {}


MODELS = {
    "reformer_lm_forward": ("eval", lm_forward),
    "reformer_lm_train_loss": ("train", lm_train_loss),
    "reformer_lm_axial_local": ("eval", lm_axial_local),
    "reformer_embeddings_train_loss": ("train", reformer_embeddings_train_loss),
    "reformer_encdec_train_loss": ("train", encdec_train_loss),
    "reformer_lm_generate": ("eval", lm_generate),
    "reformer_lsh_self_attention_context": ("eval", lsh_self_attention_context),
    "reformer_lm_full_attn_threshold": ("eval", lm_full_attn_threshold),
    "reformer_recorder_attention": ("eval", recorder_attention),
}
