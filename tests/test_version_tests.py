"""Tests on torch's version decided for the targeted release (tcl/version_tests.py), and values
that are Python objects whatever their receiver (dunder attributes, comparisons with a str,
tcl/kinds.py). Each source is compiled on the installed torch too: the lines tcl stops
reporting do not break."""

from __future__ import annotations

import textwrap

import pytest

from tcl.config import Config
from tcl.runner import run

COMPAT = """
    import warnings
    import torch
    from packaging import version


    @torch.compile
    def fn(x, weight):
        if "1.5.0" in torch.__version__:
            warnings.warn("torch 1.5 has a bug here")
        if version.parse(torch.__version__) < version.parse("1.10"):
            print("very old torch")
        if torch.__version__ >= "2.0" and torch.__version__.startswith("2."):
            x = x * 2
        else:
            print("old torch")
        if weight.__class__.__name__ == "Params4bit":
            x = x + 1
        return x
"""


def check(tmp_path, source, version="2.13"):
    path = tmp_path / "model.py"
    path.write_text(textwrap.dedent(source))
    result = run([str(path)], Config(torch_version=version), jobs=1)
    assert not result.all_errors
    return sorted((f.code, f.line) for f in result.findings)


def test_version_tests_are_decided_for_the_target(tmp_path):
    assert check(tmp_path, COMPAT) == []
    # On torch 1.9 the other branches are the ones traced.
    assert check(tmp_path, COMPAT, version="1.9") == [("TCL101", 12), ("TCL101", 16)]


def test_the_compiler_agrees(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("packaging")
    from tcl.oracle import probe_source

    result = probe_source(textwrap.dedent(COMPAT), "fn", "(torch.randn(3), torch.randn(3))")
    assert result.exception is None, result.exception
    assert result.breaks == []


def test_a_string_comparison_is_not_tensor_data(tmp_path):
    source = COMPAT.replace('weight.__class__.__name__ == "Params4bit"', 'weight.sum() == 0')
    assert check(tmp_path, source) == [("TCL201", 17)]
