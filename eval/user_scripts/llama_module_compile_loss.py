"""`model.compile()` on a tiny Llama, then a training forward with labels and a backward."""
import torch
from transformers import LlamaConfig, LlamaForCausalLM

torch.manual_seed(0)
config = LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                     num_key_value_heads=2, vocab_size=1000, max_position_embeddings=128)
model = LlamaForCausalLM(config)
model.compile()

ids = torch.randint(0, config.vocab_size, (2, 16))
out = model(ids, labels=ids)
out.loss.backward()
print("loss", float(out.loss))
