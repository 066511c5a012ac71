"""A compiled training step (forward, loss, backward, optimizer step) for a tiny GPT-2."""
import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=1000, n_positions=64))
model.train()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)


def train_step(batch):
    loss = model(**batch).loss
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss


train_step = torch.compile(train_step)

for step in range(2):
    ids = torch.randint(0, 1000, (2, 16))
    loss = train_step({"input_ids": ids, "labels": ids})
    print(f"step {step}: loss {loss.item():.3f}")
