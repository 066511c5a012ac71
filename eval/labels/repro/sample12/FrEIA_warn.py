"""FrEIA GraphINN / ReversibleGraphNet forward under torch.compile (backend=eager)."""
import os, sys; sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _util import breaks
import torch, torch.nn as nn
import FrEIA.framework as Ff, FrEIA.modules as Fm

def subnet(ci, co): return nn.Sequential(nn.Linear(ci, 16), nn.ReLU(), nn.Linear(16, co))
def nodes():
    n0 = Ff.InputNode(4, name="in")
    n1 = Ff.Node(n0, Fm.AllInOneBlock, {"subnet_constructor": subnet}, name="c1")
    n2 = Ff.OutputNode(n1, name="out")
    return [n0, n1, n2]
x = torch.randn(8, 4)
g = Ff.GraphINN(nodes())
print("== GraphINN(x)  (positional, normal)")
breaks(g, x)
print("== GraphINN(x=x)  (deprecated keyword)")
breaks(lambda t: g(x=t), x)
print("== ReversibleGraphNet(x)")
r = Ff.ReversibleGraphNet(nodes())
breaks(r, x)
