"""pytorch-crf: an LSTM-CRF tagger; the compiled model returns the CRF loss, compiled decode for tags."""
import torch
import torch.nn as nn
from torchcrf import CRF


class Tagger(nn.Module):
    def __init__(self, vocab_size, num_tags, dim=16):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, dim)
        self.lstm = nn.LSTM(dim, dim, batch_first=True, bidirectional=True)
        self.proj = nn.Linear(2 * dim, num_tags)
        self.crf = CRF(num_tags, batch_first=True)

    def emissions(self, tokens):
        return self.proj(self.lstm(self.embed(tokens))[0])

    def forward(self, tokens, tags, mask):
        return -self.crf(self.emissions(tokens), tags, mask=mask, reduction="mean")

    def decode(self, tokens, mask):
        return self.crf.decode(self.emissions(tokens), mask=mask)


torch.manual_seed(0)
model = Tagger(vocab_size=50, num_tags=5)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
compiled = torch.compile(model)
decode = torch.compile(model.decode)

tokens = torch.randint(0, 50, (3, 7))
tags = torch.randint(0, 5, (3, 7))
mask = torch.ones(3, 7, dtype=torch.bool)
mask[1, 5:] = False
for _ in range(2):
    optimizer.zero_grad()
    loss = compiled(tokens, tags, mask)
    loss.backward()
    optimizer.step()
    print("nll", loss.item())
with torch.no_grad():
    print(decode(tokens, mask))
