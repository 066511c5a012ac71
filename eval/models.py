"""The evaluation's models: real library code, tiny configs, random weights, no downloads.

Each builder returns ``(model, args, kwargs)``; the model is already in eval() or train()
mode.  Train-mode models get labels so that the loss path runs inside ``forward``.
``MODELS`` maps a name to ``(library, mode, builder)``; the library is the package whose
source files count as "user code" for that model.
"""

from __future__ import annotations

import torch

SEED = 0
B, T = 2, 8  # batch, sequence length
VOCAB = 100


def _ids(n=T, vocab=VOCAB):
    return torch.randint(3, vocab, (B, n))


def _lm_tiny(**extra):
    """Common tiny decoder-LM config fields (Llama-style naming)."""
    base = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                pad_token_id=0, bos_token_id=1, eos_token_id=2)
    base.update(extra)
    return base


def _mode(model, train: bool):
    return model.train() if train else model.eval()


# --------------------------------------------------------------------------------------------
# transformers


def bert(train=False):
    from transformers import BertConfig, BertForSequenceClassification, BertModel

    cfg = BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                     vocab_size=VOCAB, max_position_embeddings=64)
    ids = _ids()
    if train:
        return _mode(BertForSequenceClassification(cfg), True), (ids,), {"labels": torch.tensor([0, 1])}
    return _mode(BertModel(cfg), False), (ids,), {"attention_mask": torch.ones(B, T, dtype=torch.long)}


def gpt2(train=False):
    from transformers import GPT2Config, GPT2LMHeadModel

    cfg = GPT2Config(n_embd=32, n_layer=2, n_head=2, vocab_size=VOCAB, n_positions=64,
                     bos_token_id=1, eos_token_id=2)
    ids = _ids()
    return _mode(GPT2LMHeadModel(cfg), train), (ids,), ({"labels": ids} if train else {})


def llama(train=False):
    from transformers import LlamaConfig, LlamaForCausalLM

    ids = _ids()
    return _mode(LlamaForCausalLM(LlamaConfig(**_lm_tiny())), train), (ids,), ({"labels": ids} if train else {})


def mistral():
    from transformers import MistralConfig, MistralForCausalLM

    return _mode(MistralForCausalLM(MistralConfig(**_lm_tiny(sliding_window=4))), False), (_ids(),), {}


def qwen2():
    from transformers import Qwen2Config, Qwen2ForCausalLM

    return _mode(Qwen2ForCausalLM(Qwen2Config(**_lm_tiny())), False), (_ids(),), {}


def mixtral(train=False):
    from transformers import MixtralConfig, MixtralForCausalLM

    cfg = MixtralConfig(**_lm_tiny(num_local_experts=4, num_experts_per_tok=2, output_router_logits=train))
    ids = _ids()
    return _mode(MixtralForCausalLM(cfg), train), (ids,), ({"labels": ids} if train else {})


def qwen2_moe():
    from transformers import Qwen2MoeConfig, Qwen2MoeForCausalLM

    cfg = Qwen2MoeConfig(**_lm_tiny(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                                    shared_expert_intermediate_size=32))
    return _mode(Qwen2MoeForCausalLM(cfg), False), (_ids(),), {}


def t5(train=False):
    from transformers import T5Config, T5ForConditionalGeneration

    cfg = T5Config(vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4,
                   decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
    ids = _ids()
    if train:
        return _mode(T5ForConditionalGeneration(cfg), True), (ids,), {"labels": _ids(6)}
    return _mode(T5ForConditionalGeneration(cfg), False), (ids,), {"decoder_input_ids": _ids(6)}


def bart(train=False):
    from transformers import BartConfig, BartForConditionalGeneration

    cfg = BartConfig(vocab_size=VOCAB, d_model=32, encoder_layers=2, decoder_layers=2,
                     encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64,
                     decoder_ffn_dim=64, max_position_embeddings=64, pad_token_id=0, bos_token_id=1,
                     eos_token_id=2, decoder_start_token_id=2, forced_eos_token_id=None)
    ids = _ids()
    ids[:, -1] = 2  # one eos per row (BART's classification heads count them)
    if train:
        return _mode(BartForConditionalGeneration(cfg), True), (ids,), {"labels": _ids(6)}
    return _mode(BartForConditionalGeneration(cfg), False), (ids,), {}


def vit(train=False):
    from transformers import ViTConfig, ViTForImageClassification

    cfg = ViTConfig(image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                    intermediate_size=64, num_labels=3)
    px = torch.randn(B, 3, 32, 32)
    return _mode(ViTForImageClassification(cfg), train), (px,), ({"labels": torch.tensor([0, 2])} if train else {})


def clip():
    from transformers import CLIPConfig, CLIPModel

    cfg = CLIPConfig(
        text_config=dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, max_position_embeddings=32, eos_token_id=2),
        vision_config=dict(image_size=32, patch_size=8, hidden_size=32, intermediate_size=64,
                           num_hidden_layers=2, num_attention_heads=2),
        projection_dim=16,
    )
    return _mode(CLIPModel(cfg), False), (), {"input_ids": _ids(), "pixel_values": torch.randn(B, 3, 32, 32),
                                             "return_loss": True}


def whisper():
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    cfg = WhisperConfig(vocab_size=VOCAB, num_mel_bins=8, d_model=32, encoder_layers=2, decoder_layers=2,
                        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64,
                        decoder_ffn_dim=64, max_source_positions=16, max_target_positions=32,
                        pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1,
                        begin_suppress_tokens=None, suppress_tokens=None)
    feats = torch.randn(B, 8, 32)  # (batch, mel bins, 2 * max_source_positions)
    return _mode(WhisperForConditionalGeneration(cfg), False), (feats,), {"decoder_input_ids": _ids(6)}


def detr():
    from transformers import DetrForObjectDetection

    return _mode(DetrForObjectDetection(_detr_config()), False), (torch.randn(1, 3, 64, 64),), {}


def deberta_v2():
    from transformers import DebertaV2Config, DebertaV2Model

    cfg = DebertaV2Config(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                          intermediate_size=64, max_position_embeddings=64, relative_attention=True,
                          position_buckets=16, pos_att_type=["p2c", "c2p"])
    return _mode(DebertaV2Model(cfg), False), (_ids(),), {}


def xlnet():
    from transformers import XLNetConfig, XLNetLMHeadModel

    cfg = XLNetConfig(vocab_size=VOCAB, d_model=32, n_layer=2, n_head=2, d_inner=64)
    return _mode(XLNetLMHeadModel(cfg), False), (_ids(),), {}


def _switch_config():
    from transformers import SwitchTransformersConfig

    return SwitchTransformersConfig(vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=64, num_layers=2,
                                    num_decoder_layers=2, num_heads=4, num_experts=4, expert_capacity=8,
                                    num_sparse_encoder_layers=1, num_sparse_decoder_layers=1,
                                    decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)


def switch_transformers():
    from transformers import SwitchTransformersForConditionalGeneration

    model = SwitchTransformersForConditionalGeneration(_switch_config())
    return _mode(model, False), (_ids(),), {"decoder_input_ids": _ids(6)}


def swin():
    from transformers import SwinConfig, SwinForImageClassification

    cfg = SwinConfig(image_size=32, patch_size=4, embed_dim=16, depths=[1, 1], num_heads=[2, 2],
                     window_size=4, num_labels=3)
    return _mode(SwinForImageClassification(cfg), False), (torch.randn(B, 3, 32, 32),), {}


def wav2vec2():
    from transformers import Wav2Vec2Config, Wav2Vec2Model

    cfg = Wav2Vec2Config(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                         conv_dim=(16, 16), conv_stride=(5, 2), conv_kernel=(10, 3),
                         num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2)
    return _mode(Wav2Vec2Model(cfg), False), (torch.randn(B, 400),), {}


def longformer():
    from transformers import LongformerConfig, LongformerModel

    cfg = LongformerConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                           intermediate_size=64, max_position_embeddings=80, attention_window=4,
                           pad_token_id=1)
    ids = _ids(16)
    glob = torch.zeros_like(ids)
    glob[:, 0] = 1
    return _mode(LongformerModel(cfg), False), (ids,), {"global_attention_mask": glob}


def opt():
    from transformers import OPTConfig, OPTForCausalLM

    cfg = OPTConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, ffn_dim=64, num_attention_heads=2,
                    max_position_embeddings=64, word_embed_proj_dim=32, pad_token_id=0, bos_token_id=1,
                    eos_token_id=2)
    return _mode(OPTForCausalLM(cfg), False), (_ids(),), {}


def bloom():
    from transformers import BloomConfig, BloomForCausalLM

    cfg = BloomConfig(vocab_size=VOCAB, hidden_size=32, n_layer=2, n_head=2, pad_token_id=0, bos_token_id=1,
                      eos_token_id=2)
    return _mode(BloomForCausalLM(cfg), False), (_ids(),), {}


def reformer():
    from transformers import ReformerConfig, ReformerModelWithLMHead

    cfg = ReformerConfig(vocab_size=VOCAB, hidden_size=32, num_attention_heads=2, attention_head_size=16,
                         feed_forward_size=64, attn_layers=["local", "lsh"], axial_pos_embds=False,
                         max_position_embeddings=64, local_attn_chunk_length=4, lsh_attn_chunk_length=4,
                         num_buckets=4, num_hashes=1, is_decoder=True, pad_token_id=0, eos_token_id=2)
    return _mode(ReformerModelWithLMHead(cfg), False), (_ids(16),), {}


def wav2vec2_ctc_train():
    from transformers import Wav2Vec2Config, Wav2Vec2ForCTC

    cfg = Wav2Vec2Config(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                         conv_dim=(16, 16), conv_stride=(5, 2), conv_kernel=(10, 3), vocab_size=20,
                         num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2,
                         mask_time_prob=0.2, mask_time_length=2)
    labels = torch.randint(1, 20, (B, 5))
    labels[0, -1] = -100
    return _mode(Wav2Vec2ForCTC(cfg), True), (torch.randn(B, 400),), {"labels": labels}


def _detr_config():
    from transformers import DetrConfig, ResNetConfig

    backbone = ResNetConfig(embedding_size=8, hidden_sizes=[8, 16, 32, 64], depths=[1, 1, 1, 1],
                            layer_type="basic", out_features=["stage4"])
    return DetrConfig(use_timm_backbone=False, backbone_config=backbone, use_pretrained_backbone=False,
                      d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                      decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, num_queries=5,
                      num_labels=3)


def detr_train():
    from transformers import DetrForObjectDetection

    labels = [{"class_labels": torch.tensor([1, 2]), "boxes": torch.rand(2, 4) * 0.5 + 0.25}]
    return _mode(DetrForObjectDetection(_detr_config()), True), (torch.randn(1, 3, 64, 64),), {"labels": labels}


def fastspeech2():
    from transformers import FastSpeech2ConformerConfig, FastSpeech2ConformerModel

    cfg = FastSpeech2ConformerConfig(
        hidden_size=32, vocab_size=VOCAB, num_mel_bins=8, encoder_num_attention_heads=2,
        decoder_num_attention_heads=2, encoder_layers=1, decoder_layers=1, encoder_linear_units=64,
        decoder_linear_units=64, speech_decoder_postnet_layers=1, speech_decoder_postnet_units=16,
        duration_predictor_layers=1, duration_predictor_channels=16, pitch_predictor_layers=1,
        pitch_predictor_channels=16, energy_predictor_layers=1, energy_predictor_channels=16)
    return _mode(FastSpeech2ConformerModel(cfg), False), (_ids(),), {}


def vits():
    from transformers import VitsConfig, VitsModel

    cfg = VitsConfig(
        vocab_size=VOCAB, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, ffn_dim=32, flow_size=16,
        spectrogram_bins=17, upsample_initial_channel=16, upsample_rates=[2, 2], upsample_kernel_sizes=[4, 4],
        resblock_kernel_sizes=[3], resblock_dilation_sizes=[[1, 3]], prior_encoder_num_flows=1,
        prior_encoder_num_wavenet_layers=1, posterior_encoder_num_wavenet_layers=1, duration_predictor_num_flows=1,
        duration_predictor_filter_channels=16, depth_separable_num_layers=1)
    return _mode(VitsModel(cfg), False), (_ids(),), {}


def big_bird():
    from transformers import BigBirdConfig, BigBirdModel

    cfg = BigBirdConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=256, attention_type="block_sparse",
                        block_size=4, num_random_blocks=2)
    return _mode(BigBirdModel(cfg), False), (_ids(64),), {}


def funnel():
    from transformers import FunnelConfig, FunnelModel

    cfg = FunnelConfig(vocab_size=VOCAB, block_sizes=[1, 1], d_model=32, n_head=2, d_head=16, d_inner=64)
    return _mode(FunnelModel(cfg), False), (_ids(),), {}


def led():
    from transformers import LEDConfig, LEDForConditionalGeneration

    cfg = LEDConfig(vocab_size=VOCAB, d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                    decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64,
                    max_encoder_position_embeddings=64, max_decoder_position_embeddings=64, attention_window=4,
                    pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=2)
    return _mode(LEDForConditionalGeneration(cfg), False), (_ids(16),), {"decoder_input_ids": _ids(6)}


def mamba():
    from transformers import MambaConfig, MambaForCausalLM

    cfg = MambaConfig(vocab_size=VOCAB, hidden_size=32, state_size=4, num_hidden_layers=2, expand=2, conv_kernel=4)
    return _mode(MambaForCausalLM(cfg), False), (_ids(),), {}


def esm():
    from transformers import EsmConfig, EsmForMaskedLM

    cfg = EsmConfig(vocab_size=33, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                    position_embedding_type="rotary", pad_token_id=1, mask_token_id=32)
    return _mode(EsmForMaskedLM(cfg), False), (_ids(vocab=33),), {}


def nllb_moe():
    from transformers import NllbMoeConfig, NllbMoeForConditionalGeneration

    cfg = NllbMoeConfig(vocab_size=VOCAB, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
                        decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, num_experts=4,
                        expert_capacity=8, encoder_sparse_step=2, decoder_sparse_step=2, max_position_embeddings=64,
                        pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=2)
    return _mode(NllbMoeForConditionalGeneration(cfg), False), (_ids(),), {"decoder_input_ids": _ids(6)}


def jamba():
    from transformers import JambaConfig, JambaForCausalLM

    cfg = JambaConfig(**_lm_tiny(num_experts=2, num_experts_per_tok=1, expert_layer_period=2, expert_layer_offset=1,
                                 attn_layer_period=2, attn_layer_offset=1, mamba_d_state=4, mamba_d_conv=4,
                                 mamba_expand=2, use_mamba_kernels=False))
    return _mode(JambaForCausalLM(cfg), False), (_ids(),), {}


def switch_train():
    from transformers import SwitchTransformersForConditionalGeneration

    model = SwitchTransformersForConditionalGeneration(_switch_config())
    return _mode(model, True), (_ids(),), {"labels": _ids(6)}


def encodec():
    from transformers import EncodecConfig, EncodecModel

    cfg = EncodecConfig(hidden_size=16, num_filters=4, num_residual_layers=1, upsampling_ratios=[4, 2],
                        codebook_size=32, codebook_dim=16, target_bandwidths=[1.5], sampling_rate=1600)
    return _mode(EncodecModel(cfg), False), (torch.randn(1, 1, 160),), {}


# --------------------------------------------------------------------------------------------
# timm (create_model with pretrained=False never downloads)


def _timm(name, train=False, size=32, **kw):
    import timm

    model = timm.create_model(name, pretrained=False, num_classes=5, **kw)
    return _mode(model, train), (torch.randn(B, 3, size, size),), {}


def timm_resnet18():
    return _timm("resnet18")


def timm_vit_tiny():
    return _timm("vit_tiny_patch16_224", img_size=32, patch_size=8)


def timm_efficientnet_train():
    return _timm("efficientnet_b0", train=True)


def timm_convnext():
    return _timm("convnext_atto")


def timm_swin():
    return _timm("swin_tiny_patch4_window7_224", img_size=56, window_size=7, embed_dim=24,
                 depths=(1, 1, 1, 1), num_heads=(1, 1, 1, 1), size=56)


# --------------------------------------------------------------------------------------------
# torchvision (model source only: its native ops library cannot load, see tv_stub.py)


def tv_resnet18():
    from torchvision.models import resnet18

    return _mode(resnet18(num_classes=5), False), (torch.randn(B, 3, 32, 32),), {}


def tv_vit():
    from torchvision.models.vision_transformer import VisionTransformer

    m = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32, mlp_dim=64,
                          num_classes=5)
    return _mode(m, False), (torch.randn(B, 3, 32, 32),), {}


def tv_googlenet_train():
    from torchvision.models import googlenet

    m = googlenet(num_classes=5, aux_logits=True, init_weights=False)
    return _mode(m, True), (torch.randn(B, 3, 64, 64),), {}


def tv_mobilenet_v3():
    from torchvision.models import mobilenet_v3_small

    return _mode(mobilenet_v3_small(num_classes=5), False), (torch.randn(B, 3, 32, 32),), {}


# name -> (library, mode, builder).  DEFAULT is what `run_eval.py` runs without --models; the
# rest are near-duplicates of default models (same code paths) kept for ad-hoc runs.
MODELS = {
    # transformers: decoders
    "gpt2_train": ("transformers", "train", lambda: gpt2(train=True)),
    "llama": ("transformers", "eval", llama),
    "mistral": ("transformers", "eval", mistral),
    "qwen2": ("transformers", "eval", qwen2),
    "mixtral": ("transformers", "eval", mixtral),
    "mamba": ("transformers", "eval", mamba),
    # transformers: encoders
    "bert_train": ("transformers", "train", lambda: bert(train=True)),
    "deberta_v2": ("transformers", "eval", deberta_v2),
    "xlnet": ("transformers", "eval", xlnet),
    "big_bird": ("transformers", "eval", big_bird),
    "longformer": ("transformers", "eval", longformer),
    "reformer": ("transformers", "eval", reformer),
    # transformers: encoder-decoders
    "t5_train": ("transformers", "train", lambda: t5(train=True)),
    "bart": ("transformers", "eval", bart),
    "led": ("transformers", "eval", led),
    "switch_transformers": ("transformers", "eval", switch_transformers),
    "nllb_moe": ("transformers", "eval", nllb_moe),
    # transformers: vision, multimodal, audio
    "vit_train": ("transformers", "train", lambda: vit(train=True)),
    "swin": ("transformers", "eval", swin),
    "clip": ("transformers", "eval", clip),
    "detr": ("transformers", "eval", detr),
    "detr_train": ("transformers", "train", detr_train),
    "whisper": ("transformers", "eval", whisper),
    "wav2vec2_ctc_train": ("transformers", "train", wav2vec2_ctc_train),
    "fastspeech2": ("transformers", "eval", fastspeech2),
    "vits": ("transformers", "eval", vits),
    "encodec": ("transformers", "eval", encodec),
    # timm
    "timm_vit_tiny": ("timm", "eval", timm_vit_tiny),
    "timm_efficientnet_train": ("timm", "train", timm_efficientnet_train),
    # torchvision
    "tv_googlenet_train": ("torchvision", "train", tv_googlenet_train),
    # ---- extras (not in DEFAULT) ----
    "bert": ("transformers", "eval", bert),
    "gpt2": ("transformers", "eval", gpt2),
    "llama_train": ("transformers", "train", lambda: llama(train=True)),
    "mixtral_train": ("transformers", "train", lambda: mixtral(train=True)),
    "qwen2_moe": ("transformers", "eval", qwen2_moe),
    "jamba": ("transformers", "eval", jamba),
    "t5": ("transformers", "eval", t5),
    "bart_train": ("transformers", "train", lambda: bart(train=True)),
    "switch_transformers_train": ("transformers", "train", switch_train),
    "vit": ("transformers", "eval", vit),
    "wav2vec2": ("transformers", "eval", wav2vec2),
    "funnel": ("transformers", "eval", funnel),
    "esm": ("transformers", "eval", esm),
    "opt": ("transformers", "eval", opt),
    "bloom": ("transformers", "eval", bloom),
    "timm_resnet18": ("timm", "eval", timm_resnet18),
    "timm_convnext": ("timm", "eval", timm_convnext),
    "timm_swin": ("timm", "eval", timm_swin),
    "tv_resnet18": ("torchvision", "eval", tv_resnet18),
    "tv_vit": ("torchvision", "eval", tv_vit),
    "tv_mobilenet_v3": ("torchvision", "eval", tv_mobilenet_v3),
}
DEFAULT = list(MODELS)[: list(MODELS).index("bert")]

# transformers, timm, torchvision: the corpus tcl was developed on (dev).  Their builders take
# no shape; SHAPED lists the models whose builder takes `shape=0|1|2` (eval/corpus/).
SPLIT = {name: "dev" for name in MODELS}
SHAPED: set[str] = set()


def _add_corpus():
    from corpus import entries

    for name, (library, mode, builder, split, _module) in entries().items():
        if name in MODELS:
            raise ValueError(f"model name {name!r} is defined twice")
        MODELS[name] = (library, mode, builder)
        SPLIT[name] = split
        SHAPED.add(name)
        DEFAULT.append(name)


_add_corpus()
