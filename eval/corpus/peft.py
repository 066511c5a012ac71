"""peft: adapters (LoRA, DoRA, IA3, LoHa, LoKr, AdaLoRA, OFT, VeRA, prompt and prefix tuning)
over tiny randomly initialised transformers models, wrapped with `get_peft_model` as peft's
README shows.  The peft package's files are the user code; the transformers model under it is
library code of another package.
"""

from __future__ import annotations

import torch

LIBRARY = "peft"
DIST = "peft==0.21.2"

VOCAB = 100
# (batch, sequence length) for shapes 0, 1, 2
_SEQ = [(2, 8), (3, 12), (4, 16)]


def _ids(shape):
    b, t = _SEQ[shape]
    return torch.randint(3, VOCAB, (b, t))


def _llama():
    from transformers import LlamaConfig, LlamaForCausalLM

    return LlamaForCausalLM(LlamaConfig(
        vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
        pad_token_id=0, bos_token_id=1, eos_token_id=2))


def _gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel

    return GPT2LMHeadModel(GPT2Config(n_embd=32, n_layer=2, n_head=2, vocab_size=VOCAB, n_positions=64,
                                      bos_token_id=1, eos_token_id=2))


def _bert_cls():
    from transformers import BertConfig, BertForSequenceClassification

    return BertForSequenceClassification(BertConfig(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
        vocab_size=VOCAB, max_position_embeddings=64, num_labels=2))


def _t5():
    from transformers import T5Config, T5ForConditionalGeneration

    return T5ForConditionalGeneration(T5Config(
        vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4,
        decoder_start_token_id=0, pad_token_id=0, eos_token_id=1))


def _lm_call(model, shape, train):
    ids = _ids(shape)
    kwargs = {"attention_mask": torch.ones_like(ids)}
    if train:
        kwargs["labels"] = ids
    return (model.train() if train else model.eval()), (ids,), kwargs


def lora_llama(shape=0, train=True):
    from peft import LoraConfig, TaskType, get_peft_model

    cfg = LoraConfig(task_type=TaskType.CAUSAL_LM, r=4, lora_alpha=8, lora_dropout=0.1,
                     target_modules=["q_proj", "v_proj"])
    return _lm_call(get_peft_model(_llama(), cfg), shape, train)


def lora_llama_eval(shape=0):
    return lora_llama(shape, train=False)


def dora_llama(shape=0):
    from peft import LoraConfig, TaskType, get_peft_model

    cfg = LoraConfig(task_type=TaskType.CAUSAL_LM, r=4, lora_alpha=8, use_dora=True,
                     target_modules=["q_proj", "k_proj", "v_proj", "o_proj"])
    return _lm_call(get_peft_model(_llama(), cfg), shape, True)


def lora_gpt2_all_linear(shape=0):
    from peft import LoraConfig, TaskType, get_peft_model

    cfg = LoraConfig(task_type=TaskType.CAUSAL_LM, r=4, lora_alpha=16, target_modules="all-linear",
                     fan_in_fan_out=True)
    return _lm_call(get_peft_model(_gpt2(), cfg), shape, False)


def ia3_bert(shape=0):
    from peft import IA3Config, TaskType, get_peft_model

    cfg = IA3Config(task_type=TaskType.SEQ_CLS, target_modules=["key", "value", "output.dense"],
                    feedforward_modules=["output.dense"])
    model = get_peft_model(_bert_cls(), cfg).train()
    ids = _ids(shape)
    labels = torch.arange(ids.shape[0]) % 2
    return model, (ids,), {"attention_mask": torch.ones_like(ids), "labels": labels}


def loha_llama(shape=0):
    from peft import LoHaConfig, TaskType, get_peft_model

    cfg = LoHaConfig(task_type=TaskType.CAUSAL_LM, r=4, alpha=8, target_modules=["q_proj", "v_proj"])
    return _lm_call(get_peft_model(_llama(), cfg), shape, True)


def lokr_llama_mlp(shape=0):
    from peft import LoKrConfig, TaskType, get_peft_model

    cfg = LoKrConfig(task_type=TaskType.CAUSAL_LM, r=4, alpha=8,
                     target_modules=["gate_proj", "up_proj", "down_proj"])
    return _lm_call(get_peft_model(_llama(), cfg), shape, True)


def adalora_t5(shape=0):
    from peft import AdaLoraConfig, TaskType, get_peft_model

    cfg = AdaLoraConfig(task_type=TaskType.SEQ_2_SEQ_LM, init_r=6, target_r=2, total_step=100,
                        target_modules=["q", "v"])
    model = get_peft_model(_t5(), cfg).train()
    ids = _ids(shape)
    b, t = _SEQ[shape]
    labels = torch.randint(3, VOCAB, (b, t // 2))
    return model, (ids,), {"attention_mask": torch.ones_like(ids), "labels": labels}


def oft_bert(shape=0):
    from peft import OFTConfig, TaskType, get_peft_model

    cfg = OFTConfig(task_type=TaskType.SEQ_CLS, r=0, oft_block_size=8, target_modules=["query", "value"])
    model = get_peft_model(_bert_cls(), cfg).eval()
    ids = _ids(shape)
    return model, (ids,), {"attention_mask": torch.ones_like(ids)}


def vera_llama(shape=0):
    from peft import TaskType, VeraConfig, get_peft_model

    cfg = VeraConfig(task_type=TaskType.CAUSAL_LM, r=8, target_modules=["q_proj", "v_proj"])
    return _lm_call(get_peft_model(_llama(), cfg), shape, True)


def prompt_tuning_llama(shape=0):
    from peft import PromptTuningConfig, PromptTuningInit, TaskType, get_peft_model

    cfg = PromptTuningConfig(task_type=TaskType.CAUSAL_LM, prompt_tuning_init=PromptTuningInit.RANDOM,
                             num_virtual_tokens=4)
    return _lm_call(get_peft_model(_llama(), cfg), shape, True)


def prefix_tuning_gpt2(shape=0):
    from peft import PrefixTuningConfig, TaskType, get_peft_model

    cfg = PrefixTuningConfig(task_type=TaskType.CAUSAL_LM, num_virtual_tokens=4)
    return _lm_call(get_peft_model(_gpt2(), cfg), shape, False)


def p_tuning_bert(shape=0):
    from peft import PromptEncoderConfig, TaskType, get_peft_model

    cfg = PromptEncoderConfig(task_type=TaskType.SEQ_CLS, num_virtual_tokens=4, encoder_hidden_size=16)
    model = get_peft_model(_bert_cls(), cfg).train()
    ids = _ids(shape)
    labels = torch.arange(ids.shape[0]) % 2
    return model, (ids,), {"attention_mask": torch.ones_like(ids), "labels": labels}


MODELS = {
    "peft_lora_llama": ("train", lora_llama),
    "peft_lora_llama_eval": ("eval", lora_llama_eval),
    "peft_dora_llama": ("train", dora_llama),
    "peft_lora_gpt2_all_linear": ("eval", lora_gpt2_all_linear),
    "peft_ia3_bert": ("train", ia3_bert),
    "peft_loha_llama": ("train", loha_llama),
    "peft_lokr_llama_mlp": ("train", lokr_llama_mlp),
    "peft_adalora_t5": ("train", adalora_t5),
    "peft_oft_bert": ("eval", oft_bert),
    "peft_vera_llama": ("train", vera_llama),
    "peft_prompt_tuning_llama": ("train", prompt_tuning_llama),
    "peft_prefix_tuning_gpt2": ("eval", prefix_tuning_gpt2),
    "peft_p_tuning_bert": ("train", p_tuning_bert),
}
