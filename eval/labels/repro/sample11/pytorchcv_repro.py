import sys, types, warnings
import torch, torch.nn as nn, torch.nn.functional as F
from util import breaks
warnings.simplefilter("ignore")
# torchvision has no build for torch 2.13: give pytorchcv's propainter a DeformConv2d stand-in
# (plain conv that accepts offset/mask; the real op is a traceable custom op, so no break either way).
class DeformConv2d(nn.Conv2d):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias)
    def forward(self, input, offset, mask=None):
        return super().forward(input) + 0 * offset.mean() + (0 if mask is None else 0 * mask.mean())
tv = types.ModuleType("torchvision"); tv.ops = types.ModuleType("torchvision.ops"); tv.ops.DeformConv2d = DeformConv2d
sys.modules["torchvision"] = tv; sys.modules["torchvision.ops"] = tv.ops
torch.manual_seed(0)
from pytorchcv.models.simplepose_coco import simplepose_resnet18_coco
from pytorchcv.models.fractalnet_cifar import fractalnet_cifar10
from pytorchcv.models.resdropresnet_cifar import resdropresnet20_cifar10
from pytorchcv.models.ntsnet_cub import ntsnet_cub
from pytorchcv.models.superpointnet import superpointnet
from pytorchcv.models.visemenet import visemenet20
from pytorchcv.models.propainter_rfc import propainter_rfc
from pytorchcv.models.propainter_ip import propainter_ip
from pytorchcv.models.propainter import propainter

def M(name, net, calls, train=False):
    print("==", name); net.train(train)
    with torch.set_grad_enabled(train):
        breaks(net, calls=calls)

M("simplepose_resnet18_coco (heatmap max det)", simplepose_resnet18_coco(return_heatmap=False), [(torch.randn(1, 3, 256, 192),)])
M("fractalnet_cifar10 train", fractalnet_cifar10(), [(torch.randn(4, 3, 32, 32),)], train=True)
M("resdropresnet20_cifar10 train", resdropresnet20_cifar10(), [(torch.randn(4, 3, 32, 32),)], train=True)
M("superpointnet eval", superpointnet(), [(torch.randn(1, 1, 64, 64),)])
M("visemenet20 eval batch 8,9,10", visemenet20(), [(torch.randn(b, 19, 39), torch.randn(b, 1)) for b in (8, 9, 10)])
M("ntsnet_cub eval batch 1,2,3", ntsnet_cub(), [(torch.randn(b, 3, 448, 448),) for b in (1, 2, 3)])
M("propainter_rfc eval time 3,4,5", propainter_rfc(), [(torch.randn(1, t, 2, 64, 64), torch.ones(1, t, 1, 64, 64)) for t in (3, 4, 5)])
M("propainter_ip eval time 3,4,5", propainter_ip(), [(torch.rand(t, 3, 64, 64), (torch.rand(t, 1, 64, 64) > 0.5).float(), torch.randn(t - 1, 4, 64, 64)) for t in (3, 4, 5)])
