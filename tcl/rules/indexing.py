"""A tensor with no dims used as an index: default mode reads it into a Python int.

`x[:, t.argmax()]` or `y[:, :, pair[0]]` (a row `pair` of an iterated tensor of index pairs)
index with a 0-d tensor. Eager treats it as an integer index; Dynamo, in default mode, reads
the value out (GB0033, "Data dependent operator") and breaks the graph, also for a store
`out[:, pair[0]] = v`. Measured on 2.13: the break stays under capture_scalar_outputs (then as
an untraceable BINARY_SUBSCR) and under capture_dynamic_output_shape_ops; fullgraph=True traces
it with an unbacked int. A 1-d index tensor (`x[:, idx]`, `x[idx.argmax(-1)]`) is advanced
indexing and traces. Which values are 0-d is read from evidence only: a full reduction called
without a dim, `torch.<reduction>(t)` with one argument, an int-literal element of a row bound
by `for row in t`, and integer casts of these.
"""

from __future__ import annotations

import libcst as cst

from ..dataflow import is_tensor
from .base import DEFAULT_MODE, Example, Rule

# Reductions that give a 0-d tensor when called without a dim (`t.argmax()`, `t.sum()`).
FULL_REDUCTIONS = frozenset({"sum", "mean", "max", "min", "argmax", "argmin", "prod", "amax", "amin", "count_nonzero"})
INTEGER_CASTS = frozenset({"long", "int", "short"})


def zero_dim(node: cst.BaseExpression, ctx) -> bool:
    """Whether `node` is, by the evidence above, a tensor with no dims. The row rule: eager
    refuses `row[0]` of a 0-d row, so the rows of `for row in t` have a dim, and an element of
    the usual (n, 2) table of pairs has none."""
    while (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
           and node.func.attr.value in INTEGER_CASTS and not node.args):
        node = node.func.value
    if isinstance(node, cst.Call):
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in FULL_REDUCTIONS and not node.args:
            return is_tensor(ctx.kind(func.value))
        name = ctx.qualname(func) or ""
        if name.startswith("torch.") and name[len("torch."):] in FULL_REDUCTIONS and len(node.args) == 1 \
                and node.args[0].keyword is None:
            return is_tensor(ctx.kind(node.args[0].value))
        return False
    if isinstance(node, cst.Subscript) and isinstance(node.value, cst.Name) and node.value.value in ctx.tensor_rows:
        return (len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index)
                and isinstance(node.slice[0].slice.value, cst.Integer))
    return False


def _zero_dim_index(node: cst.Subscript, ctx) -> bool:
    return any(isinstance(e.slice, cst.Index) and zero_dim(e.slice.value, ctx) for e in node.slice)


def _value_reads_first(target: cst.Subscript, ctx) -> bool:
    """`out[:, pair[0]] = f(x[:, pair[0]])`: Python evaluates the value before the store, so
    the read breaks first; in the loop such code sits in, Dynamo then runs the frame eagerly
    and the store never breaks (demucs' covariance loop, measured on 2.13)."""
    parent = ctx.parent(1)
    if not (isinstance(parent, cst.AssignTarget) and parent.target is target):
        return False
    statement = ctx.parent(2)
    if not isinstance(statement, cst.Assign):
        return False
    found = []

    class Reads(cst.CSTVisitor):
        def visit_Subscript(self, node: cst.Subscript) -> None:
            if _zero_dim_index(node, ctx):
                found.append(node)

    statement.value.visit(Reads())
    return bool(found)


class ZeroDimTensorIndex(Rule):
    code = "TCL212"
    name = "zero-dim-tensor-index"
    message = "a tensor with no dims used as an index is read into a Python int and breaks the graph"
    fix = (
        "index with a 1-d tensor and keep the dim (x[:, t.argmax().view(1)] or torch.index_select / "
        "torch.gather), or loop over Python ints (for i, j in pairs.tolist(): outside the compiled region)"
    )
    gb = (((2, 0), "GB0033"),)
    modes = frozenset({DEFAULT_MODE})
    rationale = (
        "Eager treats a 0-d integer tensor as an integer index. In default mode Dynamo reads its "
        "value out (GB0033) and breaks the graph, reads and stores alike; neither "
        "capture_scalar_outputs nor capture_dynamic_output_shape_ops removes the break on 2.13, "
        "fullgraph=True traces it with an unbacked int. A 1-d index tensor traces."
    )
    VALID = [Example('''
import torch

@torch.compile
def fn(x, idx):
    best = x[0].argmax(-1, keepdim=True)
    return x[:, idx] + x[:, best] + x.index_select(1, idx)
''', args="(torch.randn(3, 4), torch.tensor([1, 2]))")]
    INVALID = [Example('''
import torch

@torch.compile
def fn(x):
    return x[:, x[0].argmax()] * 2  # BREAK
'''), Example('''
import torch

@torch.compile
def fn(y):
    out = torch.zeros(y.shape[0], 2, 2)
    for pair in torch.cartesian_prod(torch.arange(2), torch.arange(2)):
        out[:, pair[0], pair[1]] = y[:, pair[0]] * y[:, pair[1]]  # BREAK
    return out
''', args="(torch.randn(3, 2),)"), Example('''
import torch

@torch.compile
def fn(x, scores):
    out = x.clone()
    out[torch.argmax(scores)] = 0.0  # BREAK
    return out
''', args="(torch.randn(3, 4), torch.randn(3))")]

    def visit_Subscript(self, node: cst.Subscript, ctx) -> None:
        if is_tensor(ctx.kind(node.value)) and _zero_dim_index(node, ctx) and not _value_reads_first(node, ctx):
            ctx.report(self, node)
