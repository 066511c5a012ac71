"""Rules that exist only under a Dynamo setting the program turns on (tcl/dynamo_settings.py).

With `capture_scalar_outputs = True`, `.item()` and `float(t)` no longer end the graph: the value
becomes a symbolic scalar, and arithmetic, slicing and factory sizes built from it stay in the
graph. What cannot stay is Python control flow that needs the scalar's truth value: the break
moves from the read to the branch (measured on 2.13: `v = x.sum().item(); if v > 0:` breaks at
the `if` with GB0170, `x * (v * 2 + 1)`, `x[:n]`, `torch.zeros(n)`, `math.sqrt(v)`, `f"{v}"`
and `assert v == v` do not break). Without the setting these findings are TCL203/TCL204's. Under
fullgraph=True, which captures scalars itself, the same branch raises instead.
"""

from __future__ import annotations

import libcst as cst

from ..dataflow import Kind
from .base import ALL_MODES, Example, Rule


class CapturedScalarBranch(Rule):
    code = "TCL208"
    explains_value = True
    name = "captured-scalar-branch"
    message = ("Python branch on a scalar read from tensor data ({construct}) breaks the graph when scalars are "
               "captured (capture_scalar_outputs, fullgraph=True)")
    fix = (
        "keep the decision in the graph: torch.where(t > 0, a, b) on the tensor instead of a Python "
        "if on its value, or torch.cond(pred, true_fn, false_fn, operands) for branches with different work"
    )
    gb = (((2, 0), "GB0170"),)
    # fullgraph=True captures scalars itself (tcl.dynamo_settings.FULLGRAPH_SETTINGS): the branch
    # raises there (UserError, "Could not guard on data-dependent expression"; measured on 2.13).
    modes = ALL_MODES
    needs_settings = frozenset({"capture_scalar_outputs"})
    rationale = (
        "capture_scalar_outputs keeps `.item()` in the graph as an unbacked symbolic value; Python "
        "needs a real bool for `if`, `while` and conditional expressions, so Dynamo ends the graph "
        "at the branch instead of at the read."
    )
    VALID = [Example('''
import torch

@torch.compile
def fn(x):
    v = x.sum().item()
    return x * (v * 2 + 1)
''', settings=("capture_scalar_outputs",)), Example('''
import torch

@torch.compile
def fn(x):
    n = int(x.abs().sum()) % 3 + 1
    return x[:n]
''', settings=("capture_scalar_outputs",))]
    INVALID = [Example('''
import torch

@torch.compile
def fn(x):
    v = x.sum().item()
    if v > 0:  # BREAK
        return x + 1
    return x - 1
''', settings=("capture_scalar_outputs",)), Example('''
import torch

@torch.compile
def fn(x):
    scale = float(x.abs().max())
    return x * (2.0 if scale > 1.0 else 3.0)  # BREAK
''', settings=("capture_scalar_outputs",))]

    def visit_If(self, node: cst.If, ctx) -> None:
        if ctx.kind(node.test) == Kind.SCALAR:
            ctx.report(self, node.test, self.message.format(construct="if"))

    def visit_While(self, node: cst.While, ctx) -> None:
        if ctx.kind(node.test) == Kind.SCALAR:
            ctx.report(self, node.test, self.message.format(construct="while"))

    def visit_IfExp(self, node: cst.IfExp, ctx) -> None:
        if ctx.kind(node.test) == Kind.SCALAR:
            ctx.report(self, node.test, self.message.format(construct="conditional expression"))
