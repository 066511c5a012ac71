"""gpytorch.utils.interpolation.Interpolation.interpolate under torch.compile (eager backend):
targets inside the grid (the common path: the boundary checks' `.item()` and the boundary
`nonzero`s run, their raise branches do not) and targets outside it (a raise branch is taken);
and a size that follows the data over three calls (`range(num_left)` / `range(num_right)`).
Also lightly's RandomResizedCropAndFlip-with-grid `if torch.rand(1) < self.p` branch."""
import _common
import torch
from gpytorch.utils.interpolation import Interpolation

grid = [torch.linspace(0, 1, 10)]
inside = torch.rand(6, 1) * 0.8 + 0.1
print("interpolate, targets inside the grid")
_common.breaks(lambda t: Interpolation().interpolate(grid, t), inside)
print("interpolate, a target below the grid (the RuntimeError branch)")
_common.breaks(lambda t: Interpolation().interpolate(grid, t), torch.tensor([[-0.5], [0.5]]))
print("interpolate, targets near the edges, three calls (sizes of the boundary sets change)")
edges = [(torch.tensor([[0.01], [0.5]]),), (torch.tensor([[0.01], [0.02], [0.99]]),),
         (torch.tensor([[0.01], [0.02], [0.03], [0.98], [0.99]]),)]
_common.recompiles(lambda t: Interpolation().interpolate(grid, t), edges)

try:
    from lightly.transforms.random_crop_and_flip_with_grid import RandomHorizontalFlipWithLocations

    flip = RandomHorizontalFlipWithLocations(p=0.5)
    print("lightly RandomHorizontalFlipWithLocations.forward")
    _common.breaks(lambda img: flip.forward(img, [0.0, 0.0, 1.0, 1.0]), torch.rand(3, 8, 8))
except Exception as exc:  # noqa: BLE001
    print("lightly flip not built:", type(exc).__name__, str(exc)[:120])
