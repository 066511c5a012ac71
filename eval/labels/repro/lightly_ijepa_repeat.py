"""TCL505 lightly/models/utils.py:1534 `for i in range(N)` in repeat_interleave_batch(x, B, repeat).
Its caller IJEPAPredictorTIMM.forward passes pos_embs = apply_masks(pos_embed.repeat(B, 1, 1), masks)
of length B * len(masks), so N = len(x) // B = len(masks): the number of target masks (a config
value, 4 in I-JEPA), not the batch. Over batch 2/3/4/5 (1 context mask, 4 target masks) the
trip count stays 4 and nothing recompiles persistently; the batch stays symbolic."""
import _common
import torch
from lightly.models.modules.ijepa_timm import IJEPAPredictorTIMM

torch.manual_seed(0)
pred = IJEPAPredictorTIMM(num_patches=16, depth=1, mlp_dim=16, predictor_embed_dim=16, num_heads=2).eval()


def inputs(B, n_ctx=6, n_pred=3, n_masks=4):
    masks_x = [torch.stack([torch.randperm(16)[:n_ctx] for _ in range(B)])]
    masks = [torch.stack([torch.randperm(16)[:n_pred] for _ in range(B)]) for _ in range(n_masks)]
    return (torch.randn(B, n_ctx, 16), masks_x, masks)


with torch.no_grad():
    print("eager output shapes:", [tuple(pred(*inputs(b)).shape) for b in (2, 3)])
    _common.breaks(pred, *inputs(2))
    _common.persistent_report(pred, [inputs(b) for b in (2, 3, 4, 5)], "IJEPAPredictorTIMM batch 2/3/4/5:")
