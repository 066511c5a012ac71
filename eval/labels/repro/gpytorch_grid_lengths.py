"""TCL508 gpytorch/kernels/grid_interpolation_kernel.py:163/169/173 (zip over x_mins/x_maxs, read with
.tolist() at 154-155) and TCL505 gpytorch/utils/grid.py:104 (convert_legacy_grid: range(grid.size(-1))).

x is reshaped to (-1, self.num_dims) before x.max(0)[0].tolist(), so x_mins / x_maxs have length
num_dims (the model's input dimension), whatever the number of points; grid.size(-1) is the number
of grid dimensions of a fixed grid buffer (GridInterpolationVariationalStrategy: len(grid_bounds)).
1) GridInterpolationKernel with a dynamic grid (num_dims=2), forward(x, x) over n = 5/7/9/11 points,
   the data range growing each call so that the grid is updated (lines 169 and 173 run) every call.
2) an ApproximateGP with GridInterpolationVariationalStrategy (grid_bounds of 2 dims), model(x)
   over n = 5/7/9/11: interpolate(self.grid, ...) calls convert_legacy_grid on the (8, 2) buffer."""
import _common
import torch
import gpytorch
from gpytorch.kernels import GridInterpolationKernel, RBFKernel

torch.manual_seed(0)
gk = GridInterpolationKernel(RBFKernel(), grid_size=8, num_dims=2)


def kern(x):
    return gk.forward(x, x).to_dense()


print("1) GridInterpolationKernel.forward, dynamic grid")
_common.breaks(kern, torch.rand(5, 2))
gk = GridInterpolationKernel(RBFKernel(), grid_size=8, num_dims=2)
calls = [(torch.rand(n, 2) * s,) for n, s in ((5, 1.0), (7, 2.0), (9, 3.0), (11, 4.0))]
_common.persistent_report(kern, calls, "GridInterpolationKernel n 5/7/9/11 (grid updated each call):",
                          frames_like=("forward",))
print("  grid bounds after the calls (updated each call):", [tuple(round(v, 2) for v in b) for b in gk.grid_bounds])


class GridGP(gpytorch.models.ApproximateGP):
    def __init__(self):
        vd = gpytorch.variational.CholeskyVariationalDistribution(8 ** 2)
        vs = gpytorch.variational.GridInterpolationVariationalStrategy(self, 8, [(0, 1), (0, 1)], vd)
        super().__init__(vs)
        self.mean_module = gpytorch.means.ConstantMean()
        self.covar_module = gpytorch.kernels.RBFKernel()

    def forward(self, x):
        return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))


model = GridGP().eval()
print("2) GridInterpolationVariationalStrategy, grid buffer shape", tuple(model.variational_strategy.grid.shape))


def pred(x):
    return model(x).mean


with torch.no_grad():
    _common.breaks(pred, torch.rand(5, 2))
    _common.persistent_report(pred, [(torch.rand(n, 2),) for n in (5, 7, 9, 11)],
                              "GridInterpolationVariationalStrategy n 5/7/9/11:")
