"""mambapy: Mamba in pure PyTorch (parallel-scan and sequential selective scans), a Mamba
language model as `mambapy.lm.LM` builds it (training loss, one-token `step` decoding with the
README's caches; written out, as mambapy.lm imports the CUDA-only mamba_ssm), Jamba (Mamba +
attention + mixture-of-experts, with the load-balancing loss) and Vision Mamba's bidirectional
`VMamba`, as mambapy's README builds them.  Batch 2 -> 3 -> 4, sequence 8 -> 12 -> 16 (not
powers of two after the first: pscan pads those).
"""

from __future__ import annotations

import torch
from torch import nn

LIBRARY = "mambapy"
DIST = "mambapy==1.2.0"

_BATCH = (2, 3, 4)
_SEQ = (8, 12, 16)
_DIM = 16
_VOCAB = 64


def _x(shape, grad=False):
    return torch.randn(_BATCH[shape], _SEQ[shape], _DIM, requires_grad=grad)


def _ids(shape, extra=0):
    return torch.randint(0, _VOCAB, (_BATCH[shape], _SEQ[shape] + extra))


def _config(**extra):
    from mambapy.mamba import MambaConfig

    return MambaConfig(d_model=_DIM, n_layers=2, d_state=8, **extra)


class _SequenceRegressor(nn.Module):
    """Mamba as a sequence encoder under a linear head, trained with MSE."""

    def __init__(self, **extra):
        super().__init__()
        from mambapy.mamba import Mamba

        self.mamba = Mamba(_config(**extra))
        self.head = nn.Linear(_DIM, 1)

    def forward(self, x, y):
        return nn.functional.mse_loss(self.head(self.mamba(x)).squeeze(-1), y)


class _LM(nn.Module):
    """A Mamba language model as mambapy.lm.LM builds one (embedding, Mamba, RMSNorm, tied
    head), written out: mambapy.lm itself imports mamba2, which needs the CUDA-only mamba_ssm."""

    def __init__(self):
        super().__init__()
        from mambapy.mamba import Mamba, RMSNorm

        self.config = _config()
        self.embedding = nn.Embedding(_VOCAB, _DIM)
        self.mamba = Mamba(self.config)
        self.norm_f = RMSNorm(_DIM)
        self.lm_head = nn.Linear(_DIM, _VOCAB, bias=False)
        self.lm_head.weight = self.embedding.weight

    def forward(self, tokens):
        return self.lm_head(self.norm_f(self.mamba(self.embedding(tokens))))

    def step(self, token, caches):
        x, caches = self.mamba.step(self.embedding(token), caches)
        return self.lm_head(self.norm_f(x)), caches


class _LMLoss(_LM):
    """Next-token cross-entropy over the LM's logits."""

    def forward(self, tokens):
        logits = super().forward(tokens[:, :-1])
        return nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), tokens[:, 1:].reshape(-1))


def _jamba_config():
    from mambapy.jamba import JambaLMConfig

    return JambaLMConfig(d_model=_DIM, n_layers=4, mlp_size=32, d_state=8, num_attention_heads=2,
                         num_key_value_heads=1, num_experts=4, num_experts_per_tok=2, attn_layer_offset=1,
                         attn_layer_period=2, expert_layer_offset=1, expert_layer_period=2, vocab_size=_VOCAB)


class _JambaLoss(nn.Module):
    """JambaLM training: next-token cross-entropy plus the MoE load-balancing loss."""

    def __init__(self, aux_weight=0.01):
        super().__init__()
        from mambapy.jamba import JambaLM

        self.config = _jamba_config()
        self.lm = JambaLM(self.config)
        self.aux_weight = aux_weight

    def forward(self, tokens):
        from mambapy.jamba import load_balancing_loss

        logits, router_logits = self.lm(tokens[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), tokens[:, 1:].reshape(-1))
        aux = load_balancing_loss(router_logits, self.config.num_experts, self.config.num_experts_per_tok)
        return loss + self.aux_weight * aux


def mamba_eval(shape=0):
    from mambapy.mamba import Mamba

    return Mamba(_config()).eval(), (_x(shape),), {}


def mamba_sequential_scan(shape=0):
    """pscan=False: the sequential selective scan (a Python loop over time steps)."""
    from mambapy.mamba import Mamba

    return Mamba(_config(pscan=False)).eval(), (_x(shape),), {}


def mamba_train(shape=0):
    b, n = _BATCH[shape], _SEQ[shape]
    return _SequenceRegressor().train(), (_x(shape), torch.randn(b, n)), {}


def mamba_inner_layernorms_train(shape=0):
    b, n = _BATCH[shape], _SEQ[shape]
    return _SequenceRegressor(inner_layernorms=True).train(), (_x(shape), torch.randn(b, n)), {}


def lm_train(shape=0):
    return _LMLoss().train(), (_ids(shape, extra=1),), {}


def lm_eval(shape=0):
    return _LM().eval(), (_ids(shape),), {}


def lm_step(shape=0):
    """One decoding step (mambapy.lm.LM.generate's loop body): a token per row and the
    per-layer caches (hidden state, last d_conv - 1 inputs), after a prompt of 1 -> 2 -> 3
    tokens."""
    lm = _LM().eval()
    config = lm.config
    b = _BATCH[shape]
    caches = [(None, torch.zeros(b, config.d_inner, config.d_conv - 1)) for _ in range(config.n_layers)]
    with torch.no_grad():
        for i in range(shape + 1):
            _, caches = lm.step(torch.randint(0, _VOCAB, (b,)), caches)
    return lm.step, (torch.randint(0, _VOCAB, (b,)), caches), {}


def jamba_train(shape=0):
    return _JambaLoss().train(), (_ids(shape, extra=1),), {}


def vim_eval(shape=0):
    """Vision Mamba's bidirectional blocks over a patch sequence."""
    from mambapy.vim import MambaConfig, VMamba

    return VMamba(MambaConfig(d_model=_DIM, n_layers=2, d_state=8)).eval(), (_x(shape),), {}


MODELS = {
    "mambapy_mamba_eval": ("eval", mamba_eval),
    "mambapy_mamba_sequential_scan": ("eval", mamba_sequential_scan),
    "mambapy_mamba_train": ("train", mamba_train),
    "mambapy_mamba_inner_layernorms_train": ("train", mamba_inner_layernorms_train),
    "mambapy_lm_train": ("train", lm_train),
    "mambapy_lm_eval": ("eval", lm_eval),
    "mambapy_lm_step": ("eval", lm_step),
    "mambapy_jamba_train": ("train", jamba_train),
    "mambapy_vim_eval": ("eval", vim_eval),
}
