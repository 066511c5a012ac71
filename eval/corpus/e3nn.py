"""e3nn: E(3)-equivariant networks.  Tensor products, linear maps, spherical harmonics, gates
and norms on irreps features (number of points / nodes 8 -> 12 -> 16), and the point-cloud
example network e3nn ships (`v2106.SimpleNetwork`, with e3nn's own pure-torch radius graph).
Left out: `nn.S2Activation`, `nn.Dropout` and `gate_points_2101.Network`, whose compiled call fails in
Dynamo's guard building (`len()` of an `o3.Irreps`, which raises NotImplementedError).
"""

from __future__ import annotations

import torch

LIBRARY = "e3nn"
DIST = "e3nn==0.6.0"

_N = (8, 12, 16)  # points / nodes for shapes 0, 1, 2


def _feat(irreps, shape, grad=False):
    from e3nn import o3

    return o3.Irreps(irreps).randn(_N[shape], -1, requires_grad=grad)


def fctp(shape=0):
    from e3nn import o3

    tp = o3.FullyConnectedTensorProduct("2x0e + 1x1o", "1x0e + 1x1o + 1x2e", "3x0e + 2x1o + 1x2e").eval()
    return tp, (_feat("2x0e + 1x1o", shape), _feat("1x0e + 1x1o + 1x2e", shape)), {}


def linear(shape=0):
    from e3nn import o3

    lin = o3.Linear("4x0e + 2x1o + 1x2e", "3x0e + 3x1o + 1x2e").train()
    return lin, (_feat("4x0e + 2x1o + 1x2e", shape, grad=True),), {}


def spherical_harmonics(shape=0):
    from e3nn import o3

    sh = o3.SphericalHarmonics([0, 1, 2, 3], normalize=True, normalization="component").eval()
    return sh, (torch.randn(_N[shape], 3),), {}


def gate(shape=0):
    from e3nn import nn

    g = nn.Gate("4x0e", [torch.relu], "2x0e", [torch.sigmoid], "2x1o").eval()
    return g, (_feat(g.irreps_in, shape),), {}


def batchnorm(shape=0):
    from e3nn import nn

    bn = nn.BatchNorm("4x0e + 2x1o + 1x2e").train()
    return bn, (_feat("4x0e + 2x1o + 1x2e", shape, grad=True),), {}


def norm_activation(shape=0):
    from e3nn import nn

    act = nn.NormActivation("2x1o + 1x2e", torch.sigmoid).eval()
    return act, (_feat("2x1o + 1x2e", shape),), {}


def tensor_square(shape=0):
    from e3nn import o3

    ts = o3.TensorSquare("2x0e + 1x1o", "3x0e + 1x1e + 1x2e").eval()
    return ts, (_feat("2x0e + 1x1o", shape),), {}


def elementwise_tp(shape=0):
    from e3nn import o3

    tp = o3.ElementwiseTensorProduct("2x1o + 1x0e", "2x1e + 1x0e", ["0e", "1e"]).eval()
    return tp, (_feat("2x1o + 1x0e", shape), _feat("2x1e + 1x0e", shape)), {}


def fc_net(shape=0):
    from e3nn import nn

    net = nn.FullyConnectedNet([4, 16, 16, 1], torch.nn.functional.silu).train()
    return net, (torch.randn(_N[shape], 4),), {}


def full_tp(shape=0):
    from e3nn import o3

    tp = o3.FullTensorProduct("2x0e + 1x1o", "1x1o + 1x2e").eval()
    return tp, (_feat("2x0e + 1x1o", shape), _feat("1x1o + 1x2e", shape)), {}


def norm(shape=0):
    from e3nn import o3

    n = o3.Norm("3x0e + 2x1o + 1x2e", squared=False).eval()
    return n, (_feat("3x0e + 2x1o + 1x2e", shape),), {}


def _points(shape, irreps_x=None):
    from e3nn import o3

    n = _N[shape]
    data = {"pos": torch.randn(n, 3), "batch": torch.arange(n) // (n // 2)}  # two clouds
    if irreps_x is not None:
        data["x"] = o3.Irreps(irreps_x).randn(n, -1)
    return data


def simple_network(shape=0):
    from e3nn.nn.models.v2106.gate_points_networks import SimpleNetwork

    net = SimpleNetwork(irreps_in="3x0e + 1x1o", irreps_out="1x0e + 1x1e", max_radius=2.0, num_neighbors=3.0,
                        num_nodes=6.0, mul=8, layers=2, lmax=2).train()
    return net, (_points(shape, "3x0e + 1x1o"),), {}


MODELS = {
    "e3nn_fctp": ("eval", fctp),
    "e3nn_linear": ("train", linear),
    "e3nn_spherical_harmonics": ("eval", spherical_harmonics),
    "e3nn_gate": ("eval", gate),
    "e3nn_batchnorm": ("train", batchnorm),
    "e3nn_norm_activation": ("eval", norm_activation),
    "e3nn_tensor_square": ("eval", tensor_square),
    "e3nn_elementwise_tp": ("eval", elementwise_tp),
    "e3nn_fc_net": ("train", fc_net),
    "e3nn_full_tp": ("eval", full_tp),
    "e3nn_norm": ("eval", norm),
    "e3nn_simple_network": ("train", simple_network),
}
