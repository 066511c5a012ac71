"""e3nn: radius_graph (nonzero / boolean mask), SimpleNetwork pooling int(batch.max()),
gate_points_2101.Network pooling, and o3.rand_angles (requires_grad_(False))."""
import _common
import torch
from e3nn import o3
from e3nn.nn.models.gate_points_2101 import radius_graph, Network
from e3nn.nn.models.v2106.gate_points_networks import SimpleNetwork

pos = torch.randn(6, 3)
batch = torch.tensor([0, 0, 0, 1, 1, 1])
print("radius_graph")
_common.breaks(radius_graph, pos, 2.0, batch)

print("SimpleNetwork (pool_nodes=True)")
net = SimpleNetwork("1x0e", "1x0e", max_radius=2.0, num_neighbors=3.0, num_nodes=3.0, mul=4, layers=1, lmax=1)
_common.breaks(net, {"pos": pos, "x": torch.randn(6, 1), "batch": batch})

print("gate_points_2101.Network (reduce_output=True)")
net2 = Network(irreps_in=None, irreps_hidden="4x0e+2x1o", irreps_out="1x0e", irreps_node_attr=None,
               irreps_edge_attr=o3.Irreps.spherical_harmonics(1), layers=1, max_radius=2.0,
               number_of_basis=4, radial_layers=1, radial_neurons=8, num_neighbors=3.0, num_nodes=3.0,
               reduce_output=True)
_common.breaks(net2, {"pos": pos, "batch": batch})


def f(x):
    a, b, c = o3.rand_angles(dtype=x.dtype, device=x.device)
    return x * a + b - c


print("rand_angles (requires_grad default False, as S2Activation calls it)")
_common.breaks(f, torch.randn(3))
