"""mambapy: a Mamba backbone (README: Mamba(MambaConfig)) with a linear head, `model.compile()` in a training loop."""
import torch
import torch.nn as nn
from mambapy.mamba import Mamba, MambaConfig


class Regressor(nn.Module):
    def __init__(self, d_model=16):
        super().__init__()
        self.backbone = Mamba(MambaConfig(d_model=d_model, n_layers=2, d_state=8))
        self.head = nn.Linear(d_model, 1)

    def forward(self, x):
        return self.head(self.backbone(x)[:, -1])


torch.manual_seed(0)
model = Regressor()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
model.compile()

for step in range(2):
    B, L, D = 2, 16, 16
    x = torch.randn(B, L, D)
    target = x.sum(dim=(1, 2)).unsqueeze(-1)
    loss = nn.functional.mse_loss(model(x), target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(step, loss.item())
