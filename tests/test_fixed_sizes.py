"""Sizes a model fixes (tcl/sizes.py): a Python loop over them never recompiles, so TCL505 and
TCL506 leave them alone. Three kinds of evidence, each read from the source and each checked
here on the compiler (four batch sizes: two compiles, the automatic-dynamic one included):

* a len() of a shape (`len(x.shape)`, `len(dist.event_shape)`) is the rank;
* a len() of a name the function itself shows to be a Python list or tuple (an
  `isinstance(feats, list)` test, `torch.cat(levels)`, `outs.append(...)`) counts elements
  (feature levels, crops), not rows of a tensor;
* a tensor parameter every traced caller fills with one its module holds (`self.weight`), or
  builds from constants, has sizes that do not follow the inputs -- also through
  `w = w / w.sum()`.

The same loop over a size of the input (`Rows` below) recompiles on every call and stays reported.
"""

from __future__ import annotations

import importlib.util
import textwrap

import pytest

from tcl.config import Config
from tcl.engine import Analyzer

FIXED_SIZES = """
import torch
from torch import nn


def anchors(feats, strides):
    out = []
    for i in range(len(feats)):
        h, w = feats[i].shape[2:] if isinstance(feats, list) else (int(feats[i][0]), int(feats[i][1]))
        out.append(torch.zeros(h * w) + strides[i])
    return torch.cat(out)


def merge(levels):
    total = torch.cat(levels, dim=1)
    for i in range(len(levels)):
        total = total + 1
    return total


def rank_loop(factor, shape):
    for i in range(len(shape)):
        factor = factor * 2
    return factor


class Dist:
    def __init__(self, t):
        self.event_shape = t.shape[1:]


def event_reduce(factor, dist):
    num_event_dim = len(dist.event_shape)
    for i in range(num_event_dim):
        factor = factor * 2
    return factor


def ms_score(x, scale_weights=None):
    if scale_weights is None:
        scale_weights = torch.tensor([0.1, 0.2, 0.7])
    scale_weights = scale_weights / scale_weights.sum()
    levels = scale_weights.size(0)
    out = x
    for i in range(levels):
        out = out * scale_weights[i]
    return out


def weighted(x, weight):
    for k in range(weight.shape[0]):
        x = x + weight[k]
    return x


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale_weights = torch.tensor([0.5, 0.5])
        self.weight = nn.Parameter(torch.randn(3, 4))

    def forward(self, x, ys):
        a = anchors(ys, [8, 16])
        b = merge(ys)
        c = rank_loop(x, x.shape)
        d = event_reduce(x, Dist(x))
        e = ms_score(x, self.scale_weights)
        f = weighted(x, self.weight)
        return a.sum() + b.sum() + c + d + e + f


class Rows(nn.Module):
    def forward(self, x):
        return weighted(x, x)
"""


def findings(source: str):
    analyzer = Analyzer(Config(torch_version="2.13"))
    report = analyzer.check_source(textwrap.dedent(source), "m.py")
    return [(f.code, f.line) for f in report.findings if f.code in ("TCL505", "TCL506")]


def test_sizes_a_model_fixes_are_not_reported_and_a_size_of_the_input_is():
    line = FIXED_SIZES.splitlines().index("    for k in range(weight.shape[0]):") + 1
    # only Rows' call passes a tensor of the input's sizes as `weight`: one caller is enough
    assert findings(FIXED_SIZES) == [("TCL505", line)]
    assert findings(FIXED_SIZES.replace("return weighted(x, x)", "return x")) == []


def test_a_list_shown_only_by_its_name_is_still_judged_as_before():
    source = """
        import torch

        @torch.compile
        def fn(x, feats):
            for i in range(len(feats)):
                x = x + feats[i].sum()
            return x
        """
    assert findings(source) == [("TCL505", 6)]


def test_a_view_to_a_size_of_its_own_result_is_decided_without_looping():
    """`x = x.view(x.shape[0], 4)`: the view's size is a size of the name the view rebinds, which
    leads back to the view (session 28 first looped there: "expression nesting too deep" on
    seven speechbrain files). It is a size of the input: still reported."""
    source = """
        import torch

        @torch.compile
        def fn(x):
            x = x.view(x.shape[0], 4)
            return torch.unbind(x)
        """
    report = Analyzer(Config()).check_source(textwrap.dedent(source), "m.py")
    assert report.errors == []
    assert [(f.code, f.line) for f in report.findings] == [("TCL506", 7)]


def test_the_compiler_recompiles_only_for_the_size_of_the_input(tmp_path):
    torch = pytest.importorskip("torch")
    from tcl.verify.compile_trace import CompileTrace

    path = tmp_path / "fixed_sizes.py"
    path.write_text(FIXED_SIZES)
    spec = importlib.util.spec_from_file_location("fixed_sizes", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    counts = {}
    for cls in (module.Head, module.Rows):
        torch._dynamo.reset()
        compiled = torch.compile(cls())
        with CompileTrace() as trace:
            for n in (2, 3, 4, 5):
                x = torch.randn(n, 4)
                if cls is module.Head:
                    compiled(x, [torch.randn(n, 4, 8, 8), torch.randn(n, 4, 8, 8)])
                else:
                    compiled(x)
                trace.next_call()
        compilations = trace.collect()
        counts[cls.__name__] = (len(compilations), {s.line for c in compilations for s in c.specialisations})
    line = FIXED_SIZES.splitlines().index("    for k in range(weight.shape[0]):") + 1
    assert counts["Head"] == (2, set())  # the first compile and the automatic-dynamic one
    assert counts["Rows"] == (4, {line})  # every new batch size, cited at the loop
