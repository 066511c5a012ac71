"""entmax: attention pooling with entmax15 (a sparse softmax) in a classifier, compiled training step."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from entmax import entmax15


class Pooler(nn.Module):
    def __init__(self, dim=16, classes=4):
        super().__init__()
        self.score = nn.Linear(dim, 1)
        self.out = nn.Linear(dim, classes)

    def forward(self, x):
        weights = entmax15(self.score(x).squeeze(-1), dim=-1)  # sparse attention over the sequence
        pooled = torch.bmm(weights.unsqueeze(1), x).squeeze(1)
        return self.out(pooled)


torch.manual_seed(0)
model = Pooler()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)


def train_step(x, y):
    optimizer.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    return loss


train_step = torch.compile(train_step)
for _ in range(2):
    x, y = torch.randn(8, 10, 16), torch.randint(0, 4, (8,))
    print("loss", train_step(x, y).item())
