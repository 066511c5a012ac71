import sys, types, torch, torch.nn as nn
from util import stub, breaks
stub("torchvision", "accelerate", "pytorch_fid")  # only used by the Trainer classes (data loading / multi-GPU), never by the models
torch.manual_seed(0)
import denoising_diffusion_pytorch.denoising_diffusion_pytorch as ddp
import denoising_diffusion_pytorch.denoising_diffusion_pytorch_1d as ddp1
import denoising_diffusion_pytorch.elucidated_diffusion as ed
import denoising_diffusion_pytorch.guided_diffusion as gd
import denoising_diffusion_pytorch.repaint as rp
import denoising_diffusion_pytorch.classifier_free_guidance as cfg
from denoising_diffusion_pytorch.xm import XMWrapper
img = torch.rand(2, 3, 16, 16)
def T(name, fn, calls):
    print("=="); print("==", name); breaks(fn, calls=calls)
T("GaussianDiffusion self_condition + immiscible (training loss)",
  ddp.GaussianDiffusion(ddp.Unet(dim=8, dim_mults=(1, 2), self_condition=True, flash_attn=False), image_size=16, timesteps=10, immiscible=True), [(img,)])
T("GaussianDiffusion1D self_condition",
  ddp1.GaussianDiffusion1D(ddp1.Unet1D(dim=8, dim_mults=(1, 2), channels=3, self_condition=True), seq_length=32, timesteps=10), [(torch.rand(2, 3, 32),)])
T("ElucidatedDiffusion self_condition (training loss)",
  ed.ElucidatedDiffusion(ddp.Unet(dim=8, dim_mults=(1, 2), self_condition=True, learned_sinusoidal_cond=True), image_size=16, num_sample_steps=4), [(img,)])
edm = ed.ElucidatedDiffusion(ddp.Unet(dim=8, dim_mults=(1, 2), learned_sinusoidal_cond=True), image_size=16, num_sample_steps=3)
T("ElucidatedDiffusion.sample", lambda: edm.sample(batch_size=2), [()])
T("guided_diffusion GaussianDiffusion self_condition",
  gd.GaussianDiffusion(gd.Unet(dim=8, dim_mults=(1, 2), self_condition=True), image_size=16, timesteps=10), [(img,)])
T("repaint GaussianDiffusion self_condition",
  rp.GaussianDiffusion(rp.Unet(dim=8, dim_mults=(1, 2), self_condition=True), image_size=16, timesteps=10), [(img,)])
cu = cfg.Unet(dim=8, dim_mults=(1, 2), num_classes=4, cond_drop_prob=0.5)
cgd = cfg.GaussianDiffusion(cu, image_size=16, timesteps=10)
T("classifier_free_guidance GaussianDiffusion (training, classes kw)", lambda x, c: cgd(x, classes=c), [(img, torch.randint(0, 4, (2,)))])
class Flow(nn.Module):
    def random_times(self, b): return torch.rand(b)
    def forward(self, x, times=None, loss_reduction="mean"):
        times = torch.rand(x.shape[0]) if times is None else times
        l = (x * times.view(-1, 1)).pow(2).mean(-1)
        return l.mean() if loss_reduction == "mean" else l
T("XMWrapper candidates=1", XMWrapper(Flow(), candidates=1), [(torch.randn(4, 5),)])
T("XMWrapper candidates=3", XMWrapper(Flow(), candidates=3, max_batch_size=4), [(torch.randn(4, 5),)])
