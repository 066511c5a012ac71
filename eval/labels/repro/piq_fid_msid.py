"""piq.FID and piq.MSID compute_metric on tiny feature sets: which flagged lines break."""
import sys
import _common
import torch
import piq

x = torch.rand(16, 4)
y = torch.rand(16, 4)
which = sys.argv[1] if len(sys.argv) > 1 else "both"
if which in ("fid", "both"):
    print("FID")
    _common.breaks(piq.FID(), x, y)
if which in ("msid", "both"):
    print("MSID")
    _common.breaks(piq.MSID(), x, y)
