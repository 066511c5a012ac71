import torch, sys
from util import breaks
torch.manual_seed(0)
which = sys.argv[1:] or ["aug", "blstm", "cape", "v2", "hdemucs"]
from demucs import augment, demucs as dm, hdemucs, htdemucs, transformer
if "aug" in which:
    wav = torch.randn(4, 4, 2, 8000)
    for cls in [augment.Remix, augment.Scale]:
        m = cls().train()
        print("== augment", cls.__name__, "train"); breaks(m, wav)
if "blstm" in which:
    m = dm.BLSTM(16, layers=1, max_steps=200, skip=True).eval()
    print("== BLSTM max_steps=200, T=500,700,900,1100 (recompiles?)")
    calls = [(torch.randn(1, 16, T),) for T in (500, 700, 900, 1100)]
    breaks(m, calls=calls)
    print("unique_graphs", torch._dynamo.utils.counters["stats"]["unique_graphs"])
if "cape" in which:
    def f(T, B):
        return transformer.create_sin_embedding_cape(T, 32, B, mean_normalize=True, augment=True, max_global_shift=0.03, max_local_shift=0.01, max_scale=1.03)
    print("== create_sin_embedding_cape augment=True"); breaks(f, 100, 2)
if "v2" in which:
    m = dm.Demucs(sources=["a", "b", "c", "d"], channels=8, depth=4).eval()
    x = torch.randn(1, 2, m.valid_length(20000))
    print("== Demucs v2 forward"); breaks(m, x)
if "hdemucs" in which:
    m = hdemucs.HDemucs(sources=["a", "b", "c", "d"], channels=8).eval()
    print("== HDemucs forward"); breaks(m, torch.randn(1, 2, 44100 * 2))
if "htdemucs" in which:
    m = htdemucs.HTDemucs(sources=["a", "b", "c", "d"], channels=8, segment=2, t_layers=1, bottom_channels=0).eval()
    print("== HTDemucs forward"); breaks(m, torch.randn(1, 2, 44100 * 2))
if "trim" in which:
    from demucs.utils import center_trim
    def f(a, b):
        return center_trim(a, b) * 2
    print("== center_trim, 3 shapes")
    breaks(f, calls=[(torch.randn(1, 2, n + 7), torch.randn(1, 2, n)) for n in (1000, 1500, 2100)])
    m = dm.Demucs(sources=["a", "b", "c", "d"], channels=8, depth=4, resample=False).eval()
    print("== Demucs v2 forward resample=False")
    breaks(m, calls=[(torch.randn(1, 2, m.valid_length(n)),) for n in (20000, 30000, 40000)])
