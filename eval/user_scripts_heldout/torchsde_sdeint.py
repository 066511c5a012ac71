"""torchsde: a learned Ito SDE (README example), compiled function that solves it with sdeint."""
import torch
import torchsde

batch_size, state_size, brownian_size = 4, 3, 2
t_size = 5


class SDE(torch.nn.Module):
    noise_type = "general"
    sde_type = "ito"

    def __init__(self):
        super().__init__()
        self.mu = torch.nn.Linear(state_size, state_size)
        self.sigma = torch.nn.Linear(state_size, state_size * brownian_size)

    # Drift
    def f(self, t, y):
        return self.mu(y)  # shape (batch_size, state_size)

    # Diffusion
    def g(self, t, y):
        return self.sigma(y).view(batch_size, state_size, brownian_size)


torch.manual_seed(0)
sde = SDE()
ts = torch.linspace(0, 1, t_size)


@torch.compile
def solve(y0):
    return torchsde.sdeint(sde, y0, ts, method="euler", dt=0.1)


with torch.no_grad():
    for _ in range(2):
        y0 = torch.full((batch_size, state_size), 0.1)
        ys = solve(y0)
        print(ys.shape)  # (t_size, batch_size, state_size)
