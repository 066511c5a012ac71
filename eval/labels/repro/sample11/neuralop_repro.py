import warnings, torch
from util import breaks

from neuralop.models import FNO, UNO, GINO, FNOGNO
from neuralop.models.local_no import LocalNO
from neuralop.layers.discrete_continuous_convolution import DiscreteContinuousConv2d, DiscreteContinuousConvTranspose2d
from neuralop.layers.segment_csr import segment_csr
warnings.simplefilter("always")
torch.manual_seed(0)

def T(name, model, calls, kw=None):
    print("==", name)
    breaks(lambda *a, **k: model(*a, **k), calls=calls, **(kw or {}))

# Trainer-style call: model(**sample), sample holds 'x' and 'y'
x = torch.randn(2, 1, 16, 16); y = torch.randn(2, 1, 16, 16)
fno = FNO(n_modes=(8, 8), in_channels=1, out_channels=1, hidden_channels=16, n_layers=2)
T("FNO model(**sample)", fno, [()], dict(x=x, y=y))
T("FNO model(x)", fno, [(x,)])
uno = UNO(in_channels=1, out_channels=1, hidden_channels=32, n_layers=2, uno_out_channels=[32, 32], uno_n_modes=[[8, 8], [8, 8]], uno_scalings=[[1, 1], [1, 1]], channel_mlp_skip="linear")
T("UNO model(**sample)", uno, [()], dict(x=x, y=y))
lno = LocalNO(n_modes=(8, 8), in_channels=1, out_channels=1, hidden_channels=16, default_in_shape=(16, 16), n_layers=2)
T("LocalNO model(**sample)", lno, [()], dict(x=x, y=y))

# GINO / FNOGNO, 2-D, without torch_scatter / open3d (neither installed: the defaults fall back)
n_in, n_out = 200, 150
g = torch.linspace(0, 1, 8); lat = torch.stack(torch.meshgrid(g, g, indexing="ij"), -1)
gino = GINO(in_channels=1, out_channels=1, gno_coord_dim=2, in_gno_radius=0.2, out_gno_radius=0.2, fno_n_modes=(4, 4), fno_hidden_channels=16, fno_n_layers=2,
            gno_use_open3d=False, in_gno_channel_mlp_hidden_layers=[16], out_gno_channel_mlp_hidden_layers=[16], gno_embed_channels=8)
T("GINO model(**sample)", gino, [()], dict(input_geom=torch.rand(1, n_in, 2), latent_queries=lat[None], output_queries=torch.rand(1, n_out, 2),
                                           x=torch.randn(1, n_in, 1), y=torch.randn(1, n_out, 1)))
fnogno = FNOGNO(in_channels=1, out_channels=1, gno_coord_dim=2, fno_n_modes=(4, 4), fno_hidden_channels=16, fno_n_layers=2, gno_radius=0.2,
                gno_use_open3d=False, gno_channel_mlp_hidden_layers=[16], gno_embed_channels=8)
T("FNOGNO model(**sample)", fnogno, [()], dict(in_p=lat, out_p=torch.rand(n_out, 2), f=torch.randn(8, 8, 1), y=torch.randn(1, n_out, 1)))

# DISCO convolutions as layers
gin = torch.rand(2, 100); gout = torch.rand(2, 60)
dc = DiscreteContinuousConv2d(2, 4, gin, gout, kernel_shape=[2, 4], radius_cutoff=0.3, quadrature_weights=torch.full((100,), 0.01))
T("DiscreteContinuousConv2d", dc, [(torch.randn(1, 2, 100),)])
dct = DiscreteContinuousConvTranspose2d(2, 4, gout, gin, kernel_shape=[2, 4], radius_cutoff=0.3, quadrature_weights=torch.full((60,), 1 / 60))
T("DiscreteContinuousConvTranspose2d", dct, [(torch.randn(1, 2, 60),)])

# segment_csr (the naive path GNO uses without torch_scatter), several output sizes
def csr(n):
    counts = torch.randint(1, 4, (n,)); indptr = torch.cat([torch.zeros(1, dtype=torch.long), counts.cumsum(0)])
    return torch.randn(int(indptr[-1]), 3), indptr
print("== segment_csr unbatched, n_out 5,6,7")
breaks(segment_csr, calls=[csr(n) for n in (5, 6, 7)], reduction="mean", use_scatter=True)
