import torch, warnings
warnings.filterwarnings("ignore")
torch.set_default_dtype(torch.float64)
from util import breaks
from botorch.test_functions.synthetic import TrajectoryPlanning
torch.manual_seed(0)
tp = TrajectoryPlanning()
X = tp.bounds[0] + (tp.bounds[1] - tp.bounds[0]) * torch.rand(2, tp.dim)
print("eager ok", tp(X).shape)
print("== TrajectoryPlanning._build_waypoints compiled (one param vector)")
breaks(tp._build_waypoints, X[0])
