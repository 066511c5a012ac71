# public-API findings (engine 702ca85): torchkbnufft toeplitz helpers, build_numpy_spmatrix, fft_fn
import torch, math, numpy as np
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sample11"))
from util import breaks  # noqa: E402  (sample11's util.py: compiles and records breaks)
import torchkbnufft as tkbn
from torchkbnufft._nufft import toep
from torchkbnufft._nufft.utils import build_numpy_spmatrix, validate_args
from torchkbnufft._nufft.fft import fft_fn
torch.manual_seed(0)
def T(name, fn, calls):
    print("==", name); breaks(fn, calls=calls)
im_size = (16, 16)
def om(K): return (torch.rand(2, K) * 2 - 1) * math.pi
adj_ob = tkbn.KbNufftAdjoint(im_size=tuple(2 * s for s in im_size), grid_size=tuple(2 * s for s in im_size), n_shift=[0, 0])
w = torch.ones(1, 1, 256, dtype=torch.complex64)
T("adjoint_flip_and_concat(1, omega, weights, adj_ob) K=256", toep.adjoint_flip_and_concat, [(1, om(256), w, adj_ob)])
T("reflect_conj_concat(kernel, 2), 3 kernel sizes", toep.reflect_conj_concat,
  [(torch.randn(1, 1, 2 * s, s, dtype=torch.complex64), 2) for s in (16, 20, 24)])
T("hermitify(kernel, 2) (dim is always 2), 3 kernel sizes", toep.hermitify,
  [(torch.randn(1, 1, 2 * s, 2 * s, dtype=torch.complex64), 2) for s in (16, 20, 24)])
T("calc_one_batch_toeplitz_kernel(omega, im_size), K=128,192,256", toep.calc_one_batch_toeplitz_kernel,
  [(om(K), im_size) for K in (128, 192, 256)])
img = torch.randn(1, 1, 32, 32, dtype=torch.complex64)
T("fft_fn(image, 2) (ndim = number of image dims), 3 sizes", fft_fn, [(torch.randn(1, 1, s, s, dtype=torch.complex64), 2) for s in (32, 40, 48)])
args = validate_args(im_size, None, 6, None, 2**10, 2.34, 0.0, torch.float32, torch.device("cpu"))
_, grid_size, numpoints, n_shift, _, order, alpha, _, _ = args
T("build_numpy_spmatrix(omega.numpy(), ...)", build_numpy_spmatrix,
  [(om(64).numpy(), numpoints, im_size, grid_size, n_shift, order, alpha)])
