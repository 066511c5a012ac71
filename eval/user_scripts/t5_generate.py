"""Seq2seq: a tiny T5 translating with a compiled `generate` (beam-free, greedy)."""
import torch
from transformers import T5Config, T5ForConditionalGeneration


def main():
    torch.manual_seed(0)
    config = T5Config(vocab_size=256, d_model=32, d_kv=8, d_ff=64, num_layers=2,
                      num_decoder_layers=2, num_heads=4, decoder_start_token_id=0)
    t5 = T5ForConditionalGeneration(config).eval()
    translate = torch.compile(t5.generate)

    source = torch.randint(2, config.vocab_size, (2, 7))
    with torch.no_grad():
        target = translate(input_ids=source, attention_mask=torch.ones_like(source), max_new_tokens=4)
    print(target.tolist())


if __name__ == "__main__":
    main()
