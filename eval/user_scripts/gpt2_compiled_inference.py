"""`model = torch.compile(model)` on a causal LM, then inference forwards (no labels, no mask)."""
import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
config = GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=1000, n_positions=128)
model = GPT2LMHeadModel(config).eval()
model = torch.compile(model)

with torch.no_grad():
    for length in (8, 12):
        ids = torch.randint(0, config.vocab_size, (2, length))
        logits = model(ids).logits
        print("next tokens", logits[:, -1].argmax(-1).tolist())
