# public-API findings (engine 702ca85): denoising_diffusion_pytorch convert_image_to_fn and XMWrapper.forward
import torch, torch.nn as nn
from util import stub, breaks
stub("torchvision", "accelerate", "pytorch_fid")  # Trainer / FID code only (see README)
from PIL import Image
import numpy as np
from denoising_diffusion_pytorch.denoising_diffusion_pytorch import convert_image_to_fn
from denoising_diffusion_pytorch.xm import XMWrapper
def T(name, fn, calls):
    print("==", name); breaks(fn, calls=calls)
img = Image.fromarray((np.random.rand(8, 8, 3) * 255).astype("uint8"))
T("convert_image_to_fn RGB->L on a PIL image (as the dataset transform calls it)", convert_image_to_fn, [("L", img), ("RGB", img)])
class Flow(nn.Module):
    def __init__(self): super().__init__(); self.net = nn.Linear(4, 4)
    def random_times(self, b): return torch.rand(b)
    def forward(self, x, times=None, loss_reduction='mean'):
        l = ((self.net(x) - x) ** 2).mean(-1) * times
        return l if loss_reduction == 'none' else l.mean()
xm = XMWrapper(Flow(), candidates=3, max_batch_size=4)
T("XMWrapper.forward batch 5", xm, [(torch.randn(5, 4),)])
