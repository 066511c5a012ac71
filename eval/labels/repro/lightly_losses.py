"""lightly losses/modules under torch.compile (eager backend): break sites, and graphs compiled per
call over 3 batch sizes for the TCL505/TCL506 findings."""
import sys
import _common
import torch
from torch import nn
from lightly.loss import DINOLoss, KoLeoLoss, MACLLoss, SwaVLoss
from lightly.loss.frossl_loss import FroSSLLoss
from lightly.loss.regularizer.co2 import CO2Regularizer
from lightly.loss.regularizer.dse import DSERegularizer
from lightly.loss.dense_relational_utils import _reduce_per_image
from lightly.models.modules.memory_bank import MemoryBankModule
from lightly.models.modules.masked_vision_transformer_timm import _checkpoint_seq
from lightly.utils.lars import LARS

r = torch.randn
what = sys.argv[1:] or ["all"]


def want(k):
    return "all" in what or k in what


if want("breaks"):
    print("_reduce_per_image"); _common.breaks(lambda l, v, ref: _reduce_per_image(l, v, ref), r(4), torch.tensor([True, False, True, True]), r(3))
    print("FroSSLLoss"); _common.breaks(FroSSLLoss(), [r(8, 4), r(8, 4)])
    print("MACLLoss"); _common.breaks(MACLLoss(), r(8, 4), r(8, 4))
    print("CO2Regularizer"); _common.breaks(CO2Regularizer(), r(8, 4), r(8, 4))
    print("DSERegularizer"); _common.breaks(DSERegularizer(global_clusters=3, local_clusters=2, max_kmeans_iters=3), r(2, 6, 4))
    print("MemoryBankModule update=True"); mb = MemoryBankModule(size=(16, 4)); _common.breaks(lambda o: mb(o, update=True), r(4, 4))
    blocks = (nn.Linear(4, 4),)
    print("_checkpoint_seq tokens without grad"); _common.breaks(lambda t: _checkpoint_seq(blocks, t) * 2, r(2, 3, 4))
    p = nn.Parameter(r(4)); p.grad = r(4); opt = LARS([p], lr=0.1, weight_decay=1e-4)
    print("LARS.step"); _common.breaks(opt.step)
if want("recompiles"):
    print("DINOLoss over batch 4/6/8 (2 teacher, 4 student views)")
    dino = DINOLoss(output_dim=8, warmup_teacher_temp_epochs=0)
    _common.recompiles(dino, [([r(b, 8) for _ in range(2)], [r(b, 8) for _ in range(4)]) for b in (4, 6, 8)])
    print("KoLeoLoss over batch 4/6/8")
    _common.recompiles(KoLeoLoss(), [(r(b, 8),) for b in (4, 6, 8)])
    print("SwaVLoss over batch 4/6/8 (2 high-res, 2 low-res crops)")
    _common.recompiles(SwaVLoss(), [([r(b, 5) for _ in range(2)], [r(b, 5) for _ in range(2)]) for b in (4, 6, 8)])
    print("DSERegularizer over batch 2/3/4")
    dse = DSERegularizer(global_clusters=3, local_clusters=2, max_kmeans_iters=3)
    _common.recompiles(dse, [(r(b, 6, 4),) for b in (2, 3, 4)])
