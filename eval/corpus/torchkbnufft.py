"""torchkbnufft: Kaiser-Bessel non-uniform FFTs for MRI reconstruction: the forward and adjoint
NUFFT (table and sparse-matrix interpolation, multi-coil SENSE, per-batch trajectories, real
inputs), the bare adjoint interpolator, the Toeplitz-embedded normal operator in a CG-SENSE
reconstruction, and a data-consistency loss as an unrolled reconstruction trains it.

Images are 8 x 8 (the NUFFT's im_size is fixed at construction, as in real use); the shapes are
batch 2 -> 3 -> 4 and k-space trajectories of 48 -> 64 -> 80 samples (a radial trajectory of
6 -> 8 -> 10 spokes of 8 points).
"""

from __future__ import annotations

import math

import torch

LIBRARY = "torchkbnufft"
DIST = "torchkbnufft==1.5.2"

IM = (8, 8)
B = (2, 3, 4)
SPOKES = (6, 8, 10)
COILS = 4


def _omega(shape):
    """A radial trajectory in radians / voxel, (2, spokes * 8)."""
    spokes = SPOKES[shape]
    r = torch.linspace(-math.pi, math.pi, 8)
    angles = torch.arange(spokes) * math.pi / spokes
    kx = (r[None, :] * torch.cos(angles)[:, None]).reshape(-1)
    ky = (r[None, :] * torch.sin(angles)[:, None]).reshape(-1)
    return torch.stack([kx, ky])


def _image(shape, coils=1):
    return torch.randn(B[shape], coils, *IM, dtype=torch.complex64)


def _kdata(shape, coils=1):
    return torch.randn(B[shape], coils, _omega(shape).shape[1], dtype=torch.complex64)


def _smaps(shape):
    return torch.randn(B[shape], COILS, *IM, dtype=torch.complex64)


def nufft_forward(shape=0):
    """KbNufft: image -> k-space samples on the trajectory (table interpolation)."""
    import torchkbnufft as tkbn

    op = tkbn.KbNufft(im_size=IM).eval()
    return op, (_image(shape), _omega(shape)), {}


def nufft_adjoint(shape=0):
    """KbNufftAdjoint: k-space samples -> image (gridding + inverse FFT)."""
    import torchkbnufft as tkbn

    op = tkbn.KbNufftAdjoint(im_size=IM).eval()
    return op, (_kdata(shape), _omega(shape)), {}


def nufft_sense_forward(shape=0):
    """Multi-coil forward NUFFT with sensitivity maps and orthogonal normalization."""
    import torchkbnufft as tkbn

    op = tkbn.KbNufft(im_size=IM).eval()
    return op, (_image(shape), _omega(shape)), {"smaps": _smaps(shape), "norm": "ortho"}


def nufft_adjoint_batched_omega(shape=0):
    """Dynamic imaging: one trajectory per batch element, (N, 2, klength), real inputs."""
    import torchkbnufft as tkbn

    op = tkbn.KbNufftAdjoint(im_size=IM).eval()
    n = B[shape]
    omega = torch.stack([_omega(shape).roll(i, dims=1) for i in range(n)])
    data = torch.view_as_real(_kdata(shape))
    return op, (data, omega), {}


def nufft_sparse_matrix(shape=0):
    """Forward NUFFT with precomputed sparse interpolation matrices (calc_tensor_spmatrix)."""
    import torchkbnufft as tkbn

    op = tkbn.KbNufft(im_size=IM).eval()
    omega = _omega(shape)
    interp_mats = tkbn.calc_tensor_spmatrix(omega, im_size=IM)
    return op, (_image(shape), omega), {"interp_mats": interp_mats}


def interp_adjoint(shape=0):
    """KbInterpAdjoint: k-space samples onto the oversampled grid, no FFT."""
    import torchkbnufft as tkbn

    op = tkbn.KbInterpAdjoint(im_size=IM, grid_size=(16, 16)).eval()
    return op, (_kdata(shape, coils=2), _omega(shape)), {}


def toeplitz_normal_op(shape=0):
    """ToepNufft: the normal operator A^H A through a precomputed Toeplitz kernel."""
    import torchkbnufft as tkbn

    kernel = tkbn.calc_toeplitz_kernel(_omega(0), im_size=IM)
    op = tkbn.ToepNufft().eval()
    return op, (_image(shape, coils=COILS), kernel), {}


def cg_sense_toeplitz(shape=0):
    """CG-SENSE reconstruction: a few conjugate-gradient iterations on the normal equations
    A^H A x = A^H y, with A^H A applied through ToepNufft and coil sensitivity maps."""
    import torchkbnufft as tkbn

    omega = _omega(0)
    kernel = tkbn.calc_toeplitz_kernel(omega, im_size=IM)
    normal_op = tkbn.ToepNufft()

    def cg_sense(rhs, smaps):
        x = torch.zeros_like(rhs)
        r = rhs.clone()
        p = r.clone()
        rs = (r.conj() * r).real.sum()
        for _ in range(3):
            ap = normal_op(p, kernel, smaps=smaps)
            alpha = rs / (p.conj() * ap).real.sum()
            x = x + alpha * p
            r = r - alpha * ap
            rs_new = (r.conj() * r).real.sum()
            p = r + (rs_new / rs) * p
            rs = rs_new
        return x

    return cg_sense, (_image(shape), _smaps(shape)), {}


def data_consistency_loss(shape=0):
    """An unrolled-reconstruction training step's loss: a small CNN refines the density-compensated
    adjoint image, then || A x - y ||^2 on the measured k-space."""
    import torchkbnufft as tkbn

    forward_op = tkbn.KbNufft(im_size=IM)
    adjoint_op = tkbn.KbNufftAdjoint(im_size=IM)
    cnn = torch.nn.Sequential(torch.nn.Conv2d(2, 8, 3, padding=1), torch.nn.ReLU(),
                              torch.nn.Conv2d(8, 2, 3, padding=1)).train()

    def loss_step(kdata, omega, dcomp):
        image = adjoint_op(kdata * dcomp, omega)
        x = torch.stack([image.real[:, 0], image.imag[:, 0]], dim=1)
        x = x + cnn(x)
        image = torch.complex(x[:, 0], x[:, 1]).unsqueeze(1)
        residual = forward_op(image, omega) - kdata
        return residual.abs().pow(2).mean()

    omega = _omega(shape)
    dcomp = torch.rand(1, 1, omega.shape[1]) + 0.5
    return loss_step, (_kdata(shape), omega, dcomp), {}


MODELS = {
    "tkbn_nufft_forward": ("eval", nufft_forward),
    "tkbn_nufft_adjoint": ("eval", nufft_adjoint),
    "tkbn_nufft_sense_forward": ("eval", nufft_sense_forward),
    "tkbn_nufft_adjoint_batched_omega": ("eval", nufft_adjoint_batched_omega),
    "tkbn_nufft_sparse_matrix": ("eval", nufft_sparse_matrix),
    "tkbn_interp_adjoint": ("eval", interp_adjoint),
    "tkbn_toeplitz_normal_op": ("eval", toeplitz_normal_op),
    "tkbn_cg_sense_toeplitz": ("eval", cg_sense_toeplitz),
    "tkbn_data_consistency_loss": ("train", data_consistency_loss),
}
