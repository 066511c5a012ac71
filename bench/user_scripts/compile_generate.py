"""A user's script that compiles a Hugging Face model's `generate` (issue 16's scenario).

bench/lsp_bench.py --script edits it in the language server with follow-imports on; it is not
run (it would download GPT-2)."""

import torch
from transformers import AutoTokenizer, GPT2LMHeadModel


def load(name="gpt2"):
    tokenizer = AutoTokenizer.from_pretrained(name)
    model = GPT2LMHeadModel.from_pretrained(name)
    return tokenizer, model.eval()


def complete(prompt, max_new_tokens=16):
    tokenizer, model = load()
    generate = torch.compile(model.generate)
    inputs = tokenizer(prompt, return_tensors="pt")
    with torch.no_grad():
        out = generate(inputs["input_ids"], max_new_tokens=max_new_tokens)
    return tokenizer.decode(out[0])


if __name__ == "__main__":
    print(complete("Hello, my dog is"))
