"""Module-level literal flags decide branches under compile (tcl/module_constants.py)."""

from __future__ import annotations

import textwrap

import pytest

from tcl.config import Config
from tcl.engine import Analyzer
from tcl.module_constants import _constants

SOURCE = textwrap.dedent('''
    import torch
    from torch import nn

    _debug = False
    USE_FAST = True
    MODE = "sum"
    FLAG = False
    try:
        import not_installed_anywhere
        HAS_IT = True
    except ImportError:
        HAS_IT = False


    def set_flag():
        global FLAG
        FLAG = True


    class M(nn.Module):
        def forward(self, x, _debug=True):
            if _debug:
                print("a parameter of the same name: not the module's flag")
            return helper(x)


    def helper(x):
        if _debug:
            print("dead: _debug is False")
        if not USE_FAST:
            print("dead: USE_FAST is True")
        if MODE == "mean":
            print("dead: MODE is 'sum'")
        if FLAG:
            print("live: set_flag() rebinds it")
        if HAS_IT:
            print("live: bound twice")
        return x * 2
''')


def test_constants_of_a_module():
    import ast

    assert _constants(ast.parse(SOURCE)) == {"_debug": False, "USE_FAST": True, "MODE": "sum"}


def test_branches_on_module_flags_are_decided():
    found = Analyzer(Config()).check_source(SOURCE, "model.py").findings
    lines = SOURCE.splitlines()
    assert sorted(lines[f.line - 1].strip() for f in found) == [
        'print("a parameter of the same name: not the module\'s flag")',
        'print("live: bound twice")',
        'print("live: set_flag() rebinds it")',
    ]


def test_a_local_of_the_same_name_shadows_the_flag():
    source = textwrap.dedent('''
        import torch

        VERBOSE = False

        @torch.compile
        def step(x, quiet):
            VERBOSE = not quiet
            if VERBOSE:
                print("a local, not the module's flag")
            return x + 1
    ''')
    assert [f.code for f in Analyzer(Config()).check_source(source, "step.py").findings] == ["TCL101"]


def test_the_compiler_does_not_break_on_a_dead_flag_branch():
    pytest.importorskip("torch")
    from tcl.oracle import probe_source

    # set_flag() first: the one flag tcl leaves undecided is True, and only its print breaks
    result = probe_source(SOURCE, "helper", "(set_flag() or torch.randn(3),)")
    assert result.exception is None, result.exception
    broken = {SOURCE.splitlines()[b.line - 1].strip() for b in result.breaks}
    assert broken == {'print("live: set_flag() rebinds it")'}
