"""ncps: Neural Circuit Policies, the liquid time-constant (LTC) and closed-form continuous-time
(CfC) recurrent networks, as the README and the library's examples use them: CfC and LTC over
(batch, time, features) sequences, with fully connected units or a sparse NCP / AutoNCP wiring,
irregularly sampled sequences (timespans), mixed memory (an extra LSTM), batchless input, a
single cell stepped by the user's own loop, and the training losses of a sequence regressor.

All models are built from their constructors with random weights and a handful of units.
Shapes: batch 2 -> 3 -> 4 of sequences of 5 -> 8 -> 12 steps of 6 features (the user's cell
loop: batch 2 -> 3 -> 4 of 4 steps; the batchless LTC and the timespans CfC: 5 -> 8 -> 12 steps).
"""

from __future__ import annotations

import torch

LIBRARY = "ncps"
DIST = "ncps==1.0.1"

IN = 6
B = (2, 3, 4)
L = (5, 8, 12)


def _seq(shape):
    gen = torch.Generator().manual_seed(10 + shape)
    return torch.randn(B[shape], L[shape], IN, generator=gen)


def _target(shape, n):
    gen = torch.Generator().manual_seed(20 + shape)
    return torch.randn(B[shape], L[shape], n, generator=gen)


def cfc_forward(shape=0):
    """The README's CfC: `output, hn = rnn(x, h0)` over a batch of sequences (eval mode)."""
    from ncps.torch import CfC

    torch.manual_seed(0)
    rnn = CfC(IN, 16, backbone_units=32).eval()
    h0 = torch.zeros(B[shape], 16)
    return rnn, (_seq(shape), h0), {}


def cfc_timespans_mixed_train_loss(shape=0):
    """A CfC regressor on one irregularly sampled, unbatched sequence (per-step timespans: ncps
    broadcasts a timespan per step only without a batch), with mixed memory (an LSTM cell
    alongside), a projection and backbone dropout: the MSE training loss."""
    from ncps.torch import CfC

    torch.manual_seed(0)
    rnn = CfC(IN, 16, proj_size=3, mixed_memory=True, backbone_units=32, backbone_layers=2,
              backbone_dropout=0.1).train()
    gen = torch.Generator().manual_seed(30 + shape)
    timespans = torch.rand(L[shape], generator=gen) + 0.5

    def loss_step(x, ts, target):
        y, _ = rnn(x, timespans=ts)
        return torch.nn.functional.mse_loss(y, target)

    return loss_step, (_seq(shape)[0], timespans, _target(shape, 3)[0]), {}


def cfc_no_gate_last_output(shape=0):
    """CfC in "no_gate" mode returning only the last step's projected output (a sequence
    classifier's logits), eval mode."""
    from ncps.torch import CfC

    torch.manual_seed(0)
    rnn = CfC(IN, 16, proj_size=4, return_sequences=False, mode="no_gate", backbone_units=32).eval()

    def classify(x):
        logits, _ = rnn(x)
        return logits.softmax(-1)

    return classify, (_seq(shape),), {}


def cfc_autoncp_train_loss(shape=0):
    """A CfC wired by AutoNCP (sparse inter / command / motor layers, WiredCfCCell): the
    README's sequence regressor, its MSE training loss."""
    from ncps.torch import CfC
    from ncps.wirings import AutoNCP

    torch.manual_seed(0)
    rnn = CfC(IN, AutoNCP(16, 2), batch_first=True).train()

    def loss_step(x, target):
        y, _ = rnn(x)
        return torch.nn.functional.mse_loss(y, target)

    return loss_step, (_seq(shape), _target(shape, 2)), {}


def cfc_pure_time_major(shape=0):
    """CfC in "pure" (closed-form solution only) mode on time-major input (batch_first=False),
    eval mode."""
    from ncps.torch import CfC

    torch.manual_seed(0)
    rnn = CfC(IN, 12, mode="pure", batch_first=False, backbone_units=24).eval()
    return rnn, (_seq(shape).transpose(0, 1).contiguous(),), {}


def ltc_forward(shape=0):
    """The README's LTC with fully connected units (6 ODE unfolds per step), eval mode."""
    from ncps.torch import LTC

    torch.manual_seed(0)
    rnn = LTC(IN, 12).eval()
    return rnn, (_seq(shape),), {}


def ltc_ncp_train_step(shape=0):
    """An LTC wired by a hand-made NCP wiring, trained as the examples do: MSE loss, backward,
    an Adam step and the cell's `apply_weight_constraints()` (explicit parameter constraints)."""
    from ncps.torch import LTC
    from ncps.wirings import NCP

    torch.manual_seed(0)
    wiring = NCP(inter_neurons=6, command_neurons=4, motor_neurons=2, sensory_fanout=3, inter_fanout=2,
                 recurrent_command_synapses=2, motor_fanin=3)
    rnn = LTC(IN, wiring, batch_first=True, implicit_param_constraints=False).train()
    opt = torch.optim.Adam(rnn.parameters(), lr=1e-3)

    def train_step(x, target):
        opt.zero_grad()
        y, _ = rnn(x)
        loss = torch.nn.functional.mse_loss(y, target)
        loss.backward()
        opt.step()
        rnn.rnn_cell.apply_weight_constraints()
        return loss

    return train_step, (_seq(shape), _target(shape, 2)), {}


def ltc_batchless_mixed(shape=0):
    """LTC with mixed memory on one unbatched sequence (time, features) with its (h0, c0)
    state tuple, eval mode."""
    from ncps.torch import LTC

    torch.manual_seed(0)
    rnn = LTC(IN, 10, mixed_memory=True).eval()
    x = _seq(shape)[0]
    hx = (torch.zeros(10), torch.zeros(10))
    return rnn, (x, hx), {}


def cfc_cell_user_loop(shape=0):
    """A CfCCell and an LTCCell stepped by the user's own loop (as in the cell docs: a
    control policy that reads one observation per step), in eval mode."""
    from ncps.torch import CfCCell, LTCCell
    from ncps.wirings import FullyConnected

    torch.manual_seed(0)
    cfc = CfCCell(IN, 8, backbone_units=16).eval()
    ltc = LTCCell(FullyConnected(8), in_features=8).eval()

    def rollout(obs):
        h1 = torch.zeros(obs.shape[0], 8)
        h2 = torch.zeros(obs.shape[0], 8)
        outs = []
        for t in range(obs.shape[1]):
            y1, h1 = cfc(obs[:, t], h1, 1.0)
            y2, h2 = ltc(y1, h2, 0.5)
            outs.append(y2)
        return torch.stack(outs, 1)

    return rollout, (_seq(shape)[:, :4],), {}


MODELS = {
    "ncps_cfc_forward": ("eval", cfc_forward),
    "ncps_cfc_timespans_mixed_train_loss": ("train", cfc_timespans_mixed_train_loss),
    "ncps_cfc_no_gate_last_output": ("eval", cfc_no_gate_last_output),
    "ncps_cfc_autoncp_train_loss": ("train", cfc_autoncp_train_loss),
    "ncps_cfc_pure_time_major": ("eval", cfc_pure_time_major),
    "ncps_ltc_forward": ("eval", ltc_forward),
    "ncps_ltc_ncp_train_step": ("train", ltc_ncp_train_step),
    "ncps_ltc_batchless_mixed": ("eval", ltc_batchless_mixed),
    "ncps_cell_user_loop": ("eval", cfc_cell_user_loop),
}
