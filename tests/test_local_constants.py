"""Locals bound once to a value known before tracing, and methods fetched through a table.

transformers' `generate` reads `trust_remote_code = kwargs.pop("trust_remote_code", None)`,
asks a helper for a deprecated mode's repository (None, or it raises, unless the call trusts
remote code) and only then, in `if repo is not None:`, calls itself again with everything it
was given. Dynamo decides that test before tracing; tcl decides it too (tcl/local_constants.py),
so the recursive call neither adds findings nor undoes what the user's calls fix. The decoding
method is fetched as `getattr(type(self), MODES[mode])` and called with `self` spelled out:
every method the table names is reached. Each case is checked on the compiler below."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from source_modules import install, write
from tcl.config import Config
from tcl.local_constants import MIXED, falls_off_end, joined_literal, single_bindings
from tcl.runner import run

LIBRARY = """
    import torch

    MODES = {"greedy": "_greedy", "beam": "_beam", "old": "community/old"}


    class Generator:
        def _deprecated_repo(self, mode, trust_remote_code):
            if mode != "old":
                return None
            if not trust_remote_code:
                raise ValueError("mode 'old' needs trust_remote_code=True")
            return "community/old"

        def generate(self, x, mode="greedy", custom=None, **kwargs):
            trust_remote_code = kwargs.pop("trust_remote_code", None)
            verbose = False
            repo = self._deprecated_repo(mode, trust_remote_code)
            if repo is not None:
                print("loading", repo)
                return self.generate(x, mode="greedy", custom=repo, **kwargs)
            if verbose:
                print("generating")
            if kwargs.get("paged"):
                print("paged")
            method = getattr(type(self), MODES[mode])
            return method(self, x, steps=2)

        def _greedy(self, x, steps):
            for _ in range(steps):
                if x.sum().item() > 0:
                    x = x * 2
            return x

        def _beam(self, x, steps):
            print("beam")
            return x
"""
def line_of(text: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(LIBRARY).splitlines(), 1) if text in line)


LOADING = ("TCL101", line_of('print("loading"'))  # only when the call trusts remote code
VERBOSE = ("TCL101", line_of('print("generating")'))  # `verbose` is always False: never
PAGED = ("TCL101", line_of('print("paged")'))  # only when some call passes paged
ITEM = ("TCL203", line_of(".item()"))  # in _greedy, reached through getattr(type(self), MODES[mode])
BEAM = ("TCL101", line_of('print("beam")'))  # in _beam: the table names it too (the key is not followed)


@pytest.fixture
def site_packages(tmp_path, monkeypatch):
    return install(tmp_path, monkeypatch, {"genlib/__init__.py": "from .model import Generator\n",
                                           "genlib/model.py": LIBRARY})


def library_findings(tmp_path, calls):
    script = ("import torch\nfrom genlib import Generator\n\nx = torch.randn(4)\nflag = True\n"
              "gen = torch.compile(Generator().generate)\n" + calls)
    user = write(tmp_path / "project", "script.py", script)
    result = run([str(user)], Config(torch_version="2.13", follow_imports=True, api_entries="off"), jobs=1)
    assert not result.all_errors
    return sorted({(f.code, f.library_line) for f in result.findings})


@pytest.mark.parametrize("calls, expected", [
    # the helper returns None for mode "greedy": the recursive branch is never traced
    ("gen(x)\n", [ITEM, BEAM]),
    ("gen(x, paged=True)\n", [PAGED, ITEM, BEAM]),
    # mode "old" without trust: the helper raises (the call fails), and wherever it returns it
    # returns None: the branch never runs
    ("gen(x, mode='old')\n", [ITEM, BEAM]),
    # trusted: the helper returns the repository, the branch runs and calls generate again with
    # what the calls passed (paged unknown there)
    ("gen(x, mode='old', trust_remote_code=True)\n", [LOADING, PAGED, ITEM, BEAM]),
    # trust_remote_code not a literal: unknown
    ("gen(x, mode='old', trust_remote_code=flag)\n", [LOADING, PAGED, ITEM, BEAM]),
])
def test_a_helper_s_returned_literal_decides_the_branch(tmp_path, site_packages, calls, expected):
    assert library_findings(tmp_path, calls) == sorted(expected)


@pytest.mark.parametrize("call, found", [
    ("Generator().generate(x)", [ITEM]),
    ("Generator().generate(x, paged=True)", [PAGED, ITEM]),
    ("Generator().generate(x, mode='old', trust_remote_code=True)", [LOADING, ITEM]),
    ("Generator().generate(x, mode='beam')", [BEAM]),
])
def test_the_compiler_decides_the_same_branches(call, found):
    pytest.importorskip("torch")
    from tcl.oracle import probe_source

    source = textwrap.dedent(LIBRARY) + f"\n\ndef entry(x):\n    return {call}\n"
    result = probe_source(source, "entry", "(torch.ones(4),)")
    assert result.exception is None, result.exception
    last = len(textwrap.dedent(LIBRARY).splitlines())
    assert {b.line for b in result.breaks if b.line <= last} == {line for _, line in found}


def test_single_bindings():
    function = cst.parse_statement(textwrap.dedent("""
        def f(x, flag=None):
            a = 1
            b = g(x)
            b = 2
            c = kwargs.pop("c", None)
            for d in x:
                e = d
            flag = 3
            with open(x) as h:
                pass
            def inner():
                nonlocal c
            k = 5
            del k
            m = 0
            m += 1
            return a
    """))
    assert set(single_bindings(function)) == {"a"}  # e is bound in a loop, not at the top


def test_returned_literals_join():
    assert joined_literal(None, (True, None)) == (True, None)
    assert joined_literal((True, None), (True, None)) == (True, None)
    assert joined_literal((True, 0), (True, False)) is MIXED  # 0 and False differ in type
    assert joined_literal((True, None), None) is MIXED
    assert joined_literal(MIXED, (True, 1)) is MIXED
    assert falls_off_end(cst.parse_statement("def f():\n    if x:\n        return 1\n"))
    assert not falls_off_end(cst.parse_statement("def f():\n    return 1\n"))


def file_findings(tmp_path, body: str) -> list[str]:
    """Findings of a script that compiles `step` and calls it with one tensor, as "CODE at
    <the line's text>"."""
    source = "import torch\n\n" + textwrap.dedent(body) + "\nfast = torch.compile(step)\nfast(torch.randn(3))\n"
    path = write(tmp_path, "train.py", source)
    result = run([str(path)], Config(torch_version="2.13", api_entries="off"), jobs=1)
    assert not result.all_errors
    lines = source.splitlines()
    return [f"{f.code} at {lines[f.line - 1].strip()}" for f in result.findings]


PRINT = "TCL101 at print(x)"


@pytest.mark.parametrize("body, expected", [
    # bound once to a literal: the branch is never traced
    ("def step(x):\n    verbose = False\n    if verbose:\n        print(x)\n    return x\n", []),
    # bound twice: unknown
    ("def step(x):\n    verbose = False\n    verbose = True\n    if verbose:\n        print(x)\n    return x\n",
     [PRINT]),
    # bound in a branch only: unknown
    ("def step(x, flag=True):\n    if flag:\n        verbose = False\n    else:\n        verbose = True\n"
     "    if verbose:\n        print(x)\n    return x\n", [PRINT]),
    # a helper's literal for this call's literals: 1 for n=5 (its `return 1` is decided)...
    ("def mode(n):\n    if n == 5:\n        return 1\n\n"
     "def step(x, n=5):\n    m = mode(n)\n    if m is None:\n        print(x)\n    return x\n", []),
    # ... and None for n=2, where it falls off its end
    ("def mode(n):\n    if n == 5:\n        return 1\n\n"
     "def step(x, n=2):\n    m = mode(n)\n    if m is None:\n        print(x)\n    return x\n", [PRINT]),
    # n unknown: 1 or None, no single literal
    ("def mode(n):\n    if n == 5:\n        return 1\n\n"
     "def step(x, n=2):\n    m = mode(x.dim())\n    if m is not None:\n        print(x)\n    return x\n", [PRINT]),
    # a constructor's value is the object, not the None its __init__ returns: not known
    ("class Box:\n    def __init__(self):\n        self.v = 1\n\n"
     "def step(x):\n    b = Box()\n    if b is None:\n        print(x)\n    return x\n", [PRINT]),
    ("class Box:\n    def __init__(self):\n        self.v = 1\n\n"
     "def step(x):\n    b = Box()\n    if b is not None:\n        print(x)\n    return x\n", [PRINT]),
    # a decorator may return something else: not asked
    ("import functools\n\ndef wrap(f):\n    @functools.wraps(f)\n    def inner(*a):\n        return 1\n"
     "    return inner\n\n@wrap\ndef mode():\n    return None\n\n"
     "def step(x):\n    m = mode()\n    if m is not None:\n        print(x)\n    return x\n", [PRINT]),
    ("import functools\n\n@functools.lru_cache\ndef mode():\n    return None\n\n"
     "def step(x):\n    m = mode()\n    if m is not None:\n        print(x)\n    return x\n", []),
    # a generator returns no literal
    ("def flags():\n    yield False\n    return None\n\n"
     "def step(x):\n    f = flags()\n    if f is not None:\n        print(x)\n    return x\n", [PRINT]),
    # pop without a default raises where no call passes the key: unknown
    ("def step(x, **kwargs):\n    debug = kwargs.pop('debug')\n    if debug:\n        print(x)\n    return x\n",
     [PRINT]),
    ("def step(x, **kwargs):\n    debug = kwargs.pop('debug', False)\n    if debug:\n        print(x)\n    return x\n",
     []),
])
def test_locals_bound_once(tmp_path, body, expected):
    assert file_findings(tmp_path, body) == expected


@pytest.mark.parametrize("body, breaks", [
    ("def step(x):\n    verbose = False\n    if verbose:\n        print(x)\n    return x\n", False),
    ("def mode(n):\n    if n == 5:\n        return 1\n\n"
     "def step(x, n=5):\n    m = mode(n)\n    if m is None:\n        print(x)\n    return x\n", False),
    ("def mode(n):\n    if n == 5:\n        return 1\n\n"
     "def step(x, n=2):\n    m = mode(n)\n    if m is None:\n        print(x)\n    return x\n", True),
    ("def step(x, **kwargs):\n    debug = kwargs.pop('debug', False)\n    if debug:\n        print(x)\n    return x\n",
     False),
])
def test_the_compiler_agrees_on_locals_bound_once(body, breaks):
    pytest.importorskip("torch")
    from tcl.oracle import probe_source

    result = probe_source("import torch\n\n" + textwrap.dedent(body), "step", "(torch.randn(3),)")
    assert result.exception is None, result.exception
    assert bool(result.breaks) == breaks
