# visemenet with proper input shapes, propainter SparseWindowAttention, and where sizes get specialised
# (symbolic_shapes "guard added" records) for ntsnet_cub / propainter_rfc.
import sys, types, warnings, logging, re
import torch, torch.nn as nn
from util import breaks
warnings.simplefilter("ignore")
class DeformConv2d(nn.Conv2d):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias)
    def forward(self, input, offset, mask=None):
        return super().forward(input) + 0 * offset.mean() + (0 if mask is None else 0 * mask.mean())
tv = types.ModuleType("torchvision"); tv.ops = types.ModuleType("torchvision.ops"); tv.ops.DeformConv2d = DeformConv2d
sys.modules["torchvision"] = tv; sys.modules["torchvision.ops"] = tv.ops
torch.manual_seed(0)
from pytorchcv.models.visemenet import visemenet20
from pytorchcv.models.propainter import SparseWindowAttention
from pytorchcv.models.ntsnet_cub import ntsnet_cub
from pytorchcv.models.propainter_rfc import propainter_rfc
spec = []
class _S(logging.Handler):
    def emit(self, r):
        m = r.getMessage()
        if "guard added" in m or "set_replacement" in m or "specializ" in m:
            spec.append(m)
torch._logging.set_logs(dynamic=logging.INFO, graph_breaks=True, recompiles=True)
import util; util._hook()
def spec_hook():
    lg = logging.getLogger("torch.fx.experimental.symbolic_shapes"); lg.addHandler(_S())
def show_spec():
    for m in spec:
        locs = re.findall(r"# (pytorchcv/\S+:\d+)", m) or re.findall(r"(pytorchcv/models/\S+\.py:\d+)", m)
        print("  SPECIALISE", m.split("#")[0][:150].strip(), "|", locs[:2])
    del spec[:]
def M(name, net, calls):
    print("==", name); net.eval()
    with torch.no_grad():
        breaks(net, calls=calls)
    show_spec()
spec_hook()
M("visemenet20 eval batch 8,9,10", visemenet20(), [(torch.randn(b, 8, 195), torch.randn(b, 76)) for b in (8, 9, 10)])
M("SparseWindowAttention (propainter) t=3", SparseWindowAttention(dim=64, num_heads=4, window_size=(5, 9), pool_size=(4, 4)),
  [(torch.randn(1, 3, 10, 18, 64), (torch.rand(1, 3, 10, 18) > 0.5).float())])
M("ntsnet_cub eval batch 1,2,3", ntsnet_cub(), [(torch.randn(b, 3, 448, 448),) for b in (1, 2, 3)])
M("propainter_rfc eval time 3,4,5", propainter_rfc(), [(torch.randn(1, t, 2, 64, 64), torch.ones(1, t, 1, 64, 64)) for t in (3, 4, 5)])
