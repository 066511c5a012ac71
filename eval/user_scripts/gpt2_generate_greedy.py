"""Greedy decoding with a compiled `generate` (GPT-2, tiny random config)."""
import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
config = GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=1000, n_positions=128)
lm = GPT2LMHeadModel(config).eval()

gen = torch.compile(lm.generate)

input_ids = torch.randint(0, config.vocab_size, (1, 8))
with torch.no_grad():
    out = gen(input_ids, max_new_tokens=4, pad_token_id=config.eos_token_id)
print(out.shape, out[0, -4:].tolist())
