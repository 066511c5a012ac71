"""Path facts that decide code tcl used to report: guard facts carried into `self.m()` calls
(tcl/guard_facts.py) and frames a loop's break makes Dynamo skip (recompile findings dropped,
tcl/walker.py `_note_skip`). Each source is also compiled on the installed torch, so what
tcl stops reporting is what the compiler does not break on or recompile."""

from __future__ import annotations

import textwrap

import pytest

from source_modules import load_module
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


# A break that makes Dynamo skip the frame (in a loop, a try body, a with block it cannot
# re-enter) hides the frame's later breaks: the frame runs eagerly and never reaches them. A
# helper the eager frame calls is a frame of its own, traced as usual.
MASKED = """
    import torch


    def helper(y):
        print("helper")
        return y


    class Ctx:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False


    class Model(torch.nn.Module):
        def forward(self, x):
            x = x + 1
            print("before")
            for i in range(2):
                print("in loop")
                x = x * 2
            y = x.sum().item()
            if x.sum() > 0:
                x = x - 1
            return helper(x) + y


    def in_try(x):
        try:
            print("in try")
        except ValueError:
            pass
        return x.sum().item()


    def in_with(x):
        with Ctx():
            print("in with")
        return x.sum().item()


    def in_no_grad(x):
        with torch.no_grad():
            print("in no_grad")
        return x.sum().item()


    def read_in_try(x):
        try:
            n = x.sum().item()
        except ValueError:
            n = 0
        print("after")
        return x * n


    try_step = torch.compile(in_try)
    with_step = torch.compile(in_with)
    no_grad_step = torch.compile(in_no_grad)
    read_step = torch.compile(read_in_try)
"""


def test_a_frame_skipping_break_hides_the_later_ones(tmp_path):
    assert check(tmp_path, MASKED) == [("TCL101", 6), ("TCL101", 21), ("TCL101", 23), ("TCL101", 33),
                                       ("TCL101", 41), ("TCL101", 47), ("TCL203", 48), ("TCL203", 53)]
    assert compiler_breaks(MASKED, "Model", "(torch.randn(3),)") == [6, 21, 23]
    for entry, lines in (("in_try", [33]), ("in_with", [41]), ("in_no_grad", [47, 48]), ("read_in_try", [53])):
        assert compiler_breaks(MASKED, entry, "(torch.randn(3),)") == lines, entry


def test_the_hiding_break_says_how_many_wait_behind_it(tmp_path):
    path = tmp_path / "model.py"
    path.write_text(textwrap.dedent(MASKED))
    result = run([str(path)], Config(torch_version="2.13"), jobs=1)
    loop = next(f for f in result.findings if f.line == 23)
    assert "Dynamo drops the whole frame Model.forward() to eager; 2 later breaks in it show once this one is fixed" \
        in loop.note
    # Under fullgraph=True a break is an error where it stands, and nothing hides another.
    assert ("TCL201", 26) in check(tmp_path, MASKED, mode="fullgraph")
    # A setting that removes the hiding break (capture_scalar_outputs for .item()) brings the
    # later ones back.
    assert ("TCL101", 56) not in check(tmp_path, MASKED)
    assert ("TCL101", 56) in check(tmp_path, MASKED, dynamo_config=["capture_scalar_outputs"])


# torchtune's chunked KD loss: the loop calls a loss whose break comes after an early return
# the call takes (`normalize=False`), so the loop does not skip the frame, and the test after
# it breaks. Every traced call passes normalize=False, so the early return is decided and the
# callee's own test after it is never traced (not reported; the compiler agrees).
EARLY_RETURN = """
    import torch


    def kl(x, normalize=True):
        if not normalize:
            return x.sum()
        total = x.sum()
        if total == 0:
            return total
        return x.sum() / total


    @torch.compile
    def chunked(xs):
        loss = 0.0
        for x in xs:
            loss = loss + kl(x, normalize=False)
        if loss == 0:
            return loss
        return loss * 2
"""


def test_a_callee_that_may_return_first_does_not_hide_later_breaks(tmp_path):
    # (TCL504: the loop over the list parameter unrolls over its length, a real recompile.)
    assert check(tmp_path, EARLY_RETURN) == [("TCL201", 19), ("TCL504", 17)]
    assert compiler_breaks(EARLY_RETURN, "chunked", "([torch.ones(3), torch.ones(3)],)") == [19]


# torchkbnufft's thread split: the loop that breaks sits in one branch of a shape test. When that
# branch runs, the frame is skipped and the rest of the branch is never traced; code after the
# branch may still be reached by the other branch, so it stays reported.
BRANCH_LOOP = """
    import torch


    @torch.compile
    def split(x, factors):
        threads = 1
        if x.ndim == 2:
            for factor in factors:
                if int(factor) > 1:
                    threads = int(factor)
            total = int(x.sum())
        else:
            total = 0
        return x * threads + total + x.sum().item()
"""


def test_a_skipping_break_hides_the_rest_of_its_branch(tmp_path):
    assert check(tmp_path, BRANCH_LOOP) == [("TCL203", 15), ("TCL204", 10)]
    assert compiler_breaks(BRANCH_LOOP, "split", "(torch.ones(2, 2), torch.tensor([1, 2]))") == [10]
    assert compiler_breaks(BRANCH_LOOP, "split", "(torch.ones(2), torch.tensor([1, 2]))") == [15]


# The same split with a loop that breaks in both branches (torchkbnufft's batched and unbatched
# cases): every call skips the frame, so what follows the `if` is hidden too. A return before the
# loop (pykeen's cached result) does not change that: every path to the later break passes the loop.
BOTH_BRANCHES_LOOP = """
    import torch


    @torch.compile
    def split(x, factors, cached=None):
        if cached is not None:
            return cached
        threads = 1
        if x.ndim == 2:
            for factor in factors:
                if int(factor) > 1:
                    threads = int(factor)
        else:
            for factor in factors:
                if int(factor) < 4:
                    threads = int(factor)
        return x * threads + x.sum().item()
"""


def test_a_skipping_break_in_both_branches_hides_what_follows(tmp_path):
    # (TCL504, the loop over `factors`, stays: after the early return tcl cannot tell that the
    # loop's break skips the frame on every call that reaches the loop, so it keeps the hazard.)
    assert check(tmp_path, BOTH_BRANCHES_LOOP) == [("TCL204", 12), ("TCL204", 16), ("TCL504", 11)]
    args = "(torch.ones(2, 2), torch.tensor([1, 2]))", "(torch.ones(2), torch.tensor([1, 2]))"
    assert compiler_breaks(BOTH_BRANCHES_LOOP, "split", args[0]) == [12]
    assert compiler_breaks(BOTH_BRANCHES_LOOP, "split", args[1]) == [16]
    # With the else branch free of breaks, the line after the `if` is reached and breaks.
    one_branch = BOTH_BRANCHES_LOOP.replace("if int(factor) < 4:\n                    threads = int(factor)",
                                            "if factor.numel() < 4:\n                    threads = 2")
    assert ("TCL203", 18) in check(tmp_path, one_branch)
    assert compiler_breaks(one_branch, "split", args[1]) == [18]


def test_show_hidden_reports_them_as_warnings_that_name_the_earlier_break(tmp_path):
    path = tmp_path / "model.py"
    path.write_text(textwrap.dedent(MASKED))
    result = run([str(path)], Config(torch_version="2.13", show_hidden=True), jobs=1)
    hidden = {f.line: f for f in result.findings if "hidden today" in f.note}
    assert sorted(hidden) == [25, 26, 36, 42, 56]
    assert "the break at line 23 makes Dynamo run Model.forward() eagerly before it" in hidden[25].note
    assert {f.severity for f in hidden.values()} == {"warning"}


# Entering a context manager Dynamo cannot trace breaks at the `with` and skips the frame.
LOCKED = """
    import threading

    import torch

    lock = threading.Lock()


    @torch.compile
    def locked(x):
        x = x + 1
        with lock:
            x = x * 2
        print("after")
        return x.sum().item()
"""


def test_an_untraceable_context_manager_hides_what_follows(tmp_path):
    assert check(tmp_path, LOCKED) == [("TCL411", 12)]
    assert compiler_breaks(LOCKED, "locked", "(torch.ones(3),)") == [12]


RESUMED = """
    import contextlib

    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel


    def in_context(x):
        with {context}:
            print("inside")
        return x.sum().item()


    step = torch.compile(in_context)
"""


@pytest.mark.parametrize("context", [
    "torch.no_grad()", "torch.enable_grad()", "torch.set_grad_enabled(False)", "torch.inference_mode()",
    "torch.autocast('cpu')", "torch.amp.autocast('cpu')", "contextlib.nullcontext()",
    "sdpa_kernel(SDPBackend.MATH)", "torch.profiler.record_function('r')",
])
def test_a_break_in_a_context_dynamo_resumes_in_hides_nothing(tmp_path, context):
    source = RESUMED.replace("{context}", context)
    assert check(tmp_path, source) == [("TCL101", 10), ("TCL203", 11)]
    assert compiler_breaks(source, "in_context", "(torch.ones(3),)") == [10, 11]


def test_a_break_in_a_device_context_skips_the_frame(tmp_path):
    source = RESUMED.replace("{context}", "torch.device('cpu')")
    assert check(tmp_path, source) == [("TCL101", 10)]
    # Dynamo names the `with` line for the print's break; the .item() after it is never traced.
    assert compiler_breaks(source, "in_context", "(torch.ones(3),)") == [9]


# speechbrain's reset_mem: two lists sized by one batch size; ultralytics-style aliases of a dim.
REPEATED_SIZE = """
    import torch


    @torch.compile
    def fn(x, batch_size: int):
        n = x.shape[0]
        probs = [0.0] * n
        m = x.size(0)
        rows = torch.tensor([[1, 2]] * m)
        if batch_size > 1:
            extra = [1.0] * n
        else:
            extra = []
        return x * len(probs) + rows.sum() + len(extra)
"""


def test_only_the_first_use_of_a_size_fixes_it(tmp_path):
    """Every later use of a size already fixed to one value adds no guard: Dynamo replaced the
    symbol by the constant (measured below: each recompile names only the first line)."""
    assert check(tmp_path, REPEATED_SIZE) == [("TCL505", 8)]
    shown = check(tmp_path, REPEATED_SIZE, show_hidden=True)
    assert shown == [("TCL505", 8), ("TCL505", 10), ("TCL505", 12)]


def test_the_compiler_cites_only_the_first_use_of_a_size(tmp_path):
    check_the_compiler_cites_line_8(tmp_path, REPEATED_SIZE, lambda torch, n: (torch.randn(n, 3), 2), (2, 3, 5, 7))


def check_the_compiler_cites_line_8(tmp_path, source, inputs, sizes):
    """Each of four sizes compiles again, and every specialisation names line 8 only."""
    torch = pytest.importorskip("torch")
    from tcl.verify.compile_trace import CompileTrace

    module = load_module(source, tmp_path, f"first_use_{abs(hash(source))}")
    torch._dynamo.reset()
    with CompileTrace() as trace:
        for n in sizes:
            module.fn(*inputs(torch, n))
            trace.next_call()
    compilations = trace.collect()
    assert len(compilations) == 4  # a recompile on every new size
    assert {s.line for c in compilations for s in c.specialisations} == {8}



# pytorchcv's ProPainter: a comprehension's iterable fixes the size, later loops over it add nothing.
COMPREHENSION_SIZE = """
    import torch


    @torch.compile
    def fn(x, m):
        b, time, c = x.shape
        feats = [x[:, i] for i in range(0, time)]
        masks = [m[:, i] for i in range(0, time)]
        out = []
        for i in range(0, time):
            out.append(feats[i] * masks[i])
        return torch.stack(out, 1)
"""


def test_a_comprehensions_iterable_fixes_the_size_in_the_frame(tmp_path):
    """The outermost iterable of a comprehension is evaluated once in the enclosing frame, so
    the first comprehension over `range(time)` fixes `time`; the later ones add no guard."""
    assert check(tmp_path, COMPREHENSION_SIZE) == [("TCL505", 8)]
    assert check(tmp_path, COMPREHENSION_SIZE, show_hidden=True) == [("TCL505", 8), ("TCL505", 9), ("TCL505", 11)]


def test_the_compiler_fixes_the_size_at_the_first_comprehension(tmp_path):
    check_the_compiler_cites_line_8(tmp_path, COMPREHENSION_SIZE,
                                    lambda torch, t: (torch.randn(2, t, 4), torch.randn(2, t, 4)), (3, 5, 7, 9))

# speechbrain's SSIMLoss.sequence_mask: the default's branch reads the data, every caller passes a size.
LENGTH_MASK = """
    import torch
    from torch import nn


    def sequence_mask(lengths, max_len=None):
        if max_len is None:
            max_len = lengths.max()
        steps = torch.arange(max_len, device=lengths.device)
        return steps.unsqueeze(0) < lengths.unsqueeze(1)


    class Masked(nn.Module):
        def forward(self, y, lengths):
            mask = sequence_mask(lengths, max_len=y.size(1))
            return y * mask.unsqueeze(-1)
"""


def test_a_parameter_every_caller_fills_with_a_size_is_not_none(tmp_path):
    assert check(tmp_path, LENGTH_MASK) == []
    unsized = LENGTH_MASK.replace("max_len=y.size(1)", "max_len=None")
    assert check(tmp_path, unsized) == [("TCL206", 9)]
    args = "torch.randn(2, 5, 3), torch.tensor([5, 3])"
    assert compiler_breaks(LENGTH_MASK, "Masked", args) == []
    assert compiler_breaks(unsized, "Masked", args) == [9]


# ultralytics' PositionEmbeddingSine: a lookup by (H, W), then a store under the same key.
SIZE_KEYED_CACHE = """
    import torch
    from torch import nn


    class Embed(nn.Module):
        def __init__(self):
            super().__init__()
            self.cache = {}

        def forward(self, x):
            key = (x.shape[-2], x.shape[-1])
            if key in self.cache:
                return self.cache[key][None].repeat(x.shape[0], 1, 1)
            pos = torch.arange(x.shape[-1], dtype=x.dtype).repeat(x.shape[-2], 1)
            self.cache[key] = pos
            return pos[None].repeat(x.shape[0], 1, 1)
"""


def test_a_store_under_a_fixed_key_is_still_reported(tmp_path):
    """The lookup fixes the sizes; the store adds a key to a dict the module keeps, which Dynamo
    guards by its length on the next call: another guard, so both lines are reported (the hit
    path's lookup in between is not)."""
    assert check(tmp_path, SIZE_KEYED_CACHE) == [("TCL505", 13), ("TCL505", 16)]


# auraloss' RandomResolutionSTFTLoss: loss modules rebuilt in a loop that breaks (np.random).
BUILT_WHERE_EAGER = """
    import numpy as np
    import torch
    from torch import nn


    class Inner(nn.Module):
        def __init__(self):
            super().__init__()

        def forward(self, x):
            return x * 2


    class Outer(nn.Module):
        def __init__(self, k):
            super().__init__()
            self.k = k
            self.inner = Inner()

        def forward(self, x):
            return self.inner(x) + self.k


    class Randomized(nn.Module):
        def __init__(self):
            super().__init__()
            self.losses = []

        def forward(self, x):
            self.losses = []
            for _ in range(2):
                k = int(np.random.rand() * 3)
                self.losses += [Outer(k)]
            return sum(loss(x) for loss in self.losses)
"""


def test_a_module_built_where_the_frame_runs_eagerly_breaks_in_its_init(tmp_path):
    """The loop's break makes Dynamo skip forward's frame; Outer(k) then runs eagerly, and
    Dynamo compiles Outer.__init__ as a frame of its own, whose `self` is not initialised: it
    breaks at super().__init__() (GB0119) and runs the rest eagerly, so Inner's does too."""
    assert check(tmp_path, BUILT_WHERE_EAGER) == [("TCL204", 33), ("TCL405", 9), ("TCL405", 17)]
    assert compiler_breaks(BUILT_WHERE_EAGER, "Randomized", "torch.randn(3)") == [9, 17, 33]
    # Built in traced code (no break before it), the same module traces: nothing reported.
    traced = BUILT_WHERE_EAGER.replace("k = int(np.random.rand() * 3)", "k = 2")
    assert check(tmp_path, traced) == []
    assert compiler_breaks(traced, "Randomized", "torch.randn(3)") == []


# pytorch-metric-learning's CrossBatchMemory: an index tensor kept on self by another method.
ARITHMETIC_ATTRIBUTE = """
    import torch
    from torch import nn


    def not_self(a, s, e):
        if e <= s:
            a = a + 1
        return a


    class Memory(nn.Module):
        def __init__(self):
            super().__init__()
            self.size = 5
            self.queue_idx = 0

        def forward(self, x):
            self.add(x)
            s, e = self.curr_batch_idx[0], self.curr_batch_idx[-1]
            return not_self(x, s, e)

        def add(self, x):
            self.curr_batch_idx = (torch.arange(self.queue_idx, self.queue_idx + len(x)) % self.size)
"""


def test_arithmetic_on_a_tensor_kept_on_self_is_a_tensor(tmp_path):
    assert check(tmp_path, ARITHMETIC_ATTRIBUTE) == [("TCL201", 7)]
    assert compiler_breaks(ARITHMETIC_ATTRIBUTE, "Memory", "torch.randn(3)") == [7]
    numbers = ARITHMETIC_ATTRIBUTE.replace("(torch.arange(self.queue_idx, self.queue_idx + len(x)) % self.size)",
                                           "(self.queue_idx + 3) % self.size")
    assert check(tmp_path, numbers.replace("s, e = self.curr_batch_idx[0], self.curr_batch_idx[-1]",
                                           "s, e = self.curr_batch_idx, 2")) == []


def test_the_compiler_names_a_counters_first_read(tmp_path):
    """TCL501 reports a module's int counter where the frame first reads it: the failing guard
    of every recompile names that line, not the update below it."""
    torch = pytest.importorskip("torch")
    from tcl.rules.counters import ModuleIntCounter
    from tcl.verify.compile_trace import CompileTrace

    example = next(e for e in ModuleIntCounter.INVALID if e.entry == "EveryFourth")
    marked = next(i for i, line in enumerate(example.code.splitlines(), 1) if "# BREAK" in line)
    module = load_module(example.code, tmp_path, "every_fourth")
    torch._dynamo.reset()
    model = torch.compile(module.EveryFourth(), backend="eager")
    with CompileTrace() as trace:
        for _ in range(4):
            model(torch.randn(3))
            trace.next_call()
    reasons = [c.reason for c in trace.collect() if c.reason]
    assert len(reasons) == 3  # a recompile on every call after the first
    assert all(f"every_fourth.py:{marked} in forward" in reason for reason in reasons), reasons


COUNTERS = """
    import torch
    from torch import nn


    class Drop(nn.Module):
        def __init__(self):
            super().__init__()
            self.cnt = 0
            self.step = 0

        def forward(self, x):
            if self.cnt + 2 > 8:
                self.cnt = 0
            x = x * self.cnt
            self.cnt = self.cnt + 2
            if self.training and x.dim() > 3:
                raise ValueError(f"bad input at step {self.step}")
            y = x + self.step
            self.step += 1
            return y
"""


def test_the_first_read_every_update_makes_is_reported(tmp_path):
    """speechbrain's LiGRU: `if cnt + n > limit: cnt = 0` is a reset before the update, not an
    update (line 13). A read under a branch the update is outside of (`raise ...(f"...
    {self.step}")` under a data test) is not traced on the calls that update the counter; the
    first read every such call makes is (line 19)."""
    assert check(tmp_path, COUNTERS) == [("TCL501", 13), ("TCL501", 19)]


LIST_OF_SIZES = """
    import torch


    def as_list(x, y):
        b, t = y.shape
        assert list(x.size()) == [b, t, 4], "bad input"
        return x * 2


    def per_dim(x, y):
        b, t = y.shape
        assert x.size(0) == b and x.size(1) == t and x.size(2) == 4, "bad input"
        return x * 2


    as_list_step = torch.compile(as_list)
    per_dim_step = torch.compile(per_dim)
"""


@pytest.mark.parametrize("entry", ["as_list", "per_dim"])
def test_a_list_of_sizes_compared_with_sizes_does_not_specialise(tmp_path, entry):
    """Issue 18 asked for a rewrite of `list(x.size()) == [...]` into per-dimension tests. On 2.13
    the list form compared with other sizes stays symbolic, like the per-dimension form (one
    automatic-dynamic recompile over four sizes of either dim); compared with a literal both
    specialise. There is nothing to rewrite, and no rule reports it."""
    torch = pytest.importorskip("torch")
    from tcl.verify.recompiles import count_compiles

    module = load_module(LIST_OF_SIZES, tmp_path, "list_of_sizes")
    fn = getattr(module, entry)
    assert count_compiles(fn, [(torch.randn(n, 16, 4), torch.randn(n, 16)) for n in (2, 3, 5, 7)]) == 2
    assert count_compiles(fn, [(torch.randn(2, n, 4), torch.randn(2, n)) for n in (16, 17, 19, 23)]) == 2
    assert check(tmp_path, LIST_OF_SIZES) == []
