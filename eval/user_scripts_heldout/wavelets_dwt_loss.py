"""pytorch_wavelets: DWTForward / DWTInverse (README) in a compiled wavelet-domain training step."""
import torch
import torch.nn as nn
from pytorch_wavelets import DWTForward, DWTInverse

torch.manual_seed(0)
xfm = DWTForward(J=2, mode="zero", wave="db3")
ifm = DWTInverse(mode="zero", wave="db3")
net = nn.Conv2d(3, 3, 3, padding=1)
optimizer = torch.optim.SGD(net.parameters(), lr=1e-2)


def train_step(x, target):
    optimizer.zero_grad()
    Yl, Yh = xfm(net(x))
    Tl, Th = xfm(target)
    loss = (Yl - Tl).abs().mean() + sum((a - b).abs().mean() for a, b in zip(Yh, Th))
    loss.backward()
    optimizer.step()
    return loss, ifm((Yl, Yh))


train_step = torch.compile(train_step)
for _ in range(2):
    x = torch.randn(2, 3, 32, 32)
    loss, recon = train_step(x, x.flip(-1))
    print(loss.item(), recon.shape)
