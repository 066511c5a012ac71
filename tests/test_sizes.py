"""Size provenance (tcl/sizes.py): which sizes the recompile rules treat as changing between
calls, and the evidence each finding states. The compile counts behind these choices are the
rule examples' (tests/test_rule_examples.py); here the analysis itself is pinned on small sources."""

from __future__ import annotations

import textwrap

import pytest

from tcl.engine import Analyzer
from tcl.config import Config
from tcl.sizes import varies_by_name


def findings(source: str, code: str = "TCL505"):
    analyzer = Analyzer(Config(torch_version="2.13"))
    report = analyzer.check_source(textwrap.dedent(source), "m.py")
    return [f for f in report.findings if f.code == code]


@pytest.mark.parametrize("name, varies", [
    ("seq_len", True), ("n_frames", True), ("T", True), ("batch_size", True), ("num_tokens", True),
    ("channels", False), ("head_dim", False), ("num_classes", False), ("num_heads", False), ("d_model", False),
    ("offset", None), ("m", None),
])
def test_names_say_length_or_width(name, varies):
    assert varies_by_name(name) is varies


def test_sizes_of_module_state_and_constants_are_fixed():
    assert findings("""
        import torch
        from torch import nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = nn.Parameter(torch.randn(3, 4))

            def forward(self, x):
                w = self.w.t()
                table = torch.zeros(5, 2)
                for i in range(self.w.shape[0]):
                    x = x + 1
                for j in range(w.size(0)):
                    x = x + 1
                for k in range(len(table)):
                    x = x + 1
                return x
        """) == []


def test_a_cut_of_module_state_by_a_changing_size_follows_the_input():
    found = findings("""
        import torch
        from torch import nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("mask", torch.ones(64, 64))

            def forward(self, x):
                seq_len = x.shape[1]
                mask = self.mask[:seq_len]
                for i in range(mask.shape[0]):
                    x = x + 1
                return x
        """)
    assert [f.line for f in found] == [13]


def test_unpacked_shapes_are_judged_by_position_and_name():
    found = findings("""
        import torch

        @torch.compile
        def fn(x):
            b, n, channels = x.shape
            for i in range(b):
                x = x + 1
            for j in range(n):
                x = x + 1
            for c in range(channels):
                x = x + 1
            return x
        """)
    assert [f.line for f in found] == [7, 9]
    assert "b = dim 0 of x (the batch)" in found[0].message
    assert "named as a length" in found[1].message


def test_len_of_a_list_of_tensors_is_not_a_size():
    assert findings("""
        import torch
        from typing import List

        @torch.compile
        def fn(x, crops: List[torch.Tensor], indices_tuple):
            for i in range(len(crops)):
                x = x + crops[i]
            for j in range(len(indices_tuple)):
                x = x + 1
            return x
        """) == []


def test_a_size_reaches_a_helper_through_its_parameter():
    found = findings("""
        import torch

        PLANS = [4, 8, 16]

        def plan_index(length, width):
            first = PLANS.index(length)
            return first + PLANS.index(width)

        @torch.compile
        def fn(x, y):
            return x * plan_index(x.shape[0], 8) * plan_index(y.shape[0], 4)
        """)
    assert [f.line for f in found] == [7]
    assert "a size at every traced call site" in found[0].message


def test_int_ceil_and_min_of_a_size_are_sizes():
    found = findings("""
        import math
        import torch

        @torch.compile
        def fn(x):
            n = x.shape[0]
            for i in range(int(n / 2)):
                x = x + 1
            for j in range(math.ceil(n / 4)):
                x = x + 1
            for k in range(min(n, 16)):
                x = x + 1
            return x
        """)
    assert [f.line for f in found] == [8, 10, 12]


def test_tcl506_needs_a_size_that_varies():
    found = findings("""
        import torch

        @torch.compile
        def fn(x, feats):
            n = x.shape[0]
            features = feats.shape[1]
            a = torch.triu_indices(n, n, 1)
            b = torch.triu_indices(features, features, 1)
            return a, b
        """, code="TCL506")
    assert [f.line for f in found] == [8]


def test_a_factory_of_fixed_sizes_builds_a_fixed_tensor():
    found = findings("""
        import torch
        from torch import nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = nn.Parameter(torch.randn(3, 4))

            def forward(self, x):
                fixed = torch.zeros(self.w.shape[0], self.w.shape[0])
                fixed.fill_diagonal_(1.0)
                sims = x @ x.t()
                sims.fill_diagonal_(0.0)
                return sims.sum() + fixed.sum()
        """, code="TCL506")
    assert [f.line for f in found] == [14]


def test_tcl508_leaves_a_read_inside_an_outer_loop():
    found = findings("""
        import torch

        @torch.compile
        def fn(x, steps: int):
            out = x
            for _ in range(steps):
                for v in x[:, 0].tolist():  # noqa: TCL205
                    out = out + v
            for w in x[:, 1].tolist():  # noqa: TCL205
                out = out * w
            return out
        """, code="TCL508")
    # The read inside the loop breaks there, which makes Dynamo skip the whole frame: line 10's
    # list is then read eagerly too and recompiles nothing (tcl/walker.py, _note_skip).
    assert [f.line for f in found] == []
    found = findings("""
        import torch

        @torch.compile
        def fn(x, steps: int):
            out = x
            for _ in range(steps):
                out = out + 1
            for w in x[:, 1].tolist():  # noqa: TCL205
                out = out * w
            return out
        """, code="TCL508")
    assert [f.line for f in found] == [9]


def test_a_size_read_before_its_tensor_is_cut_by_it_ends():
    """transformers' FastSpeech2 loss: `length_dim` is a size of `spectrogram_mask` before the
    name is rebound to a cut by `length_dim`. Origins are per name, so asking for that size led
    back to itself until Python's recursion limit, and the whole file was "could not be
    analysed"."""
    analyzer = Analyzer(Config(torch_version="2.13"))
    report = analyzer.check_source(textwrap.dedent("""
        import torch
        from torch import nn

        class Loss(nn.Module):
            def __init__(self):
                super().__init__()
                self.reduction_factor = 2

            def forward(self, spectrogram_mask):
                length_dim = spectrogram_mask.shape[1] - spectrogram_mask.shape[1] % self.reduction_factor
                spectrogram_mask = spectrogram_mask[:, :, :length_dim]
                for i in range(length_dim):
                    spectrogram_mask = spectrogram_mask + 1
                return spectrogram_mask
        """), "m.py")
    assert report.errors == []
