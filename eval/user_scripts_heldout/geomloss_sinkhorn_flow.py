"""geomloss: a Wasserstein gradient flow of a point cloud with SamplesLoss("sinkhorn"), compiled loss+grad."""
import torch
from geomloss import SamplesLoss

torch.manual_seed(0)
loss = SamplesLoss(loss="sinkhorn", p=2, blur=0.05, backend="tensorized")
y = torch.randn(40, 2) + 2.0


def flow_step(x, lr=0.5):
    L = loss(x, y)
    [g] = torch.autograd.grad(L, [x])
    return L, x - lr * len(x) * g


flow_step = torch.compile(flow_step)
x = torch.randn(30, 2).requires_grad_()
for _ in range(2):
    L, x_new = flow_step(x)
    x = x_new.detach().requires_grad_()
    print("sinkhorn", L.item())
