"""Path facts that decide code tcl used to report: guard facts carried into `self.m()` calls
(tcl/guard_facts.py) and frames a loop's break makes Dynamo skip (recompile findings dropped,
tcl/walker.py `_reached_in_loop`). Each source is also compiled on the installed torch, so what
tcl stops reporting is what the compiler does not break on or recompile."""

from __future__ import annotations

import textwrap

import pytest

from tcl.config import Config
from tcl.runner import run


def check(tmp_path, source, **options):
    path = tmp_path / "model.py"
    path.write_text(textwrap.dedent(source))
    result = run([str(path)], Config(torch_version="2.13", **options), jobs=1)
    assert not result.all_errors
    return sorted((f.code, f.line) for f in result.findings)


def compiler_breaks(source, entry, args):
    pytest.importorskip("torch")
    from tcl.oracle import probe_source

    result = probe_source(textwrap.dedent(source), entry, args)
    assert result.exception is None, result.exception
    return sorted({b.line for b in result.breaks})


# peft's LoRA layers: forward unmerges only when merged; unmerge warns when there is nothing to do.
UNMERGE = """
    import warnings
    import torch
    from torch import nn


    class Layer(nn.Module):
        def __init__(self, merged=True):
            super().__init__()
            self.base = nn.Linear(4, 4)
            self.merged_adapters = ["default"] if merged else []
            self.cache = torch.zeros(4) if merged else None

        @property
        def merged(self):
            return bool(self.merged_adapters)

        def unmerge(self):
            if not self.merged:
                warnings.warn("Already unmerged. Nothing to do.")
                return
            while len(self.merged_adapters) > 0:
                self.merged_adapters.pop()

        def reset(self):
            if self.cache is None:
                print("no cache")
                return
            self.cache = None

        def forward(self, x):
            if self.merged:
                self.unmerge()
            if self.cache is not None:
                self.reset()
            return self.base(x)
"""


def test_a_callers_guard_decides_the_methods_test(tmp_path):
    assert check(tmp_path, UNMERGE) == []
    assert compiler_breaks(UNMERGE, "Layer", "(torch.randn(2, 4),)") == []


def test_an_unguarded_call_keeps_the_finding(tmp_path):
    source = UNMERGE.replace("            if self.merged:\n                self.unmerge()",
                             "            self.unmerge()")
    assert check(tmp_path, source) == [("TCL105", 20)]
    source = source.replace("merged=True", "merged=False")
    assert compiler_breaks(source, "Layer", "(torch.randn(2, 4),)") == [20]


def test_one_unguarded_caller_is_enough(tmp_path):
    source = UNMERGE.replace("            return self.base(x)",
                             "            self.unmerge()\n            return self.base(x)")
    assert check(tmp_path, source) == [("TCL105", 20)]


def test_an_assignment_ends_the_fact(tmp_path):
    source = UNMERGE.replace("            if self.merged:\n                self.unmerge()",
                             "            if self.merged:\n                self.merged_adapters = []\n"
                             "                self.unmerge()")
    # `merged` is a property over merged_adapters: tcl cannot see that; an assignment to the
    # tested attribute itself is what it tracks.
    assert check(tmp_path, source) == []
    source = UNMERGE.replace("        def reset(self):\n",
                             "        def reset(self):\n            self.cache = None\n")
    assert check(tmp_path, source) == [("TCL101", 28)]


def test_a_compiled_method_gets_no_callers_facts(tmp_path):
    source = UNMERGE + "\n\n    layer = Layer()\n    step = torch.compile(layer.unmerge)\n"
    assert check(tmp_path, source) == [("TCL105", 20)]


# A graph break inside a loop makes Dynamo skip the whole frame: nothing in it recompiles.
LOOP_BREAK = """
    import torch


    def log(y):
        print("step")
        return y + 1


    @torch.compile
    def fn(x):
        y = x
        for i in range(x.shape[0]):
            y = log(y)
        return y
"""


def test_a_loop_break_leaves_no_recompile_finding(tmp_path):
    assert check(tmp_path, LOOP_BREAK) == [("TCL101", 6)]
    # Under fullgraph=True the break is an error; once it is fixed, the trip count recompiles.
    assert check(tmp_path, LOOP_BREAK, mode="fullgraph") == [("TCL101", 6), ("TCL505", 13)]


def test_a_break_after_the_loop_keeps_the_recompile_finding(tmp_path):
    source = LOOP_BREAK.replace("            y = log(y)\n        return y",
                                "            y = y + 1\n        return log(y)")
    assert check(tmp_path, source) == [("TCL101", 6), ("TCL505", 13)]


def test_the_skipped_frame_compiles_once(tmp_path):
    pytest.importorskip("torch")
    from tcl.verify.compile_trace import CompileTrace, persistent
    import torch

    namespace: dict = {}
    exec(compile(textwrap.dedent(LOOP_BREAK), "<loop_break>", "exec"), namespace)
    fn = namespace["fn"]
    torch._dynamo.reset()
    with CompileTrace() as trace:
        for n in (3, 5, 7, 9):
            trace.next_call()
            fn(torch.randn(n, 2))
    assert persistent(trace.compilations) == []
    source = LOOP_BREAK.replace("            y = log(y)\n        return y",
                                "            y = y + 1\n        return log(y)")
    exec(compile(textwrap.dedent(source), "<after_loop>", "exec"), namespace)
    torch._dynamo.reset()
    with CompileTrace() as trace:
        for n in (3, 5, 7, 9):
            trace.next_call()
            namespace["fn"](torch.randn(n, 2))
    assert persistent(trace.compilations) != []


# A helper's flag that every traced caller leaves at its default (or passes as one literal).
CONSTANT_FLAGS = """
    import warnings
    import torch


    def helper(x, last_dim_is_batch=False, mode="sum", mask=None):
        if last_dim_is_batch:
            warnings.warn("last_dim_is_batch is deprecated")
        if mode != "sum":
            print("other mode")
        if mask is not None:
            x = x[mask]
        return x


    def scale(x, verbose=False):
        if verbose:
            print("scaling")
        return x * 2


    @torch.compile
    def fn(x):
        y = helper(x, mode="sum")
        return scale(y) + scale(x, True)
"""


def test_a_parameter_every_caller_leaves_at_one_literal_decides_its_tests(tmp_path):
    # helper's three tests are decided; scale gets False and True: its print is live.
    assert check(tmp_path, CONSTANT_FLAGS) == [("TCL101", 18)]
    assert compiler_breaks(CONSTANT_FLAGS, "fn", "(torch.randn(3),)") == [18]


def test_a_spread_call_decides_nothing(tmp_path):
    source = CONSTANT_FLAGS.replace("y = helper(x, mode=\"sum\")", "y = helper(x, **{})")
    assert ("TCL105", 8) in check(tmp_path, source)


def test_a_setting_that_removes_the_loops_break_keeps_the_recompile_finding(tmp_path):
    source = LOOP_BREAK.replace('            y = log(y)', '            y = y + x[0, 0].item()')
    assert check(tmp_path, source) == [("TCL203", 14)]
    source = "    import torch._dynamo\n    torch._dynamo.config.capture_scalar_outputs = True\n" + source
    assert check(tmp_path, source) == [("TCL505", 15)]
