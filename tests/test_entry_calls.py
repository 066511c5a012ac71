"""What the user's calls of a compiled object pass: the constants an entry is traced with.

`gen = torch.compile(lm.generate); gen(x)` traces generate with every parameter the call leaves
out at its default, and Dynamo decides a test on such a constant (`if hook is not None:`)
before tracing: its body is never traced, so what it holds is no finding. Each case is checked
on the compiler (tests below compile the same calls)."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from source_modules import install, write
from tcl.config import Config
from tcl.entry_calls import compiled_call_literals
from tcl.params import UNKNOWN
from tcl.runner import run

LIBRARY = """
    import torch
    import torch.nn as nn


    class Generator(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(4, 4)

        def forward(self, x, mask=None):
            if mask is not None:
                print("masked")
            return self.proj(x)

        def generate(self, x, streamer=None, steps=2, mode="greedy", **kwargs):
            if streamer is not None:
                print("streaming", steps)
            if mode == "beam":
                x = x + x.sum().item()
            for _ in range(steps):
                x = self(x)
            return x
"""


@pytest.fixture
def site_packages(tmp_path, monkeypatch):
    return install(tmp_path, monkeypatch, {
        "genlib/__init__.py": "from .model import Generator\nfrom .options import Decoder\n",
        "genlib/model.py": LIBRARY,
        "genlib/options.py": OPTIONS,
    })


def library_findings(tmp_path, script):
    user = write(tmp_path / "project", "script.py", script)
    result = run([str(user)], Config(torch_version="2.13", follow_imports=True, api_entries="off"), jobs=1)
    assert not result.all_errors
    return sorted((f.code, f.library_line) for f in result.findings)


STREAMING = ("TCL101", 18)  # print("streaming", steps)
BEAM = ("TCL203", 20)  # x.sum().item()
MASKED = ("TCL101", 13)  # print("masked")
STEPS = ("TCL502", 21)  # for _ in range(steps): a new unrolled graph for each new value


@pytest.mark.parametrize("calls, expected", [
    # every call leaves streamer, mode and mask at their defaults: neither branch is traced
    ("gen(x)\ngen(x)\n", []),
    ("gen(x, steps=3)\n", []),
    # steps differs between the calls: the loop over it recompiles (TCL502)
    ("gen(x)\ngen(x, steps=3)\n", [STEPS]),
    ("out = gen(x, None, 3)\n", []),
    # a non-literal argument, or two calls that disagree, leave the parameter unknown
    ("gen(x, streamer=print)\n", [STREAMING]),
    ("gen(x, mode='greedy')\ngen(x, mode='beam')\n", [BEAM]),
    ("gen(x, mode='beam')\n", [BEAM]),
    # calls we cannot read: spread arguments, the compiled object passed on or never called
    ("gen(x, **options)\n", [STREAMING, BEAM, STEPS]),
    ("run(gen)\n", [STREAMING, BEAM, STEPS]),
    ("", [STREAMING, BEAM, STEPS]),
    # attribute reads are no calls of the compiled object
    ("print(gen.__name__)\ngen(x)\n", []),
])
def test_a_compiled_method_is_traced_with_what_its_calls_pass(tmp_path, site_packages, calls, expected):
    script = ("import torch\nfrom genlib import Generator\n\nmodel = Generator()\nx = torch.randn(2, 4)\n"
              "options = {}\ngen = torch.compile(model.generate)\n" + calls)
    # generate calls forward with one argument: mask stays None there whatever the user passes
    assert library_findings(tmp_path, script) == expected


@pytest.mark.parametrize("script, expected", [
    # `model = torch.compile(model)`: the calls after the statement, not the eager ones before
    ("model = Generator()\nmodel(x, mask=x)\nmodel = torch.compile(model)\nmodel.eval()\nmodel(x)\n", []),
    ("model = Generator()\nmodel = torch.compile(model)\nmodel(x, mask=x > 0)\n", [MASKED]),
    # model.compile(): the module's later calls
    ("model = Generator()\nmodel.compile()\nwith torch.no_grad():\n    model(x)\n", []),
    ("model = Generator()\nmodel.compile()\nevaluate(model)\n", [MASKED]),
    # a function that calls the compiled object counts, wherever it is defined
    ("def main():\n    model = torch.compile(Generator())\n\n    def step():\n        return model(x, mask=x)\n\n"
     "    return step()\n", [MASKED]),
    ("def main():\n    model = torch.compile(Generator())\n    return model(x)\n", []),
    # rebound after the compile: later calls may be of something else
    ("model = torch.compile(Generator())\nmodel(x)\nmodel = other\nmodel(x, mask=x)\n", [MASKED]),
])
def test_a_compiled_module_is_traced_with_what_its_calls_pass(tmp_path, site_packages, script, expected):
    script = "import torch\nfrom genlib import Generator\n\nx = torch.randn(2, 4)\nother = None\n\n" + script
    assert library_findings(tmp_path, script) == expected


OPTIONS = """
    import torch


    class Decoder:
        def decode(self, x, **kwargs):
            if kwargs.get("paged"):
                print("paged")
            if "chunk" in kwargs or kwargs.get("mode", "greedy") != "greedy":
                x = x[x > 0]
            self.configure(kwargs)
            if kwargs.get("late") is not None:
                print("late")
            return x

        def configure(self, options):
            options["late"] = 1
"""
PAGED = ("TCL101", 8)
CHUNK = ("TCL301", 10)
LATE = ("TCL101", 13)  # after configure(kwargs), which changes the dict: no longer known (a true break)


@pytest.mark.parametrize("calls, expected", [
    ("decode(x)\n", [LATE]),
    ("decode(x, paged=False)\n", [LATE]),
    ("decode(x, paged=True)\n", [PAGED, LATE]),
    ("decode(x, chunk=4)\n", [CHUNK, LATE]),
    ("decode(x, mode='beam')\n", [CHUNK, LATE]),
    # paged not a literal; mode passed by one call only: unknown (its default is not used)
    ("decode(x, mode='greedy')\ndecode(x, paged=flag)\n", [PAGED, CHUNK, LATE]),
    ("decode(x, **opts)\n", [PAGED, CHUNK, LATE]),
])
def test_what_the_calls_put_in_kwargs(tmp_path, site_packages, calls, expected):
    script = ("import torch\nfrom genlib import Decoder\n\nx = torch.randn(4)\nflag = True\nopts = {}\n"
              "decode = torch.compile(Decoder().decode)\n" + calls)
    assert library_findings(tmp_path, script) == sorted(expected)


@pytest.mark.parametrize("call, lines", [
    # the late print breaks every time (configure adds the key); the paged one when passed
    ("Decoder().decode(x)", [13]),
    ("Decoder().decode(x, paged=True)", [8, 13]),
    ("Decoder().decode(x, chunk=4)", [10, 13]),
])
def test_the_compiler_decides_kwargs_lookups(call, lines):
    pytest.importorskip("torch")
    from tcl.oracle import probe_source

    source = textwrap.dedent(OPTIONS) + f"\n\ndef entry(x):\n    return {call}\n"
    result = probe_source(source, "entry", "(torch.randn(4),)")
    assert result.exception is None, result.exception
    assert sorted({b.line for b in result.breaks if b.line <= 17}) == lines  # the entry's own line too


def test_a_function_of_the_file_compiled_by_name(tmp_path):
    source = """
        import torch

        def step(x, debug=False):
            if debug:
                print("step", x.shape)
            return x * 2

        fast = torch.compile(step)
        fast(torch.randn(3))
    """
    source = textwrap.dedent(source)
    path = write(tmp_path, "train.py", source)
    result = run([str(path)], Config(torch_version="2.13", api_entries="off"), jobs=1)
    assert [f.code for f in result.findings] == []
    write(tmp_path, "train.py", source + "fast(torch.randn(3), debug=True)\n")
    result = run([str(path)], Config(torch_version="2.13", api_entries="off"), jobs=1)
    assert not result.all_errors
    assert [(f.code, f.line) for f in result.findings] == [("TCL101", 6)]


def test_literals_of_each_call():
    module = cst.parse_module(textwrap.dedent("""
        gen = torch.compile(lm.generate)
        gen(ids, max_new_tokens=4, streamer=None)
        gen(ids, 2, do_sample=True)
    """))
    call = module.body[0].body[0].value
    assert compiled_call_literals(module, call) == [
        {0: UNKNOWN, "max_new_tokens": 4, "streamer": None}, {0: UNKNOWN, 1: 2, "do_sample": True}]


def test_the_compiler_does_not_trace_a_branch_on_a_default():
    """What the cases above rest on: Dynamo specialises on None, ints and strings passed (or
    left at their defaults), so a branch on one that is not taken is never traced."""
    torch = pytest.importorskip("torch")
    from torch._dynamo.utils import counters

    namespace: dict = {}
    exec(compile(textwrap.dedent(LIBRARY), "genlib.py", "exec"), namespace)
    model = namespace["Generator"]()
    x = torch.randn(2, 4)
    for kwargs, breaks in [({}, 0), ({"steps": 3}, 0), ({"streamer": print}, 1), ({"mode": "beam"}, 1)]:
        torch._dynamo.reset()
        counters.clear()
        torch.compile(model.generate, backend="eager")(x, **kwargs)
        assert (sum(counters["graph_break"].values()) > 0) == bool(breaks), kwargs
    torch._dynamo.reset()
    counters.clear()
    torch.compile(model, backend="eager")(x, mask=x > 0)
    assert sum(counters["graph_break"].values()) > 0
    torch._dynamo.reset()
