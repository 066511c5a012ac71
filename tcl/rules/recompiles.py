"""Python values that torch.compile guards on and that change on every call: recompiles."""

from __future__ import annotations

import libcst as cst

from ..dataflow import Kind
from .base import Example, Rule


class ModuleIntCounter(Rule):
    code = "TCL501"
    name = "int-counter-mutated-in-forward"
    message = (
        "Python int attribute self.{attr} changes inside forward: every call recompiles "
        "(guard self.{attr} == N) until the recompile limit, then the frame runs eagerly"
    )
    fix = (
        "keep the counter in a tensor buffer (register_buffer('step', torch.zeros((), dtype=torch.long)) "
        "and step.add_(1)), or set torch._dynamo.config.allow_unspec_int_on_nn_module = True"
    )
    gb = (((2, 0), "GB0039"),)
    category = "recompile"
    rationale = (
        "Dynamo specialises on Python ints stored on modules. `self.step += 1` in forward makes "
        "each call see a new value, fail the guard and compile again; after "
        "torch._dynamo.config.recompile_limit (8) compilations it gives up and runs eagerly."
    )
    VALID = [Example('''
import torch
from torch import nn

class Ema(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("step", torch.zeros((), dtype=torch.long))

    def forward(self, x):
        self.step.add_(1)
        return x * 2
''', entry="Ema")]
    INVALID = [Example('''
import torch
from torch import nn

class Ema(nn.Module):
    def __init__(self):
        super().__init__()
        self.step = 0

    def forward(self, x):
        self.step += 1  # BREAK
        return x * 2
''', entry="Ema")]

    def visit_AugAssign(self, node: cst.AugAssign, ctx) -> None:
        target = node.target
        if (
            isinstance(target, cst.Attribute)
            and isinstance(target.value, cst.Name)
            and target.value.value == "self"
            and ctx.function.owner is not None
            and ctx.function.owner.is_module
            and ctx.kind(target) == Kind.META
            and isinstance(node.value, (cst.Integer, cst.Float))
        ):
            ctx.report(self, node, self.message.format(attr=target.attr.value))


class RangeOverIntArgument(Rule):
    code = "TCL502"
    name = "loop-over-int-argument"
    message = (
        "Python loop over range({arg}) with the int argument {arg}: each new value of {arg} "
        "compiles a new unrolled graph"
    )
    fix = "vectorise the loop, pass a fixed (padded) count, or make the count part of a tensor's shape"
    gb = (((2, 0), "GB0039"),)
    category = "recompile"
    rationale = (
        "Dynamo unrolls Python loops and guards on the trip count, so an int argument that "
        "varies between calls recompiles every time (it never becomes dynamic, unlike an int "
        "used only in arithmetic)."
    )
    VALID = [Example('''
import torch

@torch.compile
def fn(x):
    for _ in range(x.shape[0]):
        x = x * 0.5
    return x
''', calls="[(torch.randn(4, 4),), (torch.randn(4, 4),), (torch.randn(4, 4),)]")]
    INVALID = [Example('''
import torch

@torch.compile
def fn(x, steps: int):
    for _ in range(steps):  # BREAK
        x = x * 0.5
    return x
''', calls="[(torch.randn(4, 4), 1), (torch.randn(4, 4), 2), (torch.randn(4, 4), 3)]")]

    def visit_For(self, node: cst.For, ctx) -> None:
        iterable = node.iter
        if not (isinstance(iterable, cst.Call) and ctx.qualname(iterable.func) == "builtins.range"):
            return
        if not ctx.is_entry:
            return
        for arg in iterable.args:
            value = arg.value
            if isinstance(value, cst.Name) and ctx.is_parameter(value.value) and ctx.kind(value) == Kind.META:
                ctx.report(self, iterable, self.message.format(arg=value.value))
                return
