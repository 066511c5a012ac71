"""In-place views of graph inputs (TCL421): `x.t_()`, `self.term.detach_()` in compiled code.

An in-place view op (`t_`, `transpose_`, `unsqueeze_`, `squeeze_`, `as_strided_`, `detach_`,
`swapdims_`) rewrites the tensor object's own view of its storage. Dynamo traces it on a tensor
the graph made, but not on a graph input -- the compiled frame's argument, a module's buffer or
parameter, any tensor attribute of an object -- and breaks the graph there ("Getting an inplace
view on a graph input is not supported", GB0148), then resumes after it. Which methods do so is
measured per release by scripts/gen_torch_facts.py (`inplace_view_methods`: aten's
`inplace_view` tag, plus the composite detach_/squeeze_/swap aliases, each called on a frame
input). `resize_` is TCL406's.

Reported where the receiver is surely a graph input (`_graph_input`): `self.<attr>` that the
function does not assign, a parameter of the compiled function itself that it has not rebound,
an attribute or list/dict element of those, a loop variable over one, or a name bound to any of
these (`grad = p.grad.data` in an optimizer step). A helper's parameter may hold a tensor its
caller made, so it is left alone.
"""

from __future__ import annotations

import libcst as cst

from .. import torch_facts
from ..dataflow import Kind, is_tensor
from ..names import dotted
from .base import Example, Rule

# Used only where the target release has no generated facts (measured on 2.13 and 2.14).
FALLBACK_INPLACE_VIEWS = frozenset({
    "as_strided_", "detach_", "squeeze_", "swapaxes_", "swapdims_", "t_", "transpose_", "unsqueeze_",
})


def _inplace_views(version) -> frozenset[str] | dict[str, str]:
    return torch_facts.measured(version, "inplace_view_methods") or FALLBACK_INPLACE_VIEWS


_ASSIGNED: dict[int, tuple[cst.FunctionDef, frozenset[str]]] = {}  # function node id -> (node, attrs)


def _assigned_self_attributes(function: cst.FunctionDef) -> frozenset[str]:
    """`attr` of every `self.attr = ...` / `self.attr += ...` in the function's own body, read
    once per function node (each in-place view call on `self.x` asks)."""
    kept = _ASSIGNED.get(id(function))
    if kept is None or kept[0] is not function:
        if len(_ASSIGNED) > 4096:
            _ASSIGNED.clear()
        kept = _ASSIGNED[id(function)] = (function, frozenset(_self_targets(function)))
    return kept[1]


def _self_targets(function: cst.FunctionDef) -> set[str]:
    found: set[str] = set()

    def target(node: cst.BaseExpression) -> None:
        if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
            found.add(node.attr.value)
        elif isinstance(node, (cst.Tuple, cst.List)):
            for element in node.elements:
                target(element.value)

    class Targets(cst.CSTVisitor):
        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            target(node.target)

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            target(node.target)

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            target(node.target)

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False

    function.body.visit(Targets())
    return found


class InplaceViewOfInput(Rule):
    code = "TCL421"
    name = "inplace-view-of-graph-input"
    message = ".{method}() on {what}, a graph input: Dynamo cannot make an in-place view of one and breaks the graph"
    fix = (
        "use the out-of-place view and rebind it (`x = x.t()`, `self.buf = self.buf.detach()`), "
        "or make the view outside the compiled region"
    )
    gb = (((2, 0), "GB0148"),)
    rationale = (
        "In-place view ops change the tensor object's own metadata; Dynamo supports that on tensors "
        "the graph creates, not on the frame's inputs, parameters or buffers (measured on 2.13 and "
        "2.14 by scripts/gen_torch_facts.py)."
    )
    VALID = [Example('''
import torch

@torch.compile
def fn(x):
    y = x * 2
    y.t_()          # a tensor the graph made
    x = x.clone()
    x.unsqueeze_(0)  # the parameter, rebound to a copy
    return y, x
'''), Example('''
import torch
from torch import nn

class Reset(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("term", torch.zeros(1))

    def forward(self, x):
        self.term = x.sum(0, keepdim=True)
        self.term.detach_()  # assigned above: the graph made it
        return x + self.term
''', entry="Reset", args="(torch.randn(2, 1),)")]
    INVALID = [Example('''
import torch

@torch.compile
def fn(x):
    y = x * 2
    x.t_()  # BREAK
    return y
'''), Example('''
import torch
from torch import nn

class Regularizer(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("term", torch.zeros(1))

    def pop(self):
        out = self.term.clone()
        self.term.detach_().zero_()  # BREAK
        return out

    def forward(self, x):
        return x * 2 + self.pop()
''', entry="Regularizer", args="(torch.randn(2),)"), Example('''
import torch
from torch import nn

class Step(nn.Module):
    """An optimizer-style step: the gradient of a parameter it holds, through a name."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(3, 3))
        self.w.grad = torch.ones(3, 3)
        self.param_groups = [{"params": [self.w]}]

    def forward(self, x):
        for group in self.param_groups:
            for p in group["params"]:
                grad = p.grad.data
                grad.transpose_(0, 0)  # BREAK
        return x * 2
''', entry="Step", args="(torch.randn(2),)")]

    def visit_Call(self, node: cst.Call, ctx) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in _inplace_views(ctx.version):
            return
        receiver = func.value
        # Only torch.Tensor has these methods (no ndarray, Module or path does), so a receiver of
        # unknown kind is a tensor too; one known to be something else is not.
        kind = ctx.kind(receiver)
        if not (is_tensor(kind) or kind == Kind.UNKNOWN) or not _graph_input(receiver, ctx):
            return
        what = dotted(receiver) or "its receiver"
        ctx.report(self, node, self.message.format(method=func.attr.value, what=what))


def _graph_input(node: cst.BaseExpression, ctx, depth: int = 0) -> bool:
    """Surely a graph input or a part of one: `self.<attr>` that the function does not assign, a
    compiled function's own unrebound parameter, an attribute (`p.grad`, `p.data`) or a list or
    dict element (`group["params"]`) of those, a loop variable over one, or a name bound to any
    of these (`grad = p.grad.data` in an optimizer step over `self.param_groups`)."""
    if depth > 6:
        return False
    if isinstance(node, cst.Name):
        name = node.value
        if name == "self":
            return True
        if ctx.is_parameter(name):
            return bool(ctx.is_entry)
        origin = ctx.origins.get(name) or ctx.loop_sources.get(name)
        return isinstance(origin, (cst.Name, cst.Attribute, cst.Subscript)) and _graph_input(origin, ctx, depth + 1)
    if isinstance(node, cst.Attribute):
        if isinstance(node.value, cst.Name) and node.value.value == "self":
            return node.attr.value not in _assigned_self_attributes(ctx.function.node)
        return _graph_input(node.value, ctx, depth + 1)
    if isinstance(node, cst.Subscript):
        # a list's or dict's element; a tensor's own view (`x[0]`) is not what was measured
        return not is_tensor(ctx.kind(node.value)) and _graph_input(node.value, ctx, depth + 1)
    return False
