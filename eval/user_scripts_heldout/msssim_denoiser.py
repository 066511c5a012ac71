"""pytorch-msssim: a conv denoiser trained on an SSIM module loss (1 - SSIM), compiled training step."""
import torch
import torch.nn as nn
from pytorch_msssim import SSIM

torch.manual_seed(0)
net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 3, 3, padding=1), nn.Sigmoid())
ssim_module = SSIM(data_range=1, size_average=True, channel=3)
optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)


def train_step(noisy, clean):
    optimizer.zero_grad()
    ssim_loss = 1 - ssim_module(net(noisy), clean)
    ssim_loss.backward()
    optimizer.step()
    return ssim_loss


train_step = torch.compile(train_step)
for _ in range(2):
    clean = torch.rand(2, 3, 32, 32)
    noisy = (clean + 0.1 * torch.randn_like(clean)).clamp(0, 1)
    print("1 - ssim", train_step(noisy, clean).item())
