"""Ops whose output shape depends on tensor data."""

from __future__ import annotations

import libcst as cst

from .. import torch_facts
from ..dataflow import Kind, is_tensor
from ..fixes.masked_update import fix_masked_update
from ..fixes.one_hot import fix_one_hot
from .base import DEFAULT_MODE, Example, Rule

# Used only where the target release has no generated facts (dynamic_shape_calls, measured by
# scripts/gen_torch_facts.py from aten's dynamic_output_shape tag).
FALLBACK_DYNAMIC_CALLS = frozenset({
    "torch.nonzero", "torch.argwhere", "torch.unique", "torch.unique_consecutive", "torch.masked_select",
    "Tensor.nonzero", "Tensor.argwhere", "Tensor.unique", "Tensor.unique_consecutive", "Tensor.masked_select",
})


def _dynamic_calls(version) -> frozenset[str] | dict[str, str]:
    return torch_facts.measured(version, "dynamic_shape_calls") or FALLBACK_DYNAMIC_CALLS


class DynamicOutputShape(Rule):
    code = "TCL301"
    explains_value = True
    name = "data-dependent-output-shape"
    message = "{op} has an output shape that depends on tensor data and breaks the graph"
    fix = (
        "keep shapes static: torch.where(mask, x, 0) / masked_fill instead of x[mask], a fixed-size "
        "topk instead of nonzero; or set torch._dynamo.config.capture_dynamic_output_shape_ops = True"
    )
    gb = (((2, 0), "GB0036"),)
    modes = frozenset({DEFAULT_MODE})
    removed_by = frozenset({"capture_dynamic_output_shape_ops"})
    fixer = staticmethod(fix_masked_update)  # `x[x > c] += d` and `out[m] = x[m]` only
    rationale = (
        "In default mode Dynamo cannot give nonzero(), unique(), masked_select(), bincount(), "
        "boolean-mask indexing or repeat_interleave with tensor repeats a static shape and ends "
        "the graph (the calls are generated from aten's dynamic_output_shape tag and compiled "
        "per release by scripts/gen_torch_facts.py). "
        "fullgraph=True traces them with unbacked sizes instead."
    )
    VALID = [Example('''
import torch

@torch.compile
def fn(x):
    keep = x > 0
    y = torch.where(keep, x, torch.zeros_like(x))
    idx = torch.arange(x.shape[0])
    return y[idx] + x.repeat_interleave(2, dim=0)[: x.shape[0]]
'''), Example('''
import torch

@torch.compile
def fn(x):
    a, b = x.clone(), x.clone()
    a[a > 0], b[b < 0] = 0.0, 1.0  # masked writes: traced as index_put_, static shapes
    return a + b
''')]
    INVALID = [
        Example('''
import torch

@torch.compile
def fn(x):
    x = x.clone()
    x[x > 0] += 1  # BREAK
    return x
'''),
        Example('''
import torch

@torch.compile
def fn(x):
    keep = torch.ones(x.shape[1], dtype=torch.bool, device=x.device)
    keep[0] = False
    return x[:, keep, 0].sum()  # BREAK
''', args="(torch.randn(2, 4, 3),)"),
        Example('''
import torch

@torch.compile
def fn(x):
    idx = torch.nonzero(x > 0)  # BREAK
    return idx.float().sum() + x
'''),
        Example('''
import torch

@torch.compile
def fn(scores):
    keep = scores > 0.5
    kept = scores[keep]  # BREAK
    return kept.sum()
'''),
        Example('''
import torch

@torch.compile
def fn(x):
    labels = torch.unique(x.round())  # BREAK
    return labels.sum()
'''),
        Example('''
import torch

@torch.compile
def fn(x, labels):
    counts = torch.bincount(labels)  # BREAK
    return x * counts.max()
''', args="(torch.randn(3), torch.tensor([0, 1, 1]))"),
        # `x.type(dtype)` converts (a tensor); only `x.type()` without arguments names the type
        Example('''
import torch

@torch.compile
def fn(x):
    weights = x.type(torch.float64)
    return weights[x > 0].sum()  # BREAK
'''),
        Example('''
import torch

@torch.compile
def fn(x, counts):
    return x.repeat_interleave(counts, dim=0)  # BREAK
''', args="(torch.randn(3, 2), torch.tensor([1, 2, 3]))"),
        Example('''
import torch

@torch.compile
def fn(x, counts):
    pair_sizes = (counts * (counts - 1)).div(2, rounding_mode="floor")
    pair_indices = torch.repeat_interleave(pair_sizes)  # BREAK
    return x[pair_indices].sum()
''', args="(torch.randn(8), torch.tensor([2, 3, 1]))"),
        Example('''
import torch

@torch.compile
def fn(x, sizes):
    mask = torch.arange(x.shape[1]) < sizes.view(-1, 1)
    return x.repeat(1, sizes.shape[0])[:, mask.view(-1)].sum()  # BREAK
''', args="(torch.randn(2, 3), torch.tensor([1, 2]))"),
        Example('''
import torch

@torch.compile
def fn(x, pbc):
    out = x.clone()
    out[:, ~pbc] = x[:, ~pbc].clone()  # BREAK
    return out
''', args="(torch.randn(2, 3), torch.tensor([True, False, True]))"),
        # the receiver's kind unknown (here the result of a call tcl cannot type): a boolean
        # tensor indexes only tensors (a list raises), so the mask says what the receiver is
        Example('''
import torch

@torch.compile
def fn(x):
    mask = x > 0
    weights = getattr(torch, "ones_like")(x)
    return weights[mask].sum()  # BREAK
'''),
        # the same through two steps: `mat[rows, cols]` of an untyped value is a tensor (only a
        # tensor takes a tuple of tensor indexes), and `keep &= ...` keeps the mask a mask
        # (pytorch-metric-learning's TripletMarginMiner)
        Example('''
import torch

@torch.compile
def fn(x, rows, cols):
    mat = getattr(torch, "cdist")(x, x)
    gap = mat[rows, cols]
    keep = gap > 0.5
    keep &= gap < 4.0
    return rows[keep]  # BREAK
''', args="(torch.randn(6, 3), torch.tensor([0, 1, 2, 3]), torch.tensor([5, 4, 3, 2]))"),
    ]

    def visit_Call(self, node: cst.Call, ctx) -> None:
        name = ctx.qualname(node.func)
        dynamic = _dynamic_calls(ctx.version)
        if name is not None and name.startswith("torch.") and name in dynamic:
            ctx.report(self, node, self.message.format(op=f"{name}()"))
            return
        if name == "torch.where" and len([a for a in node.args if a.keyword is None]) == 1:
            ctx.report(self, node, self.message.format(op="torch.where(cond) with one argument"))
            return
        func = node.func
        if not isinstance(func, cst.Attribute):
            return
        method = func.attr.value
        if f"Tensor.{method}" in dynamic and is_tensor(ctx.kind(func.value)):
            ctx.report(self, node, self.message.format(op=f".{method}()"))
        elif method == "repeat_interleave" or name == "torch.repeat_interleave":
            repeats = _repeats_argument(node, is_method=name != "torch.repeat_interleave")
            static = any(a.keyword is not None and a.keyword.value == "output_size" for a in node.args)
            if repeats is not None and not static and is_tensor(ctx.kind(repeats)):
                ctx.report(self, node, self.message.format(op="repeat_interleave with tensor repeats"))

    def visit_Subscript(self, node: cst.Subscript, ctx) -> None:
        receiver = ctx.kind(node.value)
        # An unknown receiver indexed by a boolean tensor is a tensor: eager raises on a list
        # or tuple indexed that way (pytorch-metric-learning's `miner_weights[safe_N]`, the
        # weights from a helper of another file).
        if _is_store_target(node, ctx) or not (is_tensor(receiver) or receiver == Kind.UNKNOWN):
            return
        for element in node.slice:
            index = element.slice
            if isinstance(index, cst.Index) and _is_mask(index.value, ctx):
                ctx.report(self, node, self.message.format(op="boolean-mask indexing"))
                return


def _is_mask(index: cst.BaseExpression, ctx) -> bool:
    """A boolean tensor used as an index, or `~t` of a tensor: Python's `~` on an index tensor
    is the complement of a mask (`coordinates[:, :, ~pbc]`, torchani), since an integer index
    tensor inverted gives negative positions nobody means."""
    if ctx.kind(index) == Kind.BOOL_TENSOR:
        return True
    return (isinstance(index, cst.UnaryOperation) and isinstance(index.operator, cst.BitInvert)
            and is_tensor(ctx.kind(index.expression)))


def _repeats_argument(node: cst.Call, is_method: bool) -> cst.BaseExpression | None:
    """The `repeats` of `x.repeat_interleave(repeats)`, `torch.repeat_interleave(x, repeats)` or
    the one-argument `torch.repeat_interleave(repeats)` (the overload that repeats each index
    `repeats[i]` times: torchani's `torch.repeat_interleave(pair_sizes)`)."""
    for arg in node.args:
        if arg.keyword is not None and arg.keyword.value == "repeats":
            return arg.value
    positional = [a.value for a in node.args if a.keyword is None]
    if not is_method and len(positional) == 1 and not any(
            a.keyword is not None and a.keyword.value in ("input", "dim") for a in node.args):
        return positional[0]
    position = 0 if is_method else 1
    return positional[position] if len(positional) > position else None


def _is_store_target(node: cst.Subscript, ctx) -> bool:
    """`x[mask] = 0`, also as one of several targets (`a[m], b[n] = 0.0, 1.0`), is an in-place
    masked write: static shape, no break. `x[mask] += 1` reads `x[mask]` first: measured on
    2.13, it breaks (GB0036) like any read."""
    depth, child = 1, node
    parent = ctx.parent(depth)
    while isinstance(parent, (cst.Element, cst.Tuple, cst.List)):  # an element of a target tuple
        depth, child = depth + 1, parent
        parent = ctx.parent(depth)
    return isinstance(parent, cst.AssignTarget) and parent.target is child


class OneHotWithoutNumClasses(Rule):
    code = "TCL302"
    fixer = staticmethod(fix_one_hot)
    name = "one-hot-without-num-classes"
    message = "F.one_hot() without num_classes has a data-dependent shape and breaks the graph"
    fix = "pass num_classes=<the number of classes> explicitly"
    gb = (((2, 0), "GB0246"),)
    rationale = "Without num_classes, one_hot reads max(x)+1 from the data to size its output."
    VALID = [Example('''
import torch
import torch.nn.functional as F

@torch.compile
def fn(labels):
    return F.one_hot(labels, num_classes=10).float()
''', args="torch.tensor([1, 2, 3])")]
    INVALID = [Example('''
import torch
import torch.nn.functional as F

@torch.compile
def fn(labels):
    return F.one_hot(labels).float()  # BREAK
''', args="torch.tensor([1, 2, 3])")]

    def visit_Call(self, node: cst.Call, ctx) -> None:
        if ctx.qualname(node.func) not in ("torch.nn.functional.one_hot",):
            return
        positional = [a for a in node.args if a.keyword is None]
        num_classes = next((a.value for a in node.args if a.keyword and a.keyword.value == "num_classes"), None)
        if num_classes is None and len(positional) >= 2:
            num_classes = positional[1].value
        if num_classes is None or _is_minus_one(num_classes):
            ctx.report(self, node)


def _is_minus_one(node: cst.BaseExpression) -> bool:
    return (
        isinstance(node, cst.UnaryOperation)
        and isinstance(node.operator, cst.Minus)
        and isinstance(node.expression, cst.Integer)
        and node.expression.value == "1"
    )
