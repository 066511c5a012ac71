"""Python control flow and Python values that depend on tensor *data*.

Metadata (`x.shape`, `x.dtype`, `len(x)`, `self.training`, `mask is None`) is fine: Dynamo
guards on it. The truth value of a tensor is not known while tracing.
"""

from __future__ import annotations

import libcst as cst

from ..dataflow import Kind, is_tensor
from ..fixes.asserts import fix_assert_message
from ..fixes.branches import fix_branch, fix_scalar_test
from ..names import source_text
from .. import torch_facts
from .base import DEFAULT_MODE, Example, Rule

TEST_OWNERS = (cst.If, cst.While, cst.IfExp, cst.Assert, cst.CompIf)


class DataDependentBranch(Rule):
    code = "TCL201"
    explains_value = True
    fixer = staticmethod(fix_branch)
    name = "data-dependent-branch"
    message = "Python branch on tensor data ({construct}) breaks the graph"
    fix = (
        "compute both sides and select with torch.where(cond, a, b), or use torch.cond(pred, "
        "true_fn, false_fn, operands) for branches with different work"
    )
    gb = (((2, 0), "GB0170"),)
    alt_gb = ("GB0033",)  # `not t` as a value
    rationale = (
        "`if`, `while`, `and`/`or`/`not` and conditional expressions need a Python bool. For a "
        "tensor that value exists only at run time, so Dynamo ends the graph, runs the test "
        "eagerly and compiles each side separately. Branches on metadata (shape, dtype, "
        "`self.training`, `is None`) are fine."
    )
    VALID = [
        Example('''
import torch

@torch.compile
def fn(x, scale=None):
    # `== None` on a tensor is Python's False (Tensor.__eq__), not tensor data (pykan's style)
    if scale != None:
        x = x * scale
    if x == None:
        return x
    return x + 1
''', args="(torch.randn(4, 4), torch.randn(4, 4))"),
        Example('''
import torch

@torch.compile
def fn(x, mask=None):
    if mask is not None:
        x = x.masked_fill(mask, 0)
    if x.shape[0] > 2 and x.dim() == 2:
        x = x * 2
    return torch.where(x.sum() > 0, x, -x)
'''),
        Example('''
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.1)
        self.use_bias = True

    def forward(self, x):
        if self.training:
            x = self.drop(x)
        if self.use_bias:
            x = x + 1
        h, w = x.shape[-2:]
        return x if h == w else x.t()
''', entry="Net"),
        # torch's own annotations (tcl/torch_facts) say these return Python bools, not tensors.
        Example('''
import torch

@torch.compile
def fn(x):
    if torch.onnx.is_in_onnx_export() or torch.xpu.is_available():
        return x
    if torch.is_grad_enabled() and torch.numel(x) > 4:
        x = x * 2
    return x
'''),
        # The body says `scale` is a Python float and `mode` a string (tcl/evidence.py).
        Example('''
import torch
from torch import nn

class Net(nn.Module):
    def forward(self, x, scale, mode):
        if scale.is_integer() and scale > 1 and mode == "double":
            x = x * scale
        return x
''', entry="Net", args="(torch.randn(4, 4), 2.0, 'double')"),
        # A pass-through helper returns what *this* call passes it (tcl/summaries.py): the
        # mask call makes `default` return a tensor there, not at the scale call.
        Example('''
import torch
from torch import nn

def default(val, d):
    return val if val is not None else d

class Block(nn.Module):
    def __init__(self, scale=None):
        super().__init__()
        self.scale = scale

    def forward(self, x, mask=None):
        mask = default(mask, torch.ones_like(x))
        scale = default(self.scale, 1.0)
        if scale > 0.5:
            x = x * scale
        return x * mask
''', entry="Block", args="(torch.randn(4, 4),)"),
        Example('''
import torch

@torch.compile
def fn(x):
    if all(s > 1 for s in x.shape) and any([x.ndim == 2, x is None]):
        x = x * 2
    return x
'''),
    ]
    INVALID = [
        Example('''
import torch

@torch.compile
def fn(x):
    if x.sum() > 0:  # BREAK
        return x * 2
    return x - 1
'''),
        Example('''
import torch
from torch import nn

class Gate(nn.Module):
    def forward(self, x, mask):
        if (mask == 0).any():  # BREAK
            x = x.masked_fill(mask == 0, 0.0)
        return x
''', entry="Gate", args="(torch.randn(4, 4), torch.randint(0, 2, (4, 4)))"),
        Example('''
import torch

@torch.compile
def fn(x):
    return x if x.max() > 1 else -x  # BREAK
'''),
        Example('''
import numpy as np
import torch

@torch.compile
def fn(x):
    chunk = np.lcm(4, 6)  # NumPy values are traced as tensors
    if x.shape[0] % chunk == 0:  # BREAK
        x = x + 1
    return x
'''),
        Example('''
import torch

@torch.compile
def fn(x):
    assert not torch.isnan(x).any(), "NaN in input"  # BREAK
    return x + 1
'''),
        Example('''
import torch

@torch.compile
def fn(x):
    while x.norm() > 1:  # BREAK
        x = x / 2
    return x
'''),
        # A loss deriving from torch's private base _Loss is an nn.Module: its forward is traced.
        Example('''
import torch
from torch.nn.modules.loss import _Loss

class Dice(_Loss):
    def forward(self, pred, target):
        inter = (pred * target).sum()
        if inter > 0:  # BREAK
            return 1 - inter
        return pred.sum()
''', entry="Dice"),
        Example('''
import torch

@torch.compile
def fn(x):
    finite = all([x.sum() > 0, x.mean() > 0])  # BREAK
    return x * 2, finite
'''),
        Example('''
import torch

@torch.compile
def fn(x):
    bad = not torch.isfinite(x).all()  # BREAK
    return x * 2, bad
'''),
    ]

    def visit_If(self, node: cst.If, ctx) -> None:
        if ctx.data_dependent(node.test):
            ctx.report(self, node.test, self.message.format(construct="if"))

    def visit_While(self, node: cst.While, ctx) -> None:
        if ctx.data_dependent(node.test):
            ctx.report(self, node.test, self.message.format(construct="while"))

    def visit_IfExp(self, node: cst.IfExp, ctx) -> None:
        if ctx.data_dependent(node.test):
            ctx.report(self, node.test, self.message.format(construct="conditional expression"))

    def visit_Assert(self, node: cst.Assert, ctx) -> None:
        # Dynamo rewrites `assert <tensor>` into an in-graph assert, but not `assert not t`
        # or `assert a and b`: those need a Python bool whatever the message.
        test = node.test
        if isinstance(test, (cst.UnaryOperation, cst.BooleanOperation)) and ctx.data_dependent(test):
            ctx.report(self, test, self.message.format(construct="assert with `not`/`and`/`or`"))

    def visit_CompIf(self, node: cst.CompIf, ctx) -> None:
        if ctx.data_dependent(node.test):
            ctx.report(self, node.test, self.message.format(construct="comprehension filter"))

    def visit_BooleanOperation(self, node: cst.BooleanOperation, ctx) -> None:
        if _in_test_position(ctx):
            return
        if is_tensor(ctx.kind(node.left)):
            operator = "and" if isinstance(node.operator, cst.And) else "or"
            ctx.report(self, node, self.message.format(construct=f"`{operator}`"))

    def visit_UnaryOperation(self, node: cst.UnaryOperation, ctx) -> None:
        # Measured on 2.13: `b = not t.any()` breaks with GB0033 at the `not` and cannot resume
        # (the rest of the frame runs eagerly); in a test, `not` folds into the jump.
        if isinstance(node.operator, cst.Not) and not _in_test_position(ctx) and ctx.data_dependent(node.expression):
            ctx.report(self, node, self.message.format(construct="`not`"), gb="GB0033", resumes=False)

    def visit_Call(self, node: cst.Call, ctx) -> None:
        # all()/any() take bool() of every element: of tensors, that is data (measured on 2.13:
        # GB0170 in every mode for all(x > 0), all([a > 0, b > 0]), any(t > 0 for t in x);
        # none for all(s > 0 for s in x.shape)).
        name = ctx.qualname(node.func)
        if name in ("builtins.all", "builtins.any") and len(node.args) == 1 and _tensor_elements(node.args[0].value, ctx):
            ctx.report(self, node, self.message.format(construct=f"{name.removeprefix('builtins.')}() over tensors"))


def _tensor_elements(value: cst.BaseExpression, ctx) -> bool:
    """A tensor (iterated element by element), or a display or comprehension of tensors."""
    if isinstance(value, (cst.List, cst.Tuple, cst.Set)):
        return any(isinstance(e, cst.Element) and is_tensor(ctx.kind(e.value)) for e in value.elements)
    if isinstance(value, (cst.GeneratorExp, cst.ListComp, cst.SetComp)):
        return is_tensor(ctx.kind(value.elt))
    return is_tensor(ctx.kind(value))


def _in_test_position(ctx) -> bool:
    """Inside the test of an if/while/assert/...: the statement's own report covers it."""
    depth = 1
    while True:
        parent = ctx.parent(depth)
        if parent is None:
            return False
        if isinstance(parent, TEST_OWNERS):
            return True
        if not isinstance(parent, (cst.BooleanOperation, cst.UnaryOperation)):
            return False
        depth += 1


class TensorAssertWithMessage(Rule):
    code = "TCL202"
    explains_value = True
    fixer = staticmethod(fix_assert_message)
    name = "assert-on-tensor-with-message"
    message = "assert on tensor data with a non-constant message breaks the graph"
    fix = "use torch._check(cond, lambda: 'message'), or keep the assert with a constant string message"
    gb = (((2, 0), "GB0170"),)
    rationale = (
        "Dynamo turns `assert <tensor>` into an in-graph assert only when the message is absent "
        "or a constant string. A formatted message (f-string, variable) makes it a data-dependent "
        "branch."
    )
    VALID = [
        Example('''
import torch

@torch.compile
def fn(x):
    assert (x.abs() >= 0).all(), "magnitudes are non-negative"
    assert x.shape[0] == 4, f"bad batch {x.shape}"
    return x + 1
'''), Example('''
import torch
from torch import nn

class BatchedKL(nn.Module):
    def __init__(self):
        super().__init__()
        # torch documents broadcast_shapes as returning a torch.Size: the assert compares sizes
        self._batch_shape = torch.broadcast_shapes((4, 1), (1,))

    def forward(self, x):
        kl = x.sum(-1)
        assert kl.shape == self._batch_shape, kl.shape
        return kl
''', entry="BatchedKL", args="(torch.randn(4, 1, 3),)"),
    ]
    INVALID = [Example('''
import torch

@torch.compile
def fn(x):
    assert (x.abs() >= 0).all(), f"negative magnitude in {x.shape}"  # BREAK
    return x + 1
''')]

    def visit_Assert(self, node: cst.Assert, ctx) -> None:
        if node.msg is None or isinstance(node.msg, (cst.SimpleString, cst.ConcatenatedString)):
            return
        if is_tensor(ctx.kind(node.test)):  # `not`/`and`/`or` tests are TCL201
            ctx.report(self, node.test)


class ItemCall(Rule):
    code = "TCL203"
    explains_value = True
    fixer = staticmethod(fix_scalar_test)
    name = "tensor-item"
    message = ".item() reads tensor data into Python and breaks the graph"
    fix = (
        "keep the value as a 0-d tensor (drop .item()), or set "
        "torch._dynamo.config.capture_scalar_outputs = True"
    )
    gb = (((2, 0), "GB0124"),)
    modes = frozenset({DEFAULT_MODE})
    removed_by = frozenset({"capture_scalar_outputs"})
    rationale = (
        "Default mode ends the graph at .item(). With fullgraph=True Dynamo captures it as an "
        "unbacked symbol instead, and fails later if the value steers Python control flow."
    )
    VALID = [Example('''
import torch

@torch.compile
def fn(x):
    scale = x.abs().max()
    return x / scale
''')]
    INVALID = [Example('''
import torch

@torch.compile
def fn(x):
    scale = x.abs().max().item()  # BREAK
    return x / scale
''')]

    def visit_Call(self, node: cst.Call, ctx) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "item" and not node.args:
            if ctx.kind(func.value) not in (Kind.META, Kind.SCALAR, Kind.MODULE):
                ctx.report(self, node)


class ScalarConversion(Rule):
    code = "TCL204"
    explains_value = True
    fixer = staticmethod(fix_scalar_test)
    name = "tensor-to-python-scalar"
    message = "{name}() of a tensor reads its data into Python and breaks the graph"
    fix = "keep it a tensor (t.to(dtype) / comparisons on tensors), or set torch._dynamo.config.capture_scalar_outputs = True"
    gb = (((2, 0), "GB0124"),)
    modes = frozenset({DEFAULT_MODE})
    removed_by = frozenset({"capture_scalar_outputs"})
    rationale = "int(t), float(t) and bool(t) call .item() under the hood."
    VALID = [Example('''
import torch

@torch.compile
def fn(x):
    n = int(x.shape[0])
    return x * float(n)
''')]
    INVALID = [Example('''
import torch

@torch.compile
def fn(x):
    total = float(x.sum())  # BREAK
    return x / total
''')]

    def visit_Call(self, node: cst.Call, ctx) -> None:
        name = ctx.qualname(node.func)
        if name in ("builtins.int", "builtins.float", "builtins.bool") and len(node.args) == 1:
            if is_tensor(ctx.kind(node.args[0].value)):
                ctx.report(self, node, self.message.format(name=name[9:]))


class TolistCall(Rule):
    code = "TCL205"
    explains_value = True
    name = "tensor-tolist"
    message = ".tolist() reads tensor data into Python and breaks the graph"
    fix = "keep the data in tensors (index, gather, torch.split with a tensor of sizes) instead of Python lists"
    gb = (((2, 0), "GB0109"),)
    alt_gb = ("GB0033",)
    rationale = (
        "A float tensor's .tolist() always breaks (GB0109); an integer tensor's breaks in "
        "default mode (GB0033, data-dependent output)."
    )
    VALID = [Example('''
import torch

@torch.compile
def fn(x):
    sizes = list(x.shape)
    return x.reshape(sizes[0], -1)
''')]
    INVALID = [
        Example('''
import torch

@torch.compile
def fn(x):
    values = x.tolist()  # BREAK
    return x + values[0][0]
'''),
        Example('''
import torch

@torch.compile
def fn(x):
    counts = (x > 0).sum(dim=1).tolist()  # BREAK
    return x * counts[0]
''', fullgraph_breaks=False),  # an int tensor's tolist() is traced under fullgraph=True
    ]

    def visit_Call(self, node: cst.Call, ctx) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "tolist" and not node.args:
            if ctx.kind(func.value) not in (Kind.META, Kind.SCALAR, Kind.MODULE):
                ctx.report(self, node)


SIZE_FUNCTIONS = frozenset({
    "torch.arange", "torch.zeros", "torch.ones", "torch.empty", "torch.full", "torch.rand",
    "torch.randn", "torch.randint", "torch.linspace", "torch.logspace", "torch.eye",
    "torch.randperm", "torch.tril_indices", "torch.triu_indices",
    # Dynamo traces NumPy through torch: a NumPy value as a NumPy size is tensor data too.
    "numpy.zeros", "numpy.ones", "numpy.empty", "numpy.full", "numpy.arange",
})


class TensorAsSize(Rule):
    _walk = None  # the walker of the function being checked, and the names read as sizes in it
    _read: set = frozenset()
    code = "TCL206"
    explains_value = True
    name = "tensor-as-python-size"
    message = "tensor data used as {what}: Dynamo reads it into a Python int and breaks the graph"
    fix = (
        "derive sizes from shapes (x.shape[0]) rather than from tensor values, or set "
        "torch._dynamo.config.capture_scalar_outputs = True; for masks, keep the full size and mask"
    )
    gb = (((2, 0), "GB0033"),)
    alt_gb = ("GB0124",)
    modes = frozenset({DEFAULT_MODE})
    removed_by = frozenset({"capture_scalar_outputs"})
    rationale = (
        "Sizes, slice bounds, narrow() lengths and indexes of Python lists must be Python ints while tracing. A tensor there "
        "(`torch.arange(lengths.max())`, `x[:, :n]` with `n = mask.sum()`) is read out like "
        ".item(), ending the graph in default mode."
    )
    VALID = [Example('''
import torch

@torch.compile
def fn(x):
    n = x.shape[0]
    steps = torch.arange(n)
    return x[: n // 2] + steps[: n // 2, None]
'''), Example('''
import numpy as np
import torch

@torch.compile
def fn(x, plan):
    table = np.zeros((3, len(plan)), dtype=np.int32)
    return x + 1, table
''', args="(torch.randn(3), [1, 2, 3])")]
    INVALID = [
        Example('''
import torch

@torch.compile
def fn(lengths):
    return torch.arange(lengths.max())  # BREAK
''', args="torch.tensor([3, 1, 2])"),
        Example('''
import torch

@torch.compile
def fn(x):
    n = (x > 0).sum()
    return x[:n]  # BREAK
'''),
        # Dynamo cannot resume after a slice bound: the print runs eagerly and breaks nothing.
        Example('''
import torch

@torch.compile
def fn(x):
    n = (x > 0).sum()
    head = x[:n]  # BREAK
    print(head.shape)
    return head
''', fullgraph_breaks=True),  # (fullgraph=True captures the slice and fails at the print)
        Example('''
import numpy as np
import torch

@torch.compile
def fn(x, plan):
    table = np.zeros((3, np.sum(plan[:2])), dtype=np.int32)  # BREAK
    return x + 1, table
''', args="(torch.randn(3), [1, 2, 3])"),
        # The second read of the same tensor as a bound does not break again.
        Example('''
import torch

@torch.compile
def fn(x, counts):
    n = counts[0]
    head = torch.tanh(x[:, :n])  # BREAK
    tail = torch.sigmoid(x[:, n:])
    return head.sum() + tail.sum()
''', args="(torch.randn(2, 4), torch.tensor([2]))"),
        # A tensor live at an earlier break reaches the resumed frame as an input: on CPU, as a
        # size of a factory it no longer breaks (on CUDA it does); as a slice bound it still does.
        Example('''
import torch

@torch.compile
def fn(x, mask):
    n = mask.sum()
    width = mask.max()
    pad = torch.zeros(n, 2)  # BREAK
    extra = torch.ones(width, 2)
    tail = x[:, :width]  # BREAK
    return pad.sum() + extra.sum() + tail.sum()
''', args="(torch.randn(2, 4), torch.tensor([1, 1, 0]))", assume={"device": "cpu"}),
        Example('''
import torch

@torch.compile
def fn(x):
    heads = [x * 1, x * 2, x * 3]
    return heads[x[:3].argmax()]  # BREAK
''', args="(torch.randn(4),)"),
        Example('''
import torch

def first_rows(x, mask):
    return x[: mask.sum()]  # BREAK

@torch.compile
def fn(x, mask):
    width = mask.max()
    rows = first_rows(x, mask)
    return rows.sum() + x.narrow(1, 0, width).sum()
''', args="(torch.randn(2, 4), torch.tensor([1, 1, 0]))", assume={"device": "cpu"}),
    ]

    def visit_Call(self, node: cst.Call, ctx) -> None:
        name = ctx.qualname(node.func)
        if name in SIZE_FUNCTIONS:
            for arg in node.args:
                if arg.keyword is not None and arg.keyword.value not in ("size", "end", "start", "steps", "n"):
                    continue
                values = [arg.value]
                if isinstance(arg.value, (cst.Tuple, cst.List)):
                    values = [el.value for el in arg.value.elements]
                if self._first_use(values, ctx, resumed_ok=True):
                    ctx.report(self, node, self.message.format(what=f"a size of {name}()"))
                    return
            return
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "narrow" and is_tensor(ctx.kind(func.value)):
            if self._first_use([a.value for a in node.args[1:]], ctx, resumed_ok=True):
                # Measured on 2.13 and 2.14: no resuming after it either (as a slice bound).
                ctx.report(self, node, self.message.format(what="a narrow() bound"), resumes=False)

    def visit_Subscript(self, node: cst.Subscript, ctx) -> None:
        if not is_tensor(ctx.kind(node.value)):
            # `heads[scores.argmax()]` of a Python list or tuple: the index is read like .item()
            # (measured on 2.13: GB0124 in default mode, gone under capture_scalar_outputs)
            if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index) \
                    and _python_sequence(node.value, ctx) and self._first_use([node.slice[0].slice.value], ctx):
                ctx.report(self, node, self.message.format(what="an index of a Python list or tuple"), gb="GB0124")
            return
        for element in node.slice:
            index = element.slice
            if isinstance(index, cst.Slice):
                bounds = [b for b in (index.lower, index.upper, index.step) if b is not None]
                if self._first_use(bounds, ctx):
                    # Measured on 2.13 and 2.14: Dynamo cannot resume after a slice bound read
                    # from a tensor (`y[: c.sum()]`, `n = c.sum(); y[:n]`, a frame input `y[:t]`:
                    # "cannot resume from ... compiling up to the previous resumable", or the
                    # whole function skipped): the rest of the frame runs eagerly.
                    ctx.report(self, node, self.message.format(what="a slice bound"), gb="GB0124", resumes=False)
                    return

    def _first_use(self, values, ctx, resumed_ok: bool = False) -> bool:
        """Whether tensor data is read as a size here for the first time in this function.
        Measured on 2.13: once `x[:, :n]` has broken the graph, `x[:, n:]` with the same tensor
        `n` further down does not break again (the frame runs eagerly after a slice-bound
        break; after a factory-size break `n` reaches the resumed frame as an input).
        `resumed_ok`: sizes of torch factories and narrow() lengths take a CPU tensor that was
        live at an earlier graph break (an input of the resumed frame) without breaking."""
        inputs_ok = resumed_ok and ctx.cpu_tensors
        tensors = [v for v in values if is_tensor(ctx.kind(v)) and not (inputs_ok and ctx.crossed_break(v))]
        if not tensors:
            return False
        if self._walk is not ctx:
            self._walk, self._read = ctx, set()
        names = {v.value for v in tensors if isinstance(v, cst.Name)}
        if len(names) == len(tensors) and names <= self._read:
            return False
        self._read |= names
        return True


def _python_sequence(node: cst.BaseExpression, ctx, depth: int = 0) -> bool:
    """A list or tuple display, a comprehension, or a name bound to one (a dict, indexed by a
    tensor, hashes it by identity and does not break)."""
    if isinstance(node, (cst.List, cst.Tuple, cst.ListComp)):
        return True
    if isinstance(node, cst.Name) and depth < 3:
        if node.value in getattr(ctx, "tuple_env", {}):
            return True
        origin = ctx.origins.get(node.value)
        return origin is not None and origin is not node and _python_sequence(origin, ctx, depth + 1)
    return False


class SequenceCompareWithTensor(Rule):
    code = "TCL207"
    explains_value = True
    name = "sequence-compare-with-tensor"
    message = "comparing a list/tuple that holds tensor data ({what}) breaks the graph"
    fix = (
        "compare element by element with Python ints (x.shape[i] == n), or check the tensor "
        "separately with torch._check(t == n)"
    )
    gb = (((2, 0), "GB6622"),)
    alt_gb = ("GB0170",)  # torch 2.11 on CUDA reports the same break as a data-dependent branch
    rationale = (
        "`list(t.size()) == [b, n, s]` compares element by element. When one element is a "
        "tensor (`n = mask.sum()`, `lengths.max()`), that comparison gives a tensor, not a "
        "bool, and Dynamo cannot decide the list comparison while tracing. Measured on 2.13: "
        "GB6622 in both default and fullgraph mode."
    )
    VALID = [Example('''
import torch

@torch.compile
def fn(x):
    n = x.shape[1]
    assert list(x.size()) == [x.shape[0], n], "bad shape"
    return x * 2
''')]
    INVALID = [
        Example('''
import torch

@torch.compile
def fn(x, mask):
    width = mask.sum()
    scores = torch.ones(4, 3)
    assert list(scores.size()) == [4, width], "bad shape"  # BREAK
    return x * 2
''', args="(torch.randn(2, 8), torch.ones(3, dtype=torch.long))"),
        Example('''
import torch

@torch.compile
def fn(x, lengths):
    if tuple(x.shape) == (2, lengths.max()):  # BREAK  # noqa: TCL602 (a crash once dim 1 changes)
        return x * 2
    return x
''', args="(torch.randn(2, 8), torch.tensor([3, 8]))"),
    ]

    def visit_Comparison(self, node: cst.Comparison, ctx) -> None:
        left = node.left
        for target in node.comparisons:
            if isinstance(target.operator, (cst.Equal, cst.NotEqual)):
                right = target.comparator
                for display, other in ((left, right), (right, left)):
                    if _holds_tensor(display, ctx) and not is_tensor(ctx.kind(other)):
                        kind = "list" if isinstance(display, cst.List) else "tuple"
                        ctx.report(self, node, self.message.format(what=f"a {kind} compared with =="))
                        return
            left = target.comparator


def _holds_tensor(node: cst.BaseExpression, ctx) -> bool:
    return isinstance(node, (cst.List, cst.Tuple)) and any(
        not isinstance(element, cst.StarredElement) and is_tensor(ctx.kind(element.value))
        for element in node.elements
    )


class RangeOverTensorData(Rule):
    code = "TCL209"
    explains_value = True
    name = "range-over-tensor-data"
    message = "range() over tensor data ({what}) breaks the graph: Dynamo traces range() of Python ints only"
    fix = (
        "count with Python ints from shapes: range(math.prod(x.shape[1:])) instead of "
        "range(np.prod(x.shape[1:])), range(x.shape[0]) instead of range(mask.sum()); or read "
        "the count once outside the compiled region"
    )
    gb = (((2, 0), "GB0059"),)
    rationale = (
        "range() needs Python ints while tracing. Given a tensor (`range(t.sum())`) or a NumPy "
        "result, which Dynamo traces as a tensor (`range(np.prod(x.shape[1:]))`, nflows' "
        "autoregressive inverse), it cannot be traced: measured on 2.13, GB0059 (\"builtin "
        "operator `range` with argument types ['Tensor']\" / ['ndarray']) in default mode, and "
        "the same error under fullgraph=True. range(int(t)) is TCL204's (the int() breaks first)."
    )
    VALID = [Example('''
import math
import torch

@torch.compile
def fn(x):
    for _ in range(math.prod(x.shape[1:])):
        x = x + 1
    for _ in range(x.dim()):
        x = x * 2
    return x
''')]
    INVALID = [
        Example('''
import numpy as np
import torch

@torch.compile
def fn(x):
    num_inputs = np.prod(x.shape[1:])
    outputs = torch.zeros_like(x)
    for _ in range(num_inputs):  # BREAK
        outputs = outputs + 1
    return outputs
'''),
        Example('''
import torch

@torch.compile
def fn(x, counts):
    for _ in range(counts.sum()):  # BREAK
        x = x + 1
    return x
''', args="(torch.randn(2, 3), torch.tensor([1, 1]))"),
    ]

    def visit_Call(self, node: cst.Call, ctx) -> None:
        if ctx.qualname(node.func) != "builtins.range":
            return
        for arg in node.args:
            if arg.keyword is None and not arg.star and is_tensor(ctx.kind(arg.value)):
                ctx.report(self, node, self.message.format(what=source_text(arg.value)))
                return


class MembershipInTensor(Rule):
    code = "TCL210"
    explains_value = True
    name = "membership-test-on-tensor"
    message = "`{op}` on tensor data ({what}) reads it into Python and breaks the graph"
    fix = (
        "test with tensor ops instead: (t == v).any() keeps the answer a tensor (select with "
        "torch.where on it), or make the test once outside the compiled region"
    )
    gb = (((2, 0), "GB0124"),)
    # Measured on 2.13: Tensor.__contains__ calls .item() at the comparison itself, which Dynamo
    # cannot resume after: the rest of the frame runs eagerly (tests/test_frame_skips.py).
    resumes = False
    rationale = (
        "`v in t` calls Tensor.__contains__, which reduces (t == v).any() to a Python bool with "
        "`.item()`. Measured on 2.13: GB0124 at the test, in an `if` or as a value, in default "
        "mode and under fullgraph=True; Dynamo cannot resume there, so the rest of the frame "
        "runs eagerly. `v in t.shape` and membership in lists, dicts and sets of Python values "
        "are traced."
    )
    VALID = [
        Example('''
import torch

@torch.compile
def fn(x, names=("a", "b")):
    if 4 in x.shape and "a" in names:
        x = x * 2
    return x
'''),
        Example('''
import torch

@torch.compile
def fn(x, cache):
    # nothing says `cache` holds a tensor (a dict, most often)
    if "scale" in cache:
        x = x * 2
    return x
''', args='(torch.randn(2, 3), {"scale": 2})'),
        Example('''
import torch

@torch.compile
def fn(x, target):
    x = x + target["boxes"].sum()
    if "masks" in target:  # a string key: `target` is a dict, whatever its values
        x = x + target["masks"].sum()
    return x
''', args='(torch.randn(2, 3), {"boxes": torch.ones(2)})'),
    ]
    INVALID = [
        Example('''
import torch

@torch.compile
def fn(x, ids: torch.Tensor):
    if 0 in ids:  # BREAK
        x = x - 1
    return x
''', args="(torch.randn(2, 3), torch.tensor([1, 2]))"),
        Example('''
import torch

@torch.compile
def fn(x):
    ids = x.argmax(-1)
    missing = 3 not in ids  # BREAK
    return x * 2, missing
''', args="torch.randn(2, 3)"),
    ]

    # `"boxes" in target`: a tensor holds no strings (eager raises), so the container is a dict,
    # a str or a list of names whatever tcl inferred for it (torchvision's detection targets).
    STRING_OPERANDS = (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)

    def visit_Comparison(self, node: cst.Comparison, ctx) -> None:
        if isinstance(node.left, self.STRING_OPERANDS):
            return
        for target in node.comparisons:
            # `key in cache`, `name in kwargs`: membership is as common on dicts and lists, so
            # a parameter with no evidence of holding a tensor is not taken for one here.
            if isinstance(target.operator, (cst.In, cst.NotIn)) and is_tensor(ctx.kind(target.comparator)) \
                    and not ctx.assumed_tensor(target.comparator):
                op = "in" if isinstance(target.operator, cst.In) else "not in"
                ctx.report(self, node, self.message.format(op=op, what=source_text(target.comparator)))
                return


class DataReadingCall(Rule):
    code = "TCL211"
    explains_value = True
    name = "python-result-from-tensor-data"
    message = "{name}() of tensor data gives a Python value: Dynamo reads the data and breaks the graph"
    fix = (
        "keep the answer a tensor: (a == b).all() for torch.equal, torch.isclose(a, b).all() for "
        "allclose, torch.sqrt / torch.floor / torch.isnan for math.*; select with torch.where on "
        "it, or make the check outside the compiled region"
    )
    gb = (((2, 0), "GB0033"),)
    alt_gb = ("GB0208",)
    rationale = (
        "torch.equal, torch.allclose, Tensor.equal / allclose / is_nonzero and math functions of "
        "a tensor (math.isclose, isnan, isfinite, floor, ceil, sqrt, exp, log) return Python "
        "values computed from the data. Which calls break is measured per release by "
        "scripts/gen_torch_facts.py (data_reading_calls): on 2.13 each breaks with GB0033 at the "
        "call (torch.is_same_size with GB0208), resumably. torch.isclose(a, b).all() and "
        "(a == b).all() stay in the graph."
    )
    VALID = [Example('''
import torch

@torch.compile
def fn(x, y):
    same = torch.isclose(x, y).all()
    return torch.where(same, x, y)
''')]
    INVALID = [
        Example('''
import torch

@torch.compile
def fn(x: torch.Tensor, y: torch.Tensor):
    if torch.allclose(x, y):  # BREAK
        return x
    return y
''', versions=">=2.13,<2.14"),
        Example('''
import math
import torch

@torch.compile
def fn(x):
    scale = math.sqrt(x.abs().sum())  # BREAK
    return x / scale
''', versions=">=2.13,<2.14"),
        Example('''
import torch

@torch.compile
def fn(x, y):
    y = y.flip(0)
    if y.equal(x):  # BREAK
        return x
    return x + y
''', versions=">=2.13,<2.14"),
    ]

    def visit_Call(self, node: cst.Call, ctx) -> None:
        calls = torch_facts.measured(ctx.version, "data_reading_calls")
        if not calls:
            return
        func = node.func
        if isinstance(func, cst.Attribute) and f"Tensor.{func.attr.value}" in calls and is_tensor(ctx.kind(func.value)):
            if not ctx.assumed_tensor(func.value):
                name = f"Tensor.{func.attr.value}"
                ctx.report(self, node, self.message.format(name=name), gb=calls[name])
            return
        name = ctx.qualname(func)
        if name not in calls:
            return
        # `math.sqrt(head_dim)` with an unannotated parameter is a number far more often than a tensor
        if any(arg.keyword is None and is_tensor(ctx.kind(arg.value)) and not ctx.assumed_tensor(arg.value)
               for arg in node.args):
            ctx.report(self, node, self.message.format(name=name), gb=calls[name])
