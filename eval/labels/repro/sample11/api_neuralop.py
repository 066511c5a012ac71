# public-API findings (engine 702ca85): neuralop DictTransform.inverse_transform, CODALayer.compute_attention,
# SHT.sht (via SphericalConv), MSELoss / PointwiseQuantileLoss __call__, PoissonInteriorLoss.autograd
import warnings, torch
from util import breaks
warnings.simplefilter("always")
torch.manual_seed(0)
from neuralop.data.transforms.base_transforms import DictTransform
from neuralop.data.transforms.normalizers import UnitGaussianNormalizer
from neuralop.layers.coda_layer import CODALayer
from neuralop.layers.spherical_convolution import SphericalConv
from neuralop.losses.data_losses import MSELoss, PointwiseQuantileLoss
from neuralop.losses.equation_losses import PoissonInteriorLoss
def T(name, fn, calls, kw=None):
    print("==", name); breaks(fn, calls=calls, **(kw or {}))
n1 = UnitGaussianNormalizer(mean=torch.zeros(1, 1, 1), std=torch.ones(1, 1, 1))
n2 = UnitGaussianNormalizer(mean=torch.zeros(1, 1, 1), std=torch.ones(1, 1, 1))
dt = DictTransform({"a": n1, "b": n2}, {"a": (slice(None), slice(0, 1)), "b": (slice(None), slice(1, 2))})
# DictTransform subclasses nn.Module without calling its __init__: compiling the bound method itself fails inside
# Dynamo (no _parameters); compiled through a caller (as a postprocessing step would be) it is traced
T("DictTransform.inverse_transform (bound method)", dt.inverse_transform, [(torch.randn(2, 2, 8, 8),)])
T("DictTransform.inverse_transform via a caller", lambda x: dt.inverse_transform(x), [(torch.randn(2, 2, 8, 8),)])
coda = CODALayer(n_modes=[4, 4], n_heads=1, token_codimension=2).eval()
T("CODALayer forward at resolutions 16,20,24,28", coda, [(torch.randn(1, 4, r, r),) for r in (16, 20, 24, 28)])
sc = SphericalConv(4, 4, n_modes=(8, 8)).eval()
T("SphericalConv forward at resolutions 16x32, 20x40, 24x48, 28x56", sc, [(torch.randn(1, 4, r, 2 * r),) for r in (16, 20, 24, 28)])
# SHT cache already filled eagerly for each resolution, then compiled:
sc2 = SphericalConv(4, 4, n_modes=(8, 8)).eval()
for r in (16, 20, 24, 28): sc2(torch.randn(1, 4, r, 2 * r))
T("SphericalConv forward, SHT cache prefilled, resolutions 16..28", sc2, [(torch.randn(1, 4, r, 2 * r),) for r in (16, 20, 24, 28)])
yp = torch.randn(2, 1, 8, 8); y = torch.randn(2, 1, 8, 8); x = torch.randn(2, 1, 8, 8)
T("MSELoss()(out, **sample) (Trainer style, sample has x and y)", lambda out, **s: MSELoss()(out, **s), [(yp,)], dict(x=x, y=y))
T("PointwiseQuantileLoss(alpha)(out, **sample)", lambda out, **s: PointwiseQuantileLoss(alpha=0.1)(out, **s), [(yp.abs(),)], dict(x=x, y=y))
lin = torch.nn.Linear(2, 1)
def model_on(q):  # u depends on the query points, as GINO's output does
    return torch.tanh(lin(q)) * q.sum(-1, keepdim=True)
loss = PoissonInteriorLoss()
def dict_case(qd, f):
    q = {"domain": qd.requires_grad_(True)}
    u = model_on(q["domain"])
    return loss.autograd(u, q, f, num_boundary=0)
def tensor_case(qt, f):
    qt = qt.requires_grad_(True)
    u = model_on(qt)
    return loss.autograd(u, qt, f, num_boundary=4)
T("PoissonInteriorLoss.autograd, dict output_queries", dict_case, [(torch.rand(1, 32, 2), torch.randn(32))])
T("PoissonInteriorLoss.autograd, tensor output_queries", tensor_case, [(torch.rand(1, 36, 2), torch.randn(32))])
