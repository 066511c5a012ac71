"""torchtune: decoder LLMs from the component builders (tiny sizes), with and without a KV cache,
LoRA / DoRA fine-tuning, encoders, and the chunked losses of its recipes.

Shapes: batch 2 -> 3 -> 4 and sequence length 8 -> 12 -> 16, except the KV-cache decode step
(one new token per call, batch fixed during generation: the position advances 8 -> 9 -> 10).
"""

from __future__ import annotations

import torch

LIBRARY = "torchtune"
DIST = "torchtune==0.6.1"

VOCAB = 100
B = (2, 3, 4)
T = (8, 12, 16)
MAX_LEN = 64
DEC = dict(vocab_size=VOCAB, num_layers=2, num_heads=4, num_kv_heads=2, embed_dim=32, max_seq_len=MAX_LEN)


def _tokens(shape):
    return torch.randint(0, VOCAB, (B[shape], T[shape]))


def _llama3(**kw):
    from torchtune.models.llama3 import llama3

    return llama3(intermediate_dim=64, **DEC, **kw)


def _decoder(make, train=False):
    def builder(shape=0):
        return make().train(train), (_tokens(shape),), {}

    return builder


def llama3_eval():
    return _llama3()


def llama3_1():
    from torchtune.models.llama3_1 import llama3_1

    return llama3_1(intermediate_dim=64, scale_factor=8, **DEC)


def llama3_2():
    from torchtune.models.llama3_2 import llama3_2

    return llama3_2(intermediate_dim=64, tie_word_embeddings=True, **DEC)


def qwen2():
    from torchtune.models.qwen2 import qwen2

    return qwen2(intermediate_dim=64, tie_word_embeddings=True, **DEC)


def mistral():
    from torchtune.models.mistral import mistral

    return mistral(intermediate_dim=64, **DEC)


def phi3():
    from torchtune.models.phi3 import phi3

    return phi3(intermediate_dim=64, **DEC)


def gemma():
    from torchtune.models.gemma import gemma

    return gemma(vocab_size=VOCAB, num_layers=2, num_heads=4, head_dim=8, num_kv_heads=1, embed_dim=32,
                 intermediate_dim=64, max_seq_len=MAX_LEN)


def gemma2():
    """Logit soft-capping and sliding-window attention on alternating layers."""
    from torchtune.models.gemma2 import gemma2

    return gemma2(vocab_size=VOCAB, num_layers=2, num_heads=4, head_dim=8, num_kv_heads=2, embed_dim=32,
                  intermediate_dim=64, max_seq_len=MAX_LEN, sliding_window_size=4, query_pre_attn_scalar=8)


def lora_llama3():
    from torchtune.models.llama3 import lora_llama3
    from torchtune.modules.peft import set_trainable_params, get_adapter_params

    model = lora_llama3(["q_proj", "v_proj", "output_proj"], apply_lora_to_mlp=True, intermediate_dim=64,
                        lora_rank=4, lora_alpha=8.0, lora_dropout=0.1, **DEC)
    set_trainable_params(model, get_adapter_params(model))
    return model


def dora_qwen2():
    from torchtune.models.qwen2 import lora_qwen2
    from torchtune.modules.peft import set_trainable_params, get_adapter_params

    model = lora_qwen2(["q_proj", "k_proj", "v_proj"], apply_lora_to_mlp=False, intermediate_dim=64,
                       lora_rank=4, lora_alpha=8.0, use_dora=True, **DEC)
    set_trainable_params(model, get_adapter_params(model))
    return model


def mistral_classifier(shape=0):
    """A reward model: the decoder with a 1-class score head (PPO / DPO recipes)."""
    from torchtune.models.mistral import mistral_classifier as make

    model = make(num_classes=1, intermediate_dim=64, **DEC)
    return model.eval(), (_tokens(shape),), {}


def llama3_chunked_ce_train(shape=0):
    """The SFT recipe's step: logits in chunks (set_num_output_chunks) into CEWithChunkedOutputLoss."""
    from torchtune.modules.loss import CEWithChunkedOutputLoss

    model = _llama3().train()
    model.set_num_output_chunks(4)
    loss_fn = CEWithChunkedOutputLoss(num_output_chunks=4)

    def loss_step(tokens, labels):
        return loss_fn(model(tokens), labels)

    tokens = _tokens(shape)
    labels = torch.cat([tokens[:, 1:], torch.full((B[shape], 1), -100)], dim=1)
    return loss_step, (tokens, labels), {}


def kd_loss(shape=0):
    """Knowledge distillation: ForwardKL over chunked student / teacher logits."""
    from torchtune.modules.loss import ForwardKLWithChunkedOutputLoss

    loss = ForwardKLWithChunkedOutputLoss(num_output_chunks=4)
    b, t = B[shape], T[shape]
    student = [c for c in torch.randn(b, t, VOCAB, requires_grad=True).chunk(4, dim=1)]
    teacher = [c for c in torch.randn(b, t, VOCAB).chunk(4, dim=1)]
    labels = torch.randint(0, VOCAB, (b, t))
    labels[:, -1] = -100
    return loss.train(), (student, teacher, labels), {}


def llama3_kv_prefill(shape=0):
    """A new prompt's prefill through the KV cache: reset the cache, then one forward over the
    prompt (the cache's batch is fixed at setup, so only the prompt length varies: 8 -> 12 -> 16)."""
    model = _llama3().eval()
    b = 2
    model.setup_caches(batch_size=b, dtype=torch.float32, decoder_max_seq_len=MAX_LEN)
    causal = torch.tril(torch.ones(MAX_LEN, MAX_LEN, dtype=torch.bool))

    def prefill(tokens, input_pos, mask):
        model.reset_caches()
        with torch.no_grad():
            return model(tokens, input_pos=input_pos, mask=mask)

    t = T[shape]
    tokens = torch.randint(0, VOCAB, (b, t))
    input_pos = torch.arange(t).unsqueeze(0).expand(b, t)
    mask = causal[None, :t].expand(b, t, MAX_LEN)
    return prefill, (tokens, input_pos, mask), {}


def _decode_step(make, top_k):
    def builder(shape=0):
        """generate()'s compiled per-token step (generate_next_token) after an eager 8-token prefill."""
        from torchtune.generation import generate_next_token

        model = make().eval()
        b, prompt = 2, 8
        model.setup_caches(batch_size=b, dtype=torch.float32, decoder_max_seq_len=MAX_LEN)
        causal = torch.tril(torch.ones(MAX_LEN, MAX_LEN, dtype=torch.bool))
        with torch.no_grad():
            model(torch.randint(0, VOCAB, (b, prompt)), input_pos=torch.arange(prompt).expand(b, prompt),
                  mask=causal[None, :prompt].expand(b, prompt, MAX_LEN))

        def decode_one(x, input_pos, mask):
            with torch.no_grad():
                return generate_next_token(model, input_pos=input_pos, x=x, mask=mask, temperature=0.8,
                                           top_k=top_k)

        pos = prompt + shape
        x = torch.randint(0, VOCAB, (b, 1))
        input_pos = torch.full((b, 1), pos)
        mask = causal[None, pos:pos + 1].expand(b, 1, MAX_LEN)
        return decode_one, (x, input_pos, mask), {}

    return builder


def t5_encoder(shape=0):
    """The T5 encoder takes tokens padded to its max_seq_len (16): only the batch varies."""
    from torchtune.models.t5 import t5_encoder as make

    model = make(embed_dim=32, mlp_dim=64, num_heads=4, head_dim=8, num_layers=2, rel_pos_num_buckets=8,
                 rel_pos_max_dist=16, vocab_size=VOCAB, norm_eps=1e-6, max_seq_len=16)
    tokens = torch.randint(1, VOCAB, (B[shape], 16))
    tokens[:, T[shape]:] = 0  # padding after a prompt of 8 / 12 / 16 tokens
    return model.eval(), (tokens,), {}


def clip_text_encoder(shape=0):
    """CLIP's text tower takes tokens padded to its max_seq_len (16), pooled at the EOT token:
    only the batch varies."""
    from torchtune.models.clip import clip_text_encoder as make

    model = make(embed_dim=32, num_heads=4, num_layers=2, max_seq_len=16)  # CLIP's vocabulary: EOT is 49407
    tokens = torch.randint(1, VOCAB, (B[shape], 16))
    tokens[:, T[shape] - 1] = model.eot_token
    tokens[:, T[shape]:] = 0
    return model.eval(), (tokens,), {}


def clip_vision_encoder(shape=0):
    """Tiled images (batch, images, tiles, C, H, W) with an aspect ratio per image; tile size 32."""
    from torchtune.models.clip import clip_vision_encoder as make

    model = make(tile_size=32, patch_size=8, embed_dim=32, num_layers=2, num_heads=4, cls_output_dim=16,
                 output_cls_projection=True, max_num_tiles=4)
    b = B[shape]
    images = torch.randn(b, 1, 4, 3, 32, 32)
    aspect_ratio = torch.tensor([[2, 2]]).expand(b, 1, 2)
    return model.eval(), (images,), {"aspect_ratio": aspect_ratio}


MODELS = {
    "torchtune_llama3_eval": ("eval", _decoder(llama3_eval)),
    "torchtune_llama3_train": ("train", _decoder(llama3_eval, train=True)),
    "torchtune_llama3_1_eval": ("eval", _decoder(llama3_1)),
    "torchtune_llama3_2_train": ("train", _decoder(llama3_2, train=True)),
    "torchtune_qwen2_eval": ("eval", _decoder(qwen2)),
    "torchtune_mistral_eval": ("eval", _decoder(mistral)),
    "torchtune_phi3_eval": ("eval", _decoder(phi3)),
    "torchtune_gemma_eval": ("eval", _decoder(gemma)),
    "torchtune_gemma2_eval": ("eval", _decoder(gemma2)),
    "torchtune_lora_llama3_train": ("train", _decoder(lora_llama3, train=True)),
    "torchtune_dora_qwen2_train": ("train", _decoder(dora_qwen2, train=True)),
    "torchtune_mistral_classifier": ("eval", mistral_classifier),
    "torchtune_llama3_chunked_ce_train": ("train", llama3_chunked_ce_train),
    "torchtune_kd_forward_kl": ("train", kd_loss),
    "torchtune_llama3_kv_prefill": ("eval", llama3_kv_prefill),
    "torchtune_llama3_decode_step": ("eval", _decode_step(llama3_eval, top_k=None)),
    "torchtune_qwen2_decode_step_topk": ("eval", _decode_step(qwen2, top_k=10)),
    "torchtune_t5_encoder": ("eval", t5_encoder),
    "torchtune_clip_text_encoder": ("eval", clip_text_encoder),
    "torchtune_clip_vision_encoder": ("eval", clip_vision_encoder),
}
