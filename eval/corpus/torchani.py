"""torchani: ANI neural network potentials: AEV featurizers, ANI-1x / ANI-2x architectures
(energies, atomic energies, ensemble QBC factors, forces), a periodic system through the cell
list, a potential with extra xTB repulsion and D3 dispersion terms, and an energy + force training
step as in the training tutorial.

The published models (`torchani.models.ANI1x()`, `ANI2x()`, ...) download their parameter files
when built, so they are left out: the same architectures are assembled here with
`torchani.arch.Assembler` exactly as `models.ANI1x` / `models.ANI2x` do, minus the
`load_state_dict` of the downloaded weights (random weights, smaller ensembles).  The D3
dispersion's C6 table ships inside the package (no download).
Shapes: batches of 2 -> 3 -> 4 molecules of 5 -> 6 -> 7 atoms (H, C, N, O), coordinates in
Angstrom; the periodic box (the cell list takes one system) holds 8 -> 12 -> 16 atoms.  Batches
are not padded with dummy atoms (-1): under torch.compile torchani's `narrow_down` skips dropping
the dummy pairs (`if not torch.compiler.is_compiling() and mask.any()`), and a padded batch then
fails in the compiled run (index -1 out of bounds) while eager works.
"""

from __future__ import annotations

import torch

LIBRARY = "torchani"
DIST = "torchani==2.9.0"

M = (2, 3, 4)
N = (5, 6, 7)
ZNUMS = torch.tensor([1, 6, 7, 8])


def _molecules(shape, elem_idxs=False):
    """(species, coords): atomic numbers (or element indices 0..3 with elem_idxs), no padding."""
    gen = torch.Generator().manual_seed(10 + shape)
    m, n = M[shape], N[shape]
    idx = torch.randint(0, 4, (m, n), generator=gen)
    idx[:, 0] = 1  # a carbon in every molecule
    species = idx if elem_idxs else ZNUMS[idx]
    # atoms on a jittered line, 1.1 A apart: bonded distances, inside the angular cutoff
    base = torch.arange(n, dtype=torch.float32)[:, None] * torch.tensor([1.1, 0.0, 0.0])
    coords = base + 0.3 * torch.randn(m, n, 3, generator=gen)
    return species, coords


def _ani1x(ensemble_size=2, **kw):
    """models.ANI1x's assembly: HCNO, cosine cutoff, 1x AEV and networks, wB97X/6-31G(d) GSAEs."""
    from torchani.arch import Assembler
    from torchani.utils import SYMBOLS_1X

    asm = Assembler(periodic_table_index=True)
    asm.set_symbols(SYMBOLS_1X)
    asm.set_atomic_networks(ctor="ani1x")
    asm.set_global_cutoff_fn("cosine")
    asm.set_aev_computer(angular="ani1x", radial="ani1x", strategy="pyaev")
    asm.set_neighborlist(kw.pop("neighborlist", "all_pairs"))
    asm.set_gsaes_as_self_energies("wb97x-631gd")
    model = asm.assemble(ensemble_size)
    model.requires_grad_(False)
    return model


def _ani2x(ensemble_size=1):
    """models.ANI2x's assembly: HCNOFSCl, 2x AEV and networks."""
    from torchani.arch import Assembler
    from torchani.utils import SYMBOLS_2X

    asm = Assembler(periodic_table_index=True)
    asm.set_symbols(SYMBOLS_2X)
    asm.set_global_cutoff_fn("cosine")
    asm.set_aev_computer(radial="ani2x", angular="ani2x", strategy="pyaev")
    asm.set_atomic_networks(ctor="ani2x")
    asm.set_neighborlist("all_pairs")
    asm.set_gsaes_as_self_energies("wb97x-631gd")
    model = asm.assemble(ensemble_size)
    model.requires_grad_(False)
    return model


def ani1x_energies(shape=0):
    """`model((species, coords)).energies`: a 2-member ANI-1x ensemble's averaged energies."""
    model = _ani1x().eval()
    return model, (_molecules(shape),), {}


def ani1x_atomic_energies(shape=0):
    """`model.atomic_energies(...)`: per-atom energies, each ensemble member apart."""
    model = _ani1x().eval()
    return model.atomic_energies, (_molecules(shape),), {"ensemble_values": True}


def ani1x_energies_qbcs(shape=0):
    """`model.energies_qbcs(...)`: query-by-committee factors for active learning."""
    model = _ani1x(ensemble_size=3).eval()
    return model.energies_qbcs, (_molecules(shape),), {}


def ani2x_energies_and_forces(shape=0):
    """`torchani.grad.energies_and_forces`: energies and -dE/dx forces of an ANI-2x network."""
    from torchani.grad import energies_and_forces

    model = _ani2x().eval()

    def energies_forces(species, coords):
        return energies_and_forces(model, species, coords)

    species, coords = _molecules(shape)
    return energies_forces, (species, coords), {}


def aev_computer_1x(shape=0):
    """AEVComputer.like_1x on element indices: radial and angular atomic environment vectors."""
    from torchani.aev import AEVComputer

    aev = AEVComputer.like_1x().eval()
    return aev, _molecules(shape, elem_idxs=True), {}


def aev_computer_pbc_cell_list(shape=0):
    """AEVComputer.like_2x over a periodic box, neighbors from the pure-PyTorch cell list."""
    from torchani.aev import AEVComputer

    aev = AEVComputer.like_2x(num_species=4, neighborlist="cell_list").eval()
    gen = torch.Generator().manual_seed(20 + shape)
    n = (8, 12, 16)[shape]
    species = torch.randint(0, 4, (1, n), generator=gen)
    coords = torch.rand(1, n, 3, generator=gen) * 12.0
    cell = torch.eye(3) * 12.0
    pbc = torch.tensor([True, True, True])
    return aev, (species, coords), {"cell": cell, "pbc": pbc}


def simple_ani_repulsion_dispersion(shape=0):
    """`arch.simple_ani` with xTB repulsion and D3 dispersion potentials (the neighborlist path)."""
    from torchani.arch import simple_ani

    model = simple_ani(("H", "C", "N", "O"), "wb97x-631gd", radial_shifts=8, angular_shifts=4,
                       sections=4, repulsion=True, dispersion=True)
    model.requires_grad_(False)
    return model.eval(), (_molecules(shape),), {}


def energy_force_train_loss(shape=0):
    """The training tutorial's loss: AEVs -> ANINetworks.like_1x + SelfEnergy; energy MSE scaled
    by sqrt(atoms) plus a force MSE through `forces_for_training` (create_graph=True)."""
    from torchani.aev import AEVComputer
    from torchani.grad import forces_for_training
    from torchani.nn import ANINetworks
    from torchani.sae import SelfEnergy

    class Potential(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.aev_computer = AEVComputer.like_1x()
            self.networks = ANINetworks.like_1x()
            self.self_energy = SelfEnergy(("H", "C", "N", "O"), [-0.5, -37.8, -54.6, -75.0])

        def forward(self, elem_idxs, coords):
            aevs = self.aev_computer(elem_idxs, coords)
            return self.networks(elem_idxs, aevs) + self.self_energy(elem_idxs)

    model = Potential().train()

    def loss_step(elem_idxs, coords, true_energies, true_forces):
        energies = model(elem_idxs, coords)
        forces = forces_for_training(energies, coords)
        num_atoms = (elem_idxs >= 0).sum(dim=1, dtype=energies.dtype)
        energy_loss = ((energies - true_energies) ** 2 / num_atoms.sqrt()).mean()
        force_loss = ((forces - true_forces) ** 2).sum(dim=(1, 2)).div(num_atoms).mean()
        return energy_loss + 0.1 * force_loss

    elem_idxs, coords = _molecules(shape, elem_idxs=True)
    coords.requires_grad_(True)  # as the data pipeline hands them over, for the forces
    true_energies = torch.randn(M[shape]) - 150.0
    true_forces = torch.randn(M[shape], N[shape], 3) * 0.01
    return loss_step, (elem_idxs, coords, true_energies, true_forces), {}


MODELS = {
    "tani_ani1x_energies": ("eval", ani1x_energies),
    "tani_ani1x_atomic_energies": ("eval", ani1x_atomic_energies),
    "tani_ani1x_energies_qbcs": ("eval", ani1x_energies_qbcs),
    "tani_ani2x_energies_and_forces": ("eval", ani2x_energies_and_forces),
    "tani_aev_computer_1x": ("eval", aev_computer_1x),
    "tani_aev_computer_pbc_cell_list": ("eval", aev_computer_pbc_cell_list),
    "tani_simple_ani_repulsion_dispersion": ("eval", simple_ani_repulsion_dispersion),
    "tani_energy_force_train_loss": ("train", energy_force_train_loss),
}
