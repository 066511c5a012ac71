"""pytorch-optimizer: Lion and AdaBelief with FocalLoss; compiled optimizer.step (PyTorch recipe) and compiled loss."""
import torch
import torch.nn as nn
from pytorch_optimizer import AdaBelief, FocalLoss, Lion

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 1))
head = nn.Linear(10, 1)
opt = Lion(model.parameters(), lr=1e-4, weight_decay=1e-2)
opt2 = AdaBelief(head.parameters(), lr=1e-3)
criterion = FocalLoss(alpha=0.25, gamma=2.0)


@torch.compile(fullgraph=False)
def step():
    opt.step()
    opt2.step()


loss_fn = torch.compile(criterion)
for _ in range(2):
    x, y = torch.randn(16, 10), torch.randint(0, 2, (16, 1)).float()
    loss = loss_fn(model(x), y) + loss_fn(head(x), y)
    loss.backward()
    step()
    opt.zero_grad()
    opt2.zero_grad()
    print("focal", loss.item())
