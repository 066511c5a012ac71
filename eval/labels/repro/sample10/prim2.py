import torch, warnings, random, numpy as np
from util import breaks, fullgraph_ok
from prim import *
for f in [f_rr,f_np,f_gen,f_threads,f_print]:
    print("==", f.__name__)
    fullgraph_ok(f, torch.randn(3))
