import torch, warnings
warnings.filterwarnings("ignore")
torch.set_default_dtype(torch.float64)
import util
from util import breaks, _records
from botorch.models import PairwiseGP
torch.manual_seed(0)
Xp = torch.rand(6, 2); comp = torch.tensor([[0, 1], [2, 3], [4, 5], [1, 2]])
pm = PairwiseGP(Xp, comp)
def upd(d):
    pm._x0 = None
    pm._update(d)
    return d * 1
# capture raw messages
torch._dynamo.reset()
res, out = breaks(upd, Xp)
