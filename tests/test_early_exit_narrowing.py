"""After `if <test>: return`, the rest of the block runs with the test false (tcl/branches.py
none_when, the walker's visit_IndentedBlock), and the right operand of `and`/`or` runs only where
the left one let Python go on (visit_BooleanOperation, data_dependent): what that proves None or
not a tensor holds no tensor data there."""

from __future__ import annotations

import textwrap

import pytest

from tcl.config import Config
from tcl.engine import Analyzer
from tcl.entries import parse

SOURCE = textwrap.dedent('''
    import torch


    def is_tracing(tensor=None):
        return torch.compiler.is_compiling()


    def fast_all(tensor):
        return tensor.sum() == tensor.numel()


    def ignore_causal_mask(padding_mask, q_length: int, kv_length: int):
        # transformers' masking_utils: under compile the mask's values are never read
        if padding_mask is not None and is_tracing(padding_mask):
            return False
        if (q_length == 1 or kv_length == q_length) and (padding_mask is None or fast_all(padding_mask)):
            return True
        return False


    def reads_the_mask(padding_mask, q_length: int):
        if padding_mask is None:
            return False
        if fast_all(padding_mask):  # BREAK: here the mask is a tensor
            return True
        return False


    def other_paths_join(x, padding_mask, flag: bool):
        if flag:
            if padding_mask is not None and is_tracing(padding_mask):
                return x
            x = x + 1
        if padding_mask.sum() > 0:  # BREAK: through the else path the mask is a tensor
            x = x * 2
        return x


    def zero_loss_check(losses, x):
        # pytorch-metric-learning's BaseReducer: the comparison runs only on a Python number
        if (not torch.is_tensor(losses)) and (losses == 0):
            return x * 0
        return x + losses


    def skip_bidirectional(padding_mask, kv_length: int):
        # transformers' _ignore_bidirectional_mask_sdpa: the mask's values are read only when
        # not tracing or when it is None
        if (
            not (padding_mask is not None and is_tracing(padding_mask))
            and (padding_mask is None or padding_mask.all())
            and kv_length > 0
        ):
            return True
        return False


    def not_a_tensor_after_the_return(x, scale):
        if isinstance(scale, torch.Tensor):
            return x * scale
        if scale > 1:  # a Python number here
            x = x / scale
        return x
''')


def _findings(source):
    names = ["ignore_causal_mask", "reads_the_mask", "other_paths_join", "not_a_tensor_after_the_return",
             "zero_loss_check", "skip_bidirectional"]
    config = Config(entries=[parse(f"model:{name}", "test") for name in names], api_entries="off")
    return Analyzer(config).check_source(source, "model.py").findings


def test_what_an_early_return_proves_holds_for_the_rest_of_the_block():
    lines = SOURCE.splitlines()
    found = sorted((f.line, f.code) for f in _findings(SOURCE))
    assert found == [(lines.index(line) + 1, "TCL201") for line in lines if "# BREAK" in line]


def test_the_compiler_agrees():
    pytest.importorskip("torch")
    from tcl.oracle import probe_source

    lines = SOURCE.splitlines()
    mask = "torch.tensor([[True, True, False]])"
    cases = {
        "ignore_causal_mask": (f"({mask}, 3, 3)", set()),
        "reads_the_mask": (f"({mask}, 3)", {"fast_all(padding_mask)"}),
        "other_paths_join": (f"(torch.ones(3), {mask}, False)", {"padding_mask.sum() > 0"}),
        "not_a_tensor_after_the_return": ("(torch.ones(3), 2.0)", set()),
        "zero_loss_check": ("(torch.ones(3), torch.ones(3))", set()),
        "skip_bidirectional": (f"({mask}, 3)", set()),
    }
    for entry, (args, breaking) in cases.items():
        result = probe_source(SOURCE, entry, args)
        assert result.exception is None, (entry, result.exception)
        seen = {part for b in result.breaks for part in breaking if part in lines[b.line - 1]}
        assert seen == breaking, (entry, [(b.line, lines[b.line - 1]) for b in result.breaks])
