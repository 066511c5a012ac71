"""tcl/evidence.py: how the body uses a parameter decides what an unannotated one holds."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from tcl.config import Config
from tcl.engine import Analyzer
from tcl.evidence import NUMBER, OBJECT, STRING, TENSOR, parameter_evidence
from tcl.module_index import build_index


def evidence(source: str) -> dict[str, str]:
    source = textwrap.dedent(source)
    index = build_index(cst.parse_module(source), "m.py")
    function = cst.parse_module(source).body[0]
    names = {p.name.value for p in function.params.params}
    return parameter_evidence(function.body, names, index)


def test_evidence_of_each_kind():
    assert evidence('''\
        def f(x, n, mode, state, both, unused):
            for _ in range(n + 1):
                x = x.view(-1)
            if mode == "fast" or both == "a":
                state.append(x)
            both.masked_fill_(both > 0, 0)
            return x
    ''') == {"x": TENSOR, "n": NUMBER, "mode": STRING, "state": OBJECT, "both": TENSOR}


def test_a_tensor_method_is_evidence_only_when_called():
    """`args.dim` / `config.size` read a field that shares a tensor method's name; `x.dim()`
    calls it. Data attributes (`x.shape`) count when read; `name` (an Enum member has it) does not."""
    assert evidence('''\
        def f(x, args, config, y, task):
            a = x.dim() + args.dim
            b = config.size * y.shape[0]
            if task.name == "cls":
                return a
            return b
    ''') == {"x": TENSOR, "y": TENSOR}  # nothing says what task is


def test_a_script_main_reading_config_fields_is_not_a_public_api_entry(tmp_path):
    """`def main(args): model = Net(args.dim); return torch.compile(model)` builds a model: it
    is not compiled, and a module built there is not "built inside a compiled region"."""
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "net.py").write_text(textwrap.dedent('''
        import torch
        from torch import nn


        class Net(nn.Module):
            def __init__(self, dim=4):
                super().__init__()
                self.lin = nn.Linear(dim, dim)

            def forward(self, x):
                return self.lin(x)
    '''))
    (tmp_path / "train.py").write_text(textwrap.dedent('''
        import torch
        from net import Net


        def main(args):
            model = Net(args.dim)
            return torch.compile(model, mode="max-autotune")
    '''))
    from tcl.runner import run

    result = run([str(tmp_path / "train.py")], Config())
    assert [(f.path, f.code) for f in result.findings] == []


def test_a_parameter_compared_with_a_size_in_a_test_is_a_number():
    assert evidence('''\
        def f(z, length, n, m, lengths, k):
            assert z.shape[-1] == length, (z.shape[-1], length)
            if z.size(1) != n or not len(z) < m:
                raise ValueError("shape")
            mask = lengths == z.shape[1]
            while k > z.dim():
                k = k - 1
            return z[..., :length] * mask
    ''') == {"z": TENSOR, "length": NUMBER, "n": NUMBER, "m": NUMBER, "k": NUMBER}


def test_nested_scopes_are_not_read():
    assert evidence('''\
        def f(x, n):
            def inner(n):
                return range(n)
            return x @ x
    ''') == {"x": TENSOR}


def test_forward_parameters_used_as_python_values_are_not_tensor_data():
    source = textwrap.dedent('''\
        import torch
        from torch import nn


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(4, 4)

            def forward(self, x, n, state=None, mode="a", gate=None):
                for _ in range(n):
                    x = self.lin(x)
                if state is None:
                    state = []
                state.append(x)
                if n > 2:
                    x = x * 2
                if gate.sum() > 0:
                    x = x * gate
                return x, state
    ''')
    report = Analyzer(Config()).check_source(source, "m.py")
    # `n` feeds range(): a Python int (its loop is a recompile hazard, TCL502, not a break);
    # `gate` has tensor evidence (.sum()), so its branch is still a break.
    assert sorted((f.code, f.line) for f in report.findings) == [("TCL201", 18), ("TCL502", 11)]


def test_tensor_evidence_wins_over_a_flag_name():
    # `p` and `step` read as flags by their names (dropout's p, a step count); the body says
    # tensor for `p` (clone, masked_fill) and nothing for `step`, which stays a Python value.
    source = textwrap.dedent('''\
        import torch


        @torch.compile
        def update(p, step, grad):
            p = p.clone().masked_fill(grad > 0, 0.0)
            if p.sum() > 0:
                p = p * 2
            if step > 3:
                p = p + 1
            return p
    ''')
    report = Analyzer(Config()).check_source(source, "m.py")
    assert sorted((f.code, f.line) for f in report.findings) == [("TCL201", 7)]


def test_findings_name_the_value_judged_tensor_data_and_why():
    source = textwrap.dedent('''\
        import torch


        @torch.compile
        def fn(x, k=None):
            scale = x.sum()
            if scale > 0:
                x = x * 2
            if k > 0:
                x = x + 1
            if torch.isfinite(torch.ones(1)).all():
                x = x - 1
            return x
    ''')
    report = Analyzer(Config()).check_source(source, "m.py")
    assert [(f.line, f.evidence) for f in report.findings if f.code == "TCL201"] == [
        (7, "scale: x.sum() at line 6"),
        (9, "k: parameter, assumed a tensor"),  # no evidence in the body: said so
        (11, "torch.isfinite() returns tensor data"),
    ]


def test_a_parameter_tested_for_truth_alone_is_not_taken_for_a_tensor():
    # Eager `if t:` raises for a tensor of more than one element: `flag` holds a Python value.
    source = textwrap.dedent('''\
        import torch


        @torch.compile
        def fn(x, flag=None, mask=None):
            if flag:
                x = x * 2
            if not mask:
                x = x + 1
            if mask and mask.any():
                x = x - 1
            return x
    ''')
    report = Analyzer(Config()).check_source(source, "m.py")
    # `mask.any()`: tensor evidence wins over the truth tests
    assert [(f.line, f.code) for f in report.findings] == [(8, "TCL201"), (10, "TCL201")]


# Fields a class body annotates (torchani's `Neighbors` NamedTuple, dataclass records): what the
# annotation promises, read strictly -- one tensor type or one Python scalar type, optionally
# Optional[...]; a tuple of tensors (HF outputs' hidden states) or another class says nothing.
RECORDS = '''\
import dataclasses
import typing as tp

import torch
from torch import Tensor


class Neighbors(tp.NamedTuple):
    indices: Tensor
    distances: Tensor


@dataclasses.dataclass
class Output:
    logits: torch.FloatTensor
    steps: int
    hidden: tp.Optional[tp.Tuple[torch.FloatTensor, ...]] = None
    loss: tp.Optional[torch.FloatTensor] = None


def discard(neighbors: Neighbors, cutoff: float) -> Neighbors:
    closer = (neighbors.distances <= cutoff).nonzero().flatten()
    return Neighbors(neighbors.indices.index_select(1, closer), neighbors.distances.index_select(0, closer))


@torch.compile
def step(d):
    n = discard(Neighbors(torch.zeros(2, 3, dtype=torch.long), d), 0.5)
    out = Output(n.distances * 2, 3, (d,))
    if out.steps > 2 and out.hidden and out.loss is None:
        out.logits = out.logits + 1
    if n.distances.sum() > 0:
        return out.logits * 2
    return out.logits
'''


def test_annotated_fields_of_records_are_what_they_say():
    report = Analyzer(Config(torch_version="2.13")).check_source(RECORDS, "records.py")
    assert not report.errors
    assert [(f.code, f.line) for f in report.findings] == [("TCL301", 22), ("TCL201", 32)]


def test_the_compiler_breaks_where_the_fields_say():
    pytest.importorskip("torch")
    from tcl.oracle import probe_source

    result = probe_source(RECORDS, "step", "(torch.rand(3),)")
    assert result.exception is None, result.exception
    assert sorted({b.line for b in result.breaks}) == [22, 32]
