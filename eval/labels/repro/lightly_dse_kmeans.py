"""TCL505 lightly/loss/regularizer/dse.py:222 `for cluster_index in range(num_clusters)` (_kmeans) and
:244 `for _ in range(num_clusters - 1)` (_kmeans_plus_plus_init).
num_clusters = min(self.local_clusters / self.global_clusters, num_points): a config value (defaults
3 and 24), not the batch. Both loops also break (data-dependent `if cluster.shape[0] > 0` after a
boolean-mask index at 223-224, `if torch.sum(probabilities) == 0` at 250) inside the loop, so Dynamo
runs _kmeans and _kmeans_plus_plus_init eagerly. Shown on DSERegularizer with its default clusters
over batch 2/3/4/5 and over tokens per image 16/25/36/49, and on _kmeans alone over num_points."""
import _common
import torch
from lightly.loss.regularizer.dse import DSERegularizer

r = torch.randn
dse = DSERegularizer(max_kmeans_iters=2)  # local_clusters=3, global_clusters=24 (defaults)
print("DSERegularizer breaks (batch 2, 16 tokens, dim 8)")
_common.breaks(dse, r(2, 16, 8))
_common.persistent_report(dse, [(r(b, 16, 8),) for b in (2, 3, 4, 5)], "DSERegularizer batch 2/3/4/5:")
_common.persistent_report(dse, [(r(2, n, 8),) for n in (16, 25, 36, 49)], "DSERegularizer tokens 16/25/36/49:")
print("_kmeans(x, 3) alone")
_common.breaks(lambda x: dse._kmeans(x, 3), r(16, 8))
_common.persistent_report(lambda x: dse._kmeans(x, 3), [(r(n, 8),) for n in (16, 25, 36, 49)],
                          "_kmeans(x, 3), num_points 16/25/36/49:")
