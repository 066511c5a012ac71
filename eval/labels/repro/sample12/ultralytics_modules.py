"""ultralytics SAM PositionEmbeddingSine / PromptEncoder, YOLOE LRPCHead, SAM3 copy(captions) under torch.compile (backend=eager)."""
import os, sys; sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _ul  # noqa: F401  (stubs for ultralytics' uninstalled deps)
from _util import breaks
import copy as _copy
import torch, torch.nn as nn
from ultralytics.models.sam.modules.blocks import PositionEmbeddingSine
from ultralytics.models.sam.modules.encoders import PromptEncoder
from ultralytics.nn.modules.head import LRPCHead

torch.manual_seed(0)
print("== PositionEmbeddingSine, four spatial sizes (each twice)")
pe = PositionEmbeddingSine(num_pos_feats=32)
breaks(pe, None, calls=[(torch.randn(1, 8, s, s),) for s in (16, 16, 24, 24, 32, 32, 40, 40)])
print("== PositionEmbeddingSine, same size 3 times")
pe = PositionEmbeddingSine(num_pos_feats=32)
breaks(pe, None, calls=[(torch.randn(1, 8, 16, 16),)] * 3)

print("== PromptEncoder points")
penc = PromptEncoder(embed_dim=32, image_embedding_size=(16, 16), input_image_size=(256, 256), mask_in_chans=8)
pts = torch.rand(2, 3, 2) * 256
lab = torch.tensor([[1, 0, 1], [1, 1, 0]])
breaks(lambda p, l: penc(points=(p, l), boxes=None, masks=None), pts, lab)

print("== LRPCHead enabled, conf=0.001 (prompt-free YOLOE inference)")
vocab = nn.Conv2d(16, 10, 1); pf = nn.Conv2d(16, 1, 1); loc = nn.Conv2d(16, 64, 1)
h = LRPCHead(vocab, pf, loc, enabled=True)
f = torch.randn(2, 16, 8, 8)
breaks(lambda a, b: h(a, b, 0.001), f, f)

print("== copy.copy of a list of caption strings (vl_combiner.forward_text line 141)")
def ft(x, captions):
    text_to_encode = _copy.copy(captions)
    text_to_encode += ["extra"]
    return x * len(text_to_encode)
breaks(ft, torch.randn(3), ["a cat", "a dog"])
