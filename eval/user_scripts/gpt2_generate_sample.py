"""Top-k sampling with a compiled `generate` (GPT-2, tiny random config), batch of two prompts."""
import torch
from transformers import GPT2Config, GPT2LMHeadModel


def main():
    torch.manual_seed(0)
    config = GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=1000, n_positions=128)
    model = GPT2LMHeadModel(config)
    model.eval()
    generate = torch.compile(model.generate)

    prompts = torch.randint(0, config.vocab_size, (2, 6))
    attention_mask = torch.ones_like(prompts)
    with torch.inference_mode():
        samples = generate(prompts, attention_mask=attention_mask, max_new_tokens=4,
                           do_sample=True, top_k=5, pad_token_id=config.eos_token_id)
    for row in samples:
        print(row.tolist())


if __name__ == "__main__":
    main()
