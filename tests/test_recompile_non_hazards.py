"""Patterns the recompile issue asked about that do not keep recompiling on the installed torch.

Each was measured before a rule was considered (six calls, compilations counted per call by
tcl.verify.compile_trace, backend "eager", CPU); none recompiles after the automatic-dynamic
one, so tcl has no rule for them and must not grow one without new measurements. If a release
changes that, these tests fail and say which pattern to write a rule for. A str option that
takes a new value on every call does recompile each time; it is kept here as the positive
control that the counting works (no rule: the source cannot tell how many values it takes).
"""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")
from tcl.verify.compile_trace import CompileTrace, persistent  # noqa: E402

CALLS = 6


def _compilations(call) -> list:
    torch._dynamo.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with CompileTrace() as trace:
            for i in range(CALLS):
                trace.next_call()
                call(i)
    torch._dynamo.reset()
    return trace.compilations


class _Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)
        self.drop = torch.nn.Dropout(0.1)

    def forward(self, x):
        return self.drop(self.lin(x))


def _lr_from_param_group():
    group = {"lr": 0.1}
    step = torch.compile(lambda p: p * group["lr"], backend="eager")

    def call(i):
        group["lr"] = 0.1 / (i + 1)  # an LR schedule read inside the compiled step
        step(torch.randn(3))
    return call


def _training_toggle():
    net = _Net()
    compiled = torch.compile(net, backend="eager")

    def call(i):
        net.train(i % 2 == 0)
        compiled(torch.randn(2, 3))
    return call


def _requires_grad_flip():
    compiled = torch.compile(lambda x: x * 2, backend="eager")
    return lambda i: compiled(torch.randn(3, requires_grad=i % 2 == 0))


def _compile_inside_step():
    def inner(x):
        return x.sin() * 2

    return lambda i: torch.compile(inner, backend="eager")(torch.randn(3))


def _dtype_flip():
    compiled = torch.compile(lambda x: x * 2, backend="eager")
    return lambda i: compiled(torch.randn(3, dtype=torch.float32 if i % 2 else torch.float64))


def _closure_counter():
    calls = 0

    def step(x):
        nonlocal calls
        calls += 1
        return x * 2

    compiled = torch.compile(step, backend="eager")
    return lambda i: compiled(torch.randn(3))


class _Meter:
    def __init__(self):
        self.count = 0

    def update(self):
        self.count += 1


def _counter_of_an_argument():
    meter = _Meter()

    def step(x, meter):
        meter.update()
        return x * 2

    compiled = torch.compile(step, backend="eager")
    return lambda i: compiled(torch.randn(3), meter)


NON_HAZARDS = {
    "a float hyperparameter changed every step (LR schedule)": _lr_from_param_group,
    "self.training toggled between calls": _training_toggle,
    "requires_grad flipping between calls": _requires_grad_flip,
    "torch.compile called inside a per-step function": _compile_inside_step,
    "dtype alternating between two values": _dtype_flip,
    # TCL501 reports a plain object's counter only where the object is state (a module's
    # attribute, a global); these two are its measured exceptions.
    "a closure's nonlocal int counter": _closure_counter,
    "an int counter of an object passed in as an argument": _counter_of_an_argument,
}


@pytest.mark.parametrize("pattern", list(NON_HAZARDS), ids=list(NON_HAZARDS))
def test_pattern_settles_after_automatic_dynamic(pattern):
    compilations = _compilations(NON_HAZARDS[pattern]())
    assert len(compilations) <= 2, (pattern, len(compilations))
    assert not persistent(compilations), pattern


def test_the_count_sees_a_persistent_recompile():
    compiled = torch.compile(lambda x, mode: x * 2 if mode == "a" else x * 3, backend="eager")
    compilations = _compilations(lambda i: compiled(torch.randn(3), "abcdef"[i]))
    assert len(compilations) == CALLS and persistent(compilations)
