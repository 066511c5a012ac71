"""TCL505 piq/utils/common.py:106 `channels_last = t.shape[-1] in {1, 2, 3}` (set lookup of the width).
Its only caller, CLIPIQA.forward, calls _validate_input([x], dim_range=(4, 4), data_range=(0., 255.),
check_for_channels_first=True); the call is reproduced in a wrapper (CLIPIQA itself needs CLIP
weights) over 4 image widths. The data_range assert at line 100 breaks inside `for t in tensors`,
so Dynamo runs the whole _validate_input frame eagerly and line 106 is never traced.
Second run (counterfactual, not piq's call): data_range=(0, 0) skips the asserts, so line 106 is traced."""
import _common
import torch
from piq.utils import _validate_input


def clipiqa_check(x):
    _validate_input([x], dim_range=(4, 4), data_range=(0., 255.), check_for_channels_first=True)
    return x.float() / 255.0


def no_data_check(x):
    _validate_input([x], dim_range=(4, 4), data_range=(0., 0.), check_for_channels_first=True)
    return x.float() / 255.0


widths = (8, 12, 16, 20)
print("as CLIPIQA calls it, widths", widths)
_common.breaks(clipiqa_check, torch.rand(1, 3, 8, 8) * 255)
_common.persistent_report(clipiqa_check, [(torch.rand(1, 3, 8, w) * 255,) for w in widths], "CLIPIQA call:")
print("counterfactual: no data_range check (line 106 traced), widths", widths)
_common.persistent_report(no_data_check, [(torch.rand(1, 3, 8, w) * 255,) for w in widths], "no data check:")
