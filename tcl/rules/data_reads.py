"""Numbers and lists read out of tensor data that Python then counts with: recompiles after the break.

`.tolist()`, `.item()` and `int(t)` break the graph in default mode; the frame Dynamo resumes in
receives the Python value as an input and guards on what Python does with it. Measured on torch
2.13 (default mode, backend eager, four calls, compilations per frame and per call with
tcl.verify.compile_trace): iterating, enumerate()-ing, zip()-ing or len()-ing a list read with `.tolist()` from a
tensor whose rows follow the batch recompiles the resumed frame on every new batch size (the
guard is the list's length, which automatic dynamic shapes never makes symbolic); a Python loop
`range(n)` over an int read with `.item()` recompiles on every new value, same shapes or not, as
does such an int passed to a call that needs its exact value (`torch.tril_indices(n, n)`,
`torch.linspace(0, 1, n)`, `math.log(n)`: the size-specialising calls scripts/gen_torch_facts.py
measures), also through a helper's parameter the traced callers fill with it.
The same list's values used in arithmetic, or the int used in arithmetic, settle after one
automatic-dynamic recompile: not reported. A list read from a parameter or buffer
(`self.weights.tolist()`) has a fixed length: not reported; nor is a read inside a loop body,
where the break makes Dynamo run the whole frame eagerly (measured: one compilation). The examples mark the read itself
`# noqa` for the break rule that reports it, so that each shows one rule. Under `fullgraph=True` the read
itself is the error (TCL201-TCL204), so this rule is for default mode only.
"""

from __future__ import annotations

import libcst as cst

from .. import torch_facts
from ..names import short_source
from ..dataflow import Kind, is_tensor
from ..sizes import length_fixed
from .base import DEFAULT_MODE, Example, Rule

_BATCHES = "[(torch.randn(n, 3),) for n in (4, 6, 8, 10)]"
_VALUES = "[(torch.full((4, 3), float(k)),) for k in (2, 3, 4, 5)]"


READ_METHODS = frozenset({"tolist", "item"})  # also tcl/rules/crashes.py's reads
NUMBER_READS = frozenset({"builtins.int", "builtins.float"})


def _reads_in_loops(ctx) -> set[int]:
    return ctx.memo.setdefault("data_reads.in_loops", set())


def _read_call(node: cst.BaseExpression, ctx, depth: int = 0) -> cst.Call | None:
    """The `.tolist()` / `.item()` / `int(t)` call a value comes from, through names."""
    if depth > 4:
        return None
    if isinstance(node, cst.Name):
        origin = ctx.origins.get(node.value)
        return _read_call(origin, ctx, depth + 1) if origin is not None else None
    if isinstance(node, cst.Call):
        if isinstance(node.func, cst.Attribute) and node.func.attr.value in READ_METHODS:
            return node
        if ctx.qualname(node.func) in NUMBER_READS and node.args:
            inner = _read_call(node.args[0].value, ctx, depth + 1)
            return inner if inner is not None else node
    if isinstance(node, cst.BinaryOperation):
        return _read_call(node.left, ctx, depth + 1) or _read_call(node.right, ctx, depth + 1)
    return None


def _resumes_after(node: cst.BaseExpression, ctx) -> bool:
    read = _read_call(node, ctx)
    return read is None or id(read) not in _reads_in_loops(ctx)


def data_list(node: cst.BaseExpression, ctx, depth: int = 0) -> cst.Call | None:
    """The `t.tolist()` call `node` is (or a name holds) when `t` is tensor data whose length
    can change between calls (not a module's parameter or buffer, not built from constants)."""
    if depth > 4:
        return None
    if isinstance(node, cst.Name):
        origin = ctx.origins.get(node.value)
        return data_list(origin, ctx, depth + 1) if origin is not None else None
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "tolist" \
            and not node.args:
        receiver = node.func.value
        # A read by name was recorded where it ran; one in the expression at hand runs here.
        in_loop = id(node) in _reads_in_loops(ctx) if depth else ctx.inside_loop_body()
        # length_fixed covers a module's own tensors (fixed_tensor) and dims the model fixes
        if is_tensor(ctx.kind(receiver)) and not in_loop and not length_fixed(receiver, ctx):
            return node
    return None


def data_number(node: cst.BaseExpression, ctx) -> bool:
    """A Python number read out of tensor data (`.item()`, `int(t)`, their arithmetic)."""
    return ctx.kind(node) == Kind.SCALAR and data_list(node, ctx) is None and _resumes_after(node, ctx)


class DataReadAsCount(Rule):
    code = "TCL508"
    name = "tensor-data-read-as-python-count"
    message = (
        "{expr} is read out of tensor data and {use}: the frame that resumes after the graph "
        "break at the read guards on its {what}, so every call with a new {what} compiles "
        "again, up to the recompile limit (8), then the frame runs eagerly"
    )
    consequence_after = ": the frame that resumes"
    fix = (
        "keep the values in a tensor and vectorise the loop (a mask, torch.where, index_select, "
        "segment reductions with scatter_add/index_add) instead of a Python loop over them; "
        "where the count is small and bounded, loop over its bound and mask the extra steps; "
        "for a call that needs the exact int (tril_indices, linspace, one_hot), pass a fixed "
        "upper bound and mask or slice the extra entries with a tensor comparison"
    )
    gb = (((2, 0), "GB0039"),)
    category = "recompile"
    persistent = True
    modes = frozenset({DEFAULT_MODE})
    rationale = (
        "A value read with .tolist() or .item() reaches the frame Dynamo resumes in after the "
        "break as a plain Python list or int, and the frame guards on what Python needs of it: "
        "a list's length when code iterates it, zips it or takes len() of it; an int's exact "
        "value when it is a range() bound. A list length never becomes symbolic, and range() "
        "needs the int's value, so automatic dynamic shapes cannot absorb either. Measured on "
        "torch 2.13, default mode, four calls: iterating, enumerate() or len() of "
        "x[:, 0].tolist() with batch 4, 6, 8, 10 recompiles the resumed frame on the third "
        "and fourth call (after the automatic-dynamic recompile of the second), as does "
        "range(int(x[0, 0].item())) with the values 1..4 at one shape, and torch.tril_indices(n, "
        "n, -1) of n = int(x.max()) with the values 2..5 (so does any call scripts/gen_torch_facts.py "
        "measured to need an int argument's exact value: linspace, one_hot's num_classes, "
        "math.log/exp/pow, ...); the list's values or the int in arithmetic or in "
        "torch.arange(n), and a list read from a buffer, do not (each frame at most "
        "recompiles once, automatic-dynamic). Default mode only: "
        "under fullgraph=True the read is the error."
    )
    VALID = [Example('''
import torch
from torch import nn

class Weighted(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("weights", torch.tensor([0.5, 0.25, 0.25]))

    def forward(self, x):
        out = x
        for w in self.weights.tolist():  # noqa: TCL205 (a buffer: the length never changes)
            out = out * w
        scale = x.abs().max().item()  # noqa: TCL203
        return out / (scale + 1.0)
''', entry="Weighted", calls=_BATCHES), Example('''
import torch

@torch.compile
def fn(x):
    n = int(x.max())  # noqa: TCL204
    return x.sum() + torch.arange(n).sum()  # arange keeps the int symbolic
''', calls=_VALUES), Example('''
import torch
from torch import nn

class Lengths(nn.Module):
    def forward(self, token_ids):
        lengths = []
        for row in token_ids:
            ids = row.tolist()  # noqa: TCL205 (a break inside a loop: the frame runs eagerly)
            lengths.append(len(ids))
        return torch.tensor(lengths)
''', entry="Lengths", calls="[(torch.randint(3, 9, (n, 6)),) for n in (2, 3, 4, 5)]"), Example('''
import torch
from torch import nn

class GridBounds(nn.Module):
    """One bound per input dimension: the lists' length is the model's num_dims, whatever the batch."""

    def __init__(self):
        super().__init__()
        self.num_dims = 3

    def forward(self, x):
        flat = x.reshape(-1, self.num_dims)
        x_maxs = flat.max(0)[0].tolist()  # noqa: TCL205
        x_mins = flat.amin(0).tolist()  # noqa: TCL205
        spans = [hi - lo for lo, hi in zip(x_mins, x_maxs)]
        return x * len(spans) + sum(spans)
''', entry="GridBounds", calls=_BATCHES), Example('''
import torch
from torch import nn

class PairBounds(nn.Module):
    """Rows of both inputs joined along dim 0: dim 1 is still num_dims, whatever the batch."""

    def __init__(self):
        super().__init__()
        self.num_dims = 3

    def forward(self, x1, x2):
        both = torch.cat([x1.reshape(-1, self.num_dims), x2.reshape(-1, self.num_dims)])
        x_mins = both.min(0)[0].tolist()  # noqa: TCL205
        return x1 * len(x_mins) + sum(x_mins)
''', entry="PairBounds", calls="[(torch.randn(n, 3), torch.randn(n + 1, 3)) for n in (2, 3, 4, 5)]")]
    INVALID = [
        Example('''
import torch

@torch.compile
def fn(x):
    out = x
    firsts = x[:, 0].tolist()  # noqa: TCL205 (the break this rule is about)
    for v in firsts:  # BREAK
        out = out + v
    return out
''', calls=_BATCHES),
        Example('''
import torch

@torch.compile
def fn(x):
    firsts = x[:, 0].tolist()  # noqa: TCL205
    rows = [x[i] * a for i, a in enumerate(firsts)]  # BREAK
    return torch.stack(rows) * len(firsts)  # BREAK
''', calls=_BATCHES),
        Example('''
import torch

@torch.compile
def fn(x):
    steps = int(x[0, 0].item())  # noqa: TCL203
    for _ in range(steps):  # BREAK
        x = x + 1
    return x
''', calls="[(torch.full((4, 3), float(k)),) for k in (1, 2, 3, 4)]"),
        Example('''
import torch

@torch.compile
def fn(x):
    n = int(x.max())  # noqa: TCL204
    rows, cols = torch.tril_indices(n, n, -1)  # BREAK
    return x.sum() + rows.sum() + cols.sum()
''', calls=_VALUES),
    ]

    def visit_For(self, node: cst.For, ctx) -> None:
        self._iterated(node.iter, ctx)

    def visit_CompFor(self, node: cst.CompFor, ctx) -> None:
        self._iterated(node.iter, ctx)

    def _iterated(self, iterable: cst.BaseExpression, ctx) -> None:
        if data_list(iterable, ctx) is not None:
            self._report(iterable, iterable, "iterated", "length", ctx)
            return
        if not isinstance(iterable, cst.Call):
            return
        name = ctx.qualname(iterable.func)
        args = [a.value for a in iterable.args if a.keyword is None and not a.star]
        if name in ("builtins.zip", "builtins.enumerate"):
            for arg in args:
                if data_list(arg, ctx) is not None:
                    self._report(iterable, arg, f"iterated by {name.split('.')[1]}()", "length", ctx)
                    return
        elif name == "builtins.range":
            for arg in args:
                if data_number(arg, ctx):
                    self._report(iterable, arg, "used as a Python loop's trip count", "value", ctx)
                    return

    def visit_Call(self, node: cst.Call, ctx) -> None:
        func = node.func
        if (isinstance(func, cst.Attribute) and func.attr.value in READ_METHODS) or ctx.qualname(func) in NUMBER_READS:
            if ctx.inside_loop_body():
                _reads_in_loops(ctx).add(id(node))
            return
        qualname = ctx.qualname(node.func)
        if qualname == "builtins.len" and len(node.args) == 1:
            arg = node.args[0].value
            if data_list(arg, ctx) is not None:
                self._report(node, arg, "measured with len()", "length", ctx)
            return
        # {"torch.tril_indices": "size arguments", ...}: calls that need the exact value of an
        # int argument, measured on the compiler by scripts/gen_torch_facts.py
        calls = torch_facts.measured(ctx.version, "size_specialising_calls")
        if calls and calls.get(qualname) == "size arguments":
            for arg in node.args:
                if not arg.star and data_number(arg.value, ctx):
                    self._report(node, arg.value, f"passed to {qualname}(), which needs its exact value",
                                 "value", ctx)
                    return

    def _report(self, node: cst.CSTNode, value: cst.BaseExpression, use: str, what: str, ctx) -> None:
        ctx.report(self, node, self.message.format(expr=short_source(value), use=use, what=what))
