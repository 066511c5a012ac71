import torch, math, sys
from util import breaks
import torchkbnufft as tkbn
torch.manual_seed(0)
im_size = (32, 32)
nufft = tkbn.KbNufft(im_size=im_size)
adj = tkbn.KbNufftAdjoint(im_size=im_size)
toep = tkbn.ToepNufft()
image = torch.randn(1, 1, *im_size, dtype=torch.complex64)
K = 2048
omega = (torch.rand(2, K) * 2 - 1) * math.pi
omegab = (torch.rand(3, 2, K) * 2 - 1) * math.pi
imageb = torch.randn(3, 1, *im_size, dtype=torch.complex64)
print("threads", torch.get_num_threads())
which = sys.argv[1:] or ["fwd", "adj", "fwdb", "adjb", "toep"]
if "fwd" in which:
    print("== KbNufft forward, single trajectory"); breaks(nufft, image, omega)
if "adj" in which:
    kdata = torch.randn(1, 1, K, dtype=torch.complex64)
    print("== KbNufftAdjoint single trajectory"); breaks(adj, kdata, omega)
if "fwdb" in which:
    print("== KbNufft forward, batched trajectory"); breaks(nufft, imageb, omegab)
if "adjb" in which:
    kdatab = torch.randn(3, 1, K, dtype=torch.complex64)
    print("== KbNufftAdjoint batched"); breaks(adj, kdatab, omegab)
if "toep" in which:
    kern = tkbn.calc_toeplitz_kernel(omega, im_size)
    print("== ToepNufft"); breaks(toep, image, kern)
if "spmat" in which:
    interp_mats = tkbn.calc_tensor_spmatrix(omega, im_size=im_size)
    kdata = torch.randn(1, 1, K, dtype=torch.complex64)
    print("== KbNufftAdjoint sparse matrix"); breaks(adj, kdata, omega, interp_mats)
