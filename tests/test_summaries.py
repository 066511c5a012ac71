"""tcl/summaries.py: a helper's return kind follows the arguments of each call."""

from __future__ import annotations

import textwrap

from tcl.config import Config
from tcl.engine import Analyzer


def codes_and_lines(source: str) -> list[tuple[str, int]]:
    report = Analyzer(Config()).check_source(textwrap.dedent(source), "m.py")
    return sorted((f.code, f.line) for f in report.findings)


def test_pass_through_helper_returns_each_calls_own_kind():
    source = '''\
        import torch
        from torch import nn

        def default(val, d):
            return val if val is not None else d

        class Block(nn.Module):
            def __init__(self, scale=None):
                super().__init__()
                self.scale = scale

            def forward(self, x, mask=None):
                mask = default(mask, torch.ones_like(x))
                scale = default(self.scale, 1.0)
                if scale > 0.5:
                    x = x * scale
                if default(mask, x).sum() > 0:
                    x = x + 1
                return x * mask
    '''
    # The branch on the helper's tensor result is still found; the one on its float result is not.
    assert codes_and_lines(source) == [("TCL201", 17)]


def test_recursive_helper_keeps_the_joined_answer():
    source = '''\
        import torch

        def walk(v, depth):
            if depth == 0:
                return v
            return walk(v, depth - 1)

        @torch.compile
        def fn(x):
            y = walk(x, 3)
            n = walk(2.0, 3)
            if y.sum() > 0:
                x = x * n
            return x
    '''
    assert codes_and_lines(source) == [("TCL201", 12)]
