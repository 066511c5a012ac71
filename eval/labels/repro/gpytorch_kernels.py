"""gpytorch kernels' forward under torch.compile (eager backend), and NNVariationalStrategy's
_training_indices_iter counter (the real method bound to a minimal module) over 3 calls."""
import _common
import torch
from torch import nn
import gpytorch
from gpytorch.kernels import CylindricalKernel, RBFKernel, GridInterpolationKernel, RBFKernelGrad, MaternKernel
from gpytorch.kernels.matern52_kernel_grad import Matern52KernelGrad
from gpytorch.kernels.rbf_kernel_gradgrad import RBFKernelGradGrad
from gpytorch.variational.nearest_neighbor_variational_strategy import NNVariationalStrategy

x = torch.rand(5, 2) * 0.5
print("CylindricalKernel.forward")
ck = CylindricalKernel(num_angular_weights=2, radial_base_kernel=RBFKernel())
_common.breaks(lambda a, b: ck.forward(a, b), x, x.clone())
print("GridInterpolationKernel.forward (dynamic grid)")
gk = GridInterpolationKernel(RBFKernel(), grid_size=8, num_dims=2)
_common.breaks(lambda a, b: gk.forward(a, b).to_dense(), x, x.clone())
for cls in (RBFKernelGrad, Matern52KernelGrad, RBFKernelGradGrad):
    k = cls()
    print(cls.__name__, "forward(x, x)")
    _common.breaks(lambda a, b: k.forward(a, b), x, x.clone())
    print(cls.__name__, "forward(x, x, diag=True)")
    _common.breaks(lambda a, b: k.forward(a, b, diag=True), x, x.clone())


class Strat(nn.Module):
    _get_training_indices = NNVariationalStrategy._get_training_indices
    _set_training_iterator = NNVariationalStrategy._set_training_iterator

    def __init__(self):
        super().__init__()
        self.M, self.k, self.training_batch_size = 10, 2, 4
        self.inducing_points = torch.zeros(10, 1)
        self._set_training_iterator()

    def forward(self, y):
        return y[self._get_training_indices()]


s = Strat()
print("NNVariationalStrategy._get_training_indices, 3 calls")
_common.recompiles(s, [(torch.arange(10.0),)] * 3)
