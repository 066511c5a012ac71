"""What branches say under compile (tcl/branches.py): an `isinstance(x, torch.Tensor)` test that
fails proves `x` is no tensor in that branch, and an `if` decided under compile that returns
ends what Dynamo traces of the block. Each case is also compiled: the compiler breaks exactly
on the lines tcl reports."""

from __future__ import annotations

import pytest

from test_guard_facts import check, compiler_breaks

NARROWED = """
    import typing as tp

    import torch
    from torch import nn


    def center_trim(tensor, reference: tp.Union[torch.Tensor, int]):
        if isinstance(reference, torch.Tensor):
            ref_size = reference.size(-1)
        else:
            ref_size = reference
        delta = tensor.size(-1) - ref_size
        if delta:
            tensor = tensor[..., delta // 2:-(delta - delta // 2)]
        return tensor


    def scaled(x, scale):
        factor = scale.mean() if isinstance(scale, torch.Tensor) else scale
        if factor > 1:
            return x * 2
        return x


    def checked(x, limit):
        if not isinstance(limit, (torch.Tensor, nn.Parameter)):
            if limit > 3:
                return x
        if limit.sum() > 3:
            return x
        return x * 2


    class M(nn.Module):
        def forward(self, x, y):
            return center_trim(x, 6), center_trim(x, y), scaled(x, 2), checked(x, y)
"""

COMPILING_RETURN = """
    import torch
    from torch import nn


    def validate(pbc):
        if torch.compiler.is_compiling() or torch.jit.is_scripting():
            return
        if not pbc.any():
            raise ValueError("pbc")


    def check_eager_only(x):
        if not torch.compiler.is_compiling():
            if x.sum() > 0:
                print("positive")
            return x
        if x.sum() > 0:
            return x * 2
        return x


    class M(nn.Module):
        def forward(self, x):
            validate(x)
            return check_eager_only(x)
"""


@pytest.mark.parametrize("source, args, lines", [
    (NARROWED, "(torch.randn(2, 8), torch.randn(2, 6))", [30]),
    (COMPILING_RETURN, "(torch.randn(4),)", [18]),
])
def test_branches_decide_what_is_traced(tmp_path, source, args, lines):
    findings = check(tmp_path, source)
    assert sorted({line for _, line in findings}) == lines, findings
    assert compiler_breaks(source, "M", args) == lines
