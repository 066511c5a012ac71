"""schedulefree: AdamWScheduleFree (README usage: optimizer.train()/eval()), compiled training step."""
import schedulefree
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 32), nn.GELU(), nn.Linear(32, 3))
optimizer = schedulefree.AdamWScheduleFree(model.parameters(), lr=1e-3, warmup_steps=2)


def train_step(x, y):
    optimizer.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    return loss


train_step = torch.compile(train_step)
model.train()
optimizer.train()
for _ in range(3):
    x, y = torch.randn(16, 8), torch.randint(0, 3, (16,))
    print("loss", train_step(x, y).item())
model.eval()
optimizer.eval()
with torch.no_grad():
    print(model(torch.randn(4, 8)).argmax(-1))
