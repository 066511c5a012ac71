"""A Llama-style model (tiny LlamaConfig) generating with a compiled `generate`."""
import torch
from transformers import LlamaConfig, LlamaForCausalLM

torch.manual_seed(0)
config = LlamaConfig(
    vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
    num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
)
model = LlamaForCausalLM(config).eval()
compiled_generate = torch.compile(model.generate)

input_ids = torch.randint(3, config.vocab_size, (1, 10))
with torch.no_grad():
    output = compiled_generate(input_ids=input_ids, attention_mask=torch.ones_like(input_ids),
                               max_new_tokens=4, do_sample=False, pad_token_id=0)
print("generated:", output[0, input_ids.shape[1]:].tolist())
