"""torchdiffeq: a neural ODE fitted to a trajectory, compiled training step around odeint (dopri5)."""
import torch
import torch.nn as nn
from torchdiffeq import odeint


class ODEFunc(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 2))

    def forward(self, t, y):
        return self.net(y ** 3)


torch.manual_seed(0)
func = ODEFunc()
optimizer = torch.optim.RMSprop(func.parameters(), lr=1e-3)
t = torch.linspace(0.0, 0.5, 5)
true_A = torch.tensor([[-0.1, 2.0], [-2.0, -0.1]])
with torch.no_grad():
    true_y = odeint(lambda t, y: torch.mm(y ** 3, true_A), torch.tensor([[2.0, 0.0]]), t, method="dopri5")


def train_step(batch_y0, batch_y):
    optimizer.zero_grad()
    pred_y = odeint(func, batch_y0, t)
    loss = torch.mean(torch.abs(pred_y - batch_y))
    loss.backward()
    optimizer.step()
    return loss


train_step = torch.compile(train_step)
for _ in range(2):
    print("loss", train_step(true_y[0], true_y).item())
