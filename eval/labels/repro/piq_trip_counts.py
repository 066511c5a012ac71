"""TCL505 in piq: StyleLoss.gram_matrix (for i in range(B)) and inception_score (range(subset.shape[0])):
graphs compiled per call over 3 sizes."""
import _common
import torch
from piq.perceptual import StyleLoss
from piq.isc import inception_score

print("gram_matrix over batch 2/3/4")
_common.recompiles(StyleLoss.gram_matrix, [(torch.rand(b, 3, 4, 4),) for b in (2, 3, 4)])
print("inception_score over N 20/30/40")
_common.recompiles(lambda f: inception_score(f, num_splits=2), [(torch.rand(n, 5),) for n in (20, 30, 40)])
