"""auraloss: a tiny 1-D conv denoiser trained on a multi-resolution STFT loss, compiled step."""
import auraloss
import torch
import torch.nn as nn

torch.manual_seed(0)
net = nn.Sequential(nn.Conv1d(1, 8, 9, padding=4), nn.Tanh(), nn.Conv1d(8, 1, 9, padding=4))
criterion = auraloss.freq.MultiResolutionSTFTLoss(fft_sizes=[64, 128], hop_sizes=[16, 32], win_lengths=[64, 128])
opt = torch.optim.Adam(net.parameters(), lr=1e-3)


def train_step(noisy, clean):
    opt.zero_grad()
    loss = criterion(net(noisy), clean)
    loss.backward()
    opt.step()
    return loss


train_step = torch.compile(train_step)
for _ in range(2):
    clean = torch.randn(2, 1, 1024)
    print(train_step(clean + 0.1 * torch.randn_like(clean), clean).item())
