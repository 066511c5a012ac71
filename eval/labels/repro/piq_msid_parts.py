"""piq.msid internals called directly under torch.compile (MSID.compute_metric itself raises under
compile: ValueError 'cannot set WRITEABLE flag' at msid.py:37, after a break at msid.py:35)."""
import _common
import numpy as np
from piq.msid import _lanczos_m, _construct_graph_sparse

rng = np.random.RandomState(0)
B = rng.rand(12, 12)
A = B @ B.T
print("_lanczos_m rademacher=True")
_common.breaks(lambda a: _lanczos_m(a, 4, 3, True), A)
print("_lanczos_m rademacher=False")
_common.breaks(lambda a: _lanczos_m(a, 4, 3, False), A)
print("_construct_graph_sparse")
_common.breaks(lambda d: _construct_graph_sparse(d, 3), rng.rand(10, 4))
