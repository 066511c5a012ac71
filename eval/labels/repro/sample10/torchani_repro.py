import torch, sys
from util import breaks
import torchani
from torchani.arch import Assembler
from torchani import models, utils, grad as tgrad
torch.manual_seed(0)
which = sys.argv[1:] or ["energy", "forces", "pbc", "cell", "infer", "shared", "nop", "utils"]

def build(neighborlist="all_pairs", pti=True, container=None, ens=1):
    asm = Assembler(periodic_table_index=pti)
    asm.set_symbols(models.SYMBOLS_2X)
    asm.set_global_cutoff_fn("cosine")
    asm.set_aev_computer(radial="ani2x", angular="ani2x", strategy="pyaev")
    if container is None:
        asm.set_atomic_networks(ctor="ani2x")
    else:
        asm.set_atomic_networks(cls=container, ctor="default")
    asm.set_neighborlist(neighborlist)
    asm.set_gsaes_as_self_energies("wb97x-631gd")
    m = asm.assemble(ens)
    m.requires_grad_(False)
    return m

# methane-ish + water, atomic numbers
species = torch.tensor([[6, 1, 1, 1, 1, 8, 1, 1]])
coords = torch.randn(1, 8, 3) * 1.2
def energy(model, s, c, cell=None, pbc=None):
    return model((s, c), cell=cell, pbc=pbc).energies

if "energy" in which:
    m = build()
    print("== ANI2x-like energies (all_pairs)"); breaks(energy, m, species, coords)
if "forces" in which:
    m = build()
    def ef(s, c):
        c = c.clone().requires_grad_(True)
        e = m((s, c)).energies
        return tgrad.forces(e, c)
    print("== forces via torchani.grad.forces"); breaks(ef, species, coords)
    def ef2(s, c):
        return tgrad.energies_and_forces(m, s, c)
    print("== torchani.grad.energies_and_forces"); breaks(ef2, species, coords)
if "pbc" in which:
    m = build()
    cell = torch.eye(3) * 6.0
    pbc = torch.tensor([True, True, True])
    print("== energies all_pairs with pbc"); breaks(energy, m, species, coords.abs() % 6, cell, pbc)
if "cell" in which:
    m = build("cell_list")
    cell = torch.eye(3) * 12.0
    pbc = torch.tensor([True, True, True])
    print("== energies cell_list with pbc"); breaks(energy, m, species, coords.abs() % 12, cell, pbc)
    m = build("verlet_cell_list")
    print("== energies verlet_cell_list with pbc"); breaks(energy, m, species, coords.abs() % 12, cell, pbc)
if "infer" in which:
    m = build(ens=2).to_infer_model(use_mnp=False)
    print("== infer model (BmmEnsemble)"); breaks(energy, m, species, coords)
if "shared" in which:
    from torchani import nn as tnn
    for name in ["ANISharedNetworks", "SingleNN"]:
        cls = getattr(tnn, name, None)
        if cls is None: print("no", name); continue
        try:
            m = build(container=cls)
        except Exception as e:
            print("build fail", name, e); continue
        print("== container", name); breaks(energy, m, species, coords)
if "nop" in which:
    m = build(pti=False)
    elem = torch.tensor([[1, 0, 0, 0, 0, 3, 0, 0]])
    print("== periodic_table_index=False (nop path)"); breaks(energy, m, elem, coords)
if "utils" in which:
    conv = utils.AtomicNumbersToMasses() if hasattr(utils, "AtomicNumbersToMasses") else None
    print("== AtomicNumbersToMasses"); breaks(conv, species)
    nc = utils._NumbersConvert({1: "H", 6: "C", 8: "O"})
    print("== _NumbersConvert"); breaks(nc, torch.tensor([6, 1, 1, -1]))
    print("== nonzero_in_chunks"); breaks(lambda t: utils.nonzero_in_chunks(t) + 1, torch.tensor([0, 1, 1, 0]))
if "idxlist" in which:
    from torchani.nn._infer import _make_idx_list
    print("== _make_idx_list (BmmEnsemble/MNP helper) compiled directly")
    breaks(lambda s: [t + 1 for t in _make_idx_list(s, 7, [])], torch.tensor([[1, 0, 0, 0, 0, 3, 0, 0]]))
