"""Calls that need a size's exact value (TCL506): recompiles on every new size of their input.

Some torch and NumPy calls, given a size that follows the inputs (or a tensor whose sizes do),
need the concrete int and recompile for each new value even after automatic dynamic shapes made
the size symbolic: `t.fill_diagonal_(v)`, `torch.triu_indices(n, n)`, `math.pow(n, 0.5)`,
`np.sqrt(seq_len)`. Which calls do is not written here: scripts/gen_torch_facts.py compiles its
size probes with four sizes each and records the ones that recompile on every call
(`size_specialising_calls` in tcl/torch_facts). Which sizes change between calls is
tcl/sizes.py's answer, shared with TCL505 (tcl/rules/specialisation.py).
"""

from __future__ import annotations

import functools

import libcst as cst

from .. import torch_facts
from ..dataflow import Kind, is_tensor
from ..names import dotted, source_text
from ..fixes.diagonal import fix_fill_diagonal
from ..sizes import SIZE_OPERATORS, fixed_tensor, whole_shape
from .base import Example, Rule
from .specialisation import SHAPES, changing_size, is_size


SQUARES = "[(torch.randn(n, n),) for n in (4, 6, 8, 10)]"


@functools.lru_cache(maxsize=8)
def _is_tensor_receiver(func: cst.Attribute, ctx) -> bool:
    """The receiver of `.fill_diagonal_()` is a tensor: inferred so, or the method exists only on
    tensors (torch facts: Tensor has it, list/dict/str/... do not) and the receiver is a local
    value of unknown kind."""
    kind = ctx.kind(func.value)
    if is_tensor(kind):
        return True
    head = (dotted(func.value) or "").split(".")[0]
    if head in ctx.index.imports.aliases and head not in ctx.assigned and head not in ctx.parameters:
        return False  # `torch.unbind(x)`: a module's function, not a method of a tensor named `torch`
    from .. import torch_facts

    facts = torch_facts.facts_for(tuple(ctx.version[:2]))
    name = func.attr.value
    return (kind in (Kind.UNKNOWN, Kind.META) and facts is not None and name in facts.tensor_attributes
            and name not in facts.python_attributes and ctx.qualname(func.value) in (None, dotted(func.value)))


def _splits_by_int(call: cst.Call, ctx) -> bool:
    """`t.split(2)` / `t.split(k, 0)`: pieces of an int size along dim 0 (the batch), whose number
    follows the batch; a list of sizes (`t.split(sizes)`) gives a fixed number of pieces."""
    first = call.args[0].value if call.args and call.args[0].keyword is None else None
    if first is None or not (isinstance(first, cst.Integer) or is_size(first, ctx)):
        return False
    return _splits_dim_zero(call)


def _unbinds_a_varying_dim(call: cst.Call, dim_position: int, ctx) -> bool:
    """`x.unbind()` / `torch.unbind(x, dim=0)`: one tensor per row of dim 0, whose number follows
    the batch or the sequence (RNN code over time steps). Not another dim (`xyz.unbind(-1)`, a
    fixed width), nor a result unpacked into names (`q, k, v = qkv.unbind(0)`: the count is
    fixed by the code)."""
    dims = [a.value for a in call.args if a.keyword is not None and a.keyword.value == "dim"]
    positional = [a.value for a in call.args if a.keyword is None]
    dims += positional[dim_position:dim_position + 1]
    if dims and not (isinstance(dims[0], cst.Integer) and dims[0].value == "0"):
        return False
    parent = ctx.parent()
    if isinstance(parent, cst.Assign) and any(isinstance(t.target, (cst.Tuple, cst.List)) for t in parent.targets):
        return False
    return True


def _splits_dim_zero(call: cst.Call) -> bool:
    """`t.split(k)` / `t.split(k, 0)`: the number of pieces follows dim 0 (the batch)."""
    dims = [a.value for a in call.args if a.keyword is not None and a.keyword.value == "dim"]
    positional = [a.value for a in call.args if a.keyword is None]
    dims += positional[1:2]
    return not dims or (isinstance(dims[0], cst.Integer) and dims[0].value == "0")


def _updated_targets(body: cst.CSTNode) -> set[str]:
    """`state["step"] += 1`, `group["k"] = group["k"] + 1`, `self.i = (self.i + n) % m`: the
    values a function changes on every call, as source text (nested functions left out). A
    read-only walk over the nodes' fields: libcst's visit() rebuilds every node it passes."""
    from ..evidence import _children

    found: set[str] = set()
    stack = [body]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.AugAssign):
            found.add(source_text(node.target))
        elif isinstance(node, cst.Assign):
            for target in node.targets:
                if isinstance(target.target, (cst.Subscript, cst.Attribute)):
                    text = source_text(target.target)
                    if text in source_text(node.value):
                        found.add(text)
        elif isinstance(node, (cst.BaseExpression, cst.Decorator)):
            continue  # updates are statements: no need to descend into expressions
        stack.extend(_children(node))
    return {t for t in found if "[" in t or "." in t}


def _changing(ctx) -> tuple[set[str], set[str]]:
    """(updated targets, local names bound from them) of the function being walked."""
    memo = ctx.memo.get("specialisation.changing")
    if memo is None:
        memo = ctx.memo["specialisation.changing"] = (_updated_targets(ctx.function.node.body), set())
    return memo


def is_changing_int(node: cst.BaseExpression, ctx) -> bool:
    """A value the compiled function changes on every call (a step counter) or a name bound
    from one, and their integer arithmetic: symbolic after the first change, like a size."""
    targets, names = _changing(ctx)
    if isinstance(node, cst.Name):
        return node.value in names
    if isinstance(node, (cst.Subscript, cst.Attribute)):
        return source_text(node) in targets
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, SIZE_OPERATORS):
        sides = (node.left, node.right)
        return any(is_changing_int(s, ctx) for s in sides) and all(
            is_changing_int(s, ctx) or isinstance(s, cst.Integer) for s in sides)
    return False


class SizeSpecialisingCall(Rule):
    code = "TCL506"
    name = "size-specialising-call"
    message = (
        "{call} {what}: Dynamo specialises on the exact size, so every call with a new size "
        "compiles again (automatic dynamic shapes cannot help), up to the recompile limit (8), "
        "then the frame runs eagerly"
    )
    consequence_after = ": Dynamo specialises"
    fix = (
        "use a form that keeps the size symbolic: t[(torch.arange(min(t.shape), device=t.device),) "
        "* t.dim()] = v for t.fill_diagonal_(v) (tcl fix rewrites it), a mask built from "
        "torch.arange for triu/tril_indices, torch.arange(n) * (end - start) / (n - 1) + start for "
        "linspace, torch.tensor(k, dtype=torch.float32).pow(...) or a tensor counter for math.pow "
        "of a step count; or pad inputs to a few bucket sizes"
    )
    gb = (((2, 0), "GB0039"),)
    category = "recompile"
    persistent = True
    fixer = staticmethod(fix_fill_diagonal)
    rationale = (
        "Some torch calls need the exact size of their input in Python: Dynamo fixes the "
        "symbolic size to a constant while tracing them, and the next size fails the guard. "
        "Which calls do is measured per release by scripts/gen_torch_facts.py (four square "
        "sizes, compilations counted per call); on torch 2.13 39 of 114 probed calls do: "
        "Tensor.fill_diagonal_, Tensor.take_along_dim, Tensor.split along a changing dim, "
        "Tensor.unbind / torch.unbind along dim 0 (one tensor per row: RNN code over time steps; "
        "not another dim, `xyz.unbind(-1)`, nor a result unpacked into names, `q, k, v = "
        "qkv.unbind(0)`, whose count the code fixes), torch.triu_indices / "
        "tril_indices, torch.linspace, torch.hann_window, one_hot with a size as num_classes, "
        "torch.istft's length, torch.histc's bins, avg/max_pool1d's kernel and adaptive_avg_pool1d's "
        "output size, torch.kron of a tensor whose sizes follow the inputs, and "
        "math.pow/log/exp/log10/log1p/expm1/fabs/hypot/isqrt of a changing int (a size, or a step "
        "counter the compiled function increments, once automatic dynamic shapes made it "
        "symbolic), and NumPy's sqrt/log/exp/power/ceil/floor/round/abs/maximum/minimum/prod/sum "
        "of a size (torch._numpy turns the int into a tensor). Lookalikes keep the size symbolic: "
        "diagonal, tril, eye, arange, zeros, topk, interpolate, pad, math.sqrt, math.ceil, "
        "np.arange, np.zeros, ... The examples below, four calls each: 4 "
        "compilations (a recompile on every call after the automatic-dynamic one) for each "
        "recompiling example, 2 for the one that does not."
    )
    VALID = [
        Example('''
import torch

@torch.compile
def fn(x):
    n = x.shape[0]
    mask = torch.eye(n, dtype=torch.bool, device=x.device)
    return x.masked_fill(mask, 0) + torch.tril(x)
''', calls=SQUARES),
        # A fixed number of pieces: unpacked into names, or along a width
        Example('''
import torch

@torch.compile
def fn(x):
    a, b, c = x[:, :3].unbind(1)
    first, second = torch.unbind(x[:2], dim=0)
    return a + b + c + first.sum() + second.sum()
''', calls="[(torch.randn(n, 4),) for n in (4, 6, 8, 10)]"),
        # Rows of a tensor viewed to sizes the module fixes (peft's BOFT blocks)
        Example('''
import torch
from torch import nn

class Blocks(nn.Module):
    def __init__(self):
        super().__init__()
        self.rotations = nn.Parameter(torch.randn(6, 3, 3))

    def rotate(self, r):
        return r @ r.transpose(-1, -2)

    def forward(self, x):
        n, h, _ = self.rotations.shape
        blocks = self.rotate(self.rotations).view(n, h, h)
        return x @ torch.block_diag(*torch.unbind(blocks))
''', entry="Blocks", calls="[(torch.randn(n, 18),) for n in (4, 6, 8, 10)]"),
        # math.sqrt of a size stays symbolic; numpy's does not (below)
        Example('''
import math
import torch

@torch.compile
def fn(x):
    seq_len = x.shape[1]
    return x / math.sqrt(seq_len)
''', calls=SHAPES),
    ]
    INVALID = [
        Example('''
import torch

@torch.compile
def fn(x):
    scores = x.clone()
    scores.fill_diagonal_(0)  # BREAK
    return scores
''', calls=SQUARES),
        Example('''
import torch

@torch.compile
def fn(x):
    n = x.size(0)
    rows, cols = torch.triu_indices(n, n, 1)  # BREAK
    return x[rows, cols]
''', calls=SQUARES),
        Example('''
import math
import torch

class Stepper:
    def __init__(self):
        self.state = {"step": 0}

STEPPER = Stepper()

@torch.compile
def fn(x):
    state = STEPPER.state
    state["step"] += 1
    return x * math.pow(state["step"], -0.5)  # BREAK
''', calls="[(torch.randn(4, 4),)] * 5"),
        Example('''
import torch

@torch.compile
def fn(x):
    return torch.kron(x, torch.ones(2, 2))  # BREAK
''', calls=SQUARES),
        # One tensor per time step: their number is the sequence length
        Example('''
import torch

@torch.compile
def fn(x, h):
    outputs = []
    for step in torch.unbind(x, dim=0):  # BREAK
        h = torch.tanh(step + h)
        outputs.append(h)
    return torch.stack(outputs)
''', calls="[(torch.randn(n, 2, 3), torch.zeros(2, 3)) for n in (4, 6, 8, 10)]"),
        # NumPy on a size: torch._numpy makes the int a tensor, which needs its value
        Example('''
import numpy as np
import torch

@torch.compile
def fn(x):
    seq_len = x.shape[1]
    return x / np.sqrt(seq_len)  # BREAK
''', calls=SHAPES),
        Example('''
import numpy as np
import torch

@torch.compile
def fn(x):
    return x.flatten() / np.prod(x.shape)  # BREAK
''', calls=SHAPES),
        # demucs' ispectro: the inverse STFT's `length=` follows the input length
        Example('''
import torch

@torch.compile
def fn(x):
    length = x.shape[-1]
    window = torch.hann_window(8)
    z = torch.stft(x, 8, window=window, return_complex=True)
    return torch.istft(z, 8, window=window, length=length)  # BREAK
''', calls="[(torch.randn(2, n),) for n in (64, 80, 96, 112)]"),
        Example('''
import torch
import torch.nn.functional as F

@torch.compile
def fn(x):
    width = x.shape[-1] // 4
    return F.avg_pool1d(x, width)  # BREAK
''', calls="[(torch.randn(2, 3, n),) for n in (16, 24, 32, 40)]"),
    ]

    def visit_Assign(self, node: cst.Assign, ctx) -> None:
        targets, names = _changing(ctx)
        if not targets and not names:
            return
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                (names.add if is_changing_int(node.value, ctx) else names.discard)(target.target.value)

    def visit_Call(self, node: cst.Call, ctx) -> None:
        # {"Tensor.fill_diagonal_": "receiver", "torch.triu_indices": "size arguments", ...}:
        # measured on the compiler by scripts/gen_torch_facts.py
        calls = torch_facts.measured(ctx.version, "size_specialising_calls")
        if not calls:
            return
        func = node.func
        if isinstance(func, cst.Attribute):
            method = f"Tensor.{func.attr.value}"
            carrier = calls.get(method)
            if carrier is not None and _is_tensor_receiver(func, ctx):
                receiver = cst.Module([]).code_for_node(func.value)
                if carrier == "receiver":
                    if fixed_tensor(func.value, ctx) or (method == "Tensor.split" and not _splits_by_int(node, ctx)) \
                            or (method == "Tensor.unbind" and not _unbinds_a_varying_dim(node, 0, ctx)):
                        return
                    what = f"on {receiver}, whose sizes follow the inputs"
                    ctx.report(self, node, self.message.format(call=f".{func.attr.value}()", what=what))
                    return
                self._report_sized(node, f".{func.attr.value}()", ctx)
                return
        qualname = ctx.qualname(func)
        carrier = calls.get(qualname) if qualname is not None else None
        if carrier is None and qualname is not None and qualname.startswith("torch.") \
                and qualname.count(".") == 1 and qualname != "torch.split":
            # torch.take_along_dim(x, ...): the function form of a measured Tensor method
            # (torch.split's split size comes second: its method form is the one measured)
            carrier = "receiver" if calls.get("Tensor." + qualname[len("torch."):]) == "receiver" else None
        if carrier == "receiver":  # a torch function's first tensor argument (torch.kron(x, x))
            first = next((a.value for a in node.args if a.keyword is None), None)
            if qualname == "torch.unbind" and not _unbinds_a_varying_dim(node, 1, ctx):
                return
            if first is not None and is_tensor(ctx.kind(first)) and not fixed_tensor(first, ctx):
                what = f"on {source_text(first)}, whose sizes follow the inputs"
                ctx.report(self, node, self.message.format(call=f"{qualname}()", what=what))
            return
        if carrier != "size arguments":
            return
        self._report_sized(node, f"{qualname}()", ctx)

    def _report_sized(self, node: cst.Call, call: str, ctx) -> None:
        for arg in node.args:
            shaped = whole_shape(arg.value, ctx)
            if shaped is not None and not fixed_tensor(shaped, ctx):
                # np.prod(x.shape): every size of x, the batch among them
                what = f"takes the sizes {source_text(arg.value)}, which follow the inputs"
                ctx.report(self, node, self.message.format(call=call, what=what), guards=arg.value)
                return
            value, size = arg.value, changing_size(arg.value, ctx)
            if size is None and isinstance(arg.value, (cst.Tuple, cst.List)):
                # np.prod((n, 2)), F.adaptive_avg_pool1d(x, (n,)): a size inside a tuple or list
                value, size = next(((e.value, found) for e in arg.value.elements
                                    if (found := changing_size(e.value, ctx)) is not None), (value, None))
            if size is not None:
                where = f"{source_text(value)} in {source_text(arg.value)}" if value is not arg.value else source_text(value)
                what = f"takes the size {where} ({size.why})" if size.why != source_text(value) else \
                    f"takes the size {where}"
            elif is_changing_int(arg.value, ctx):
                what = f"takes {source_text(arg.value)}, an int this function changes on every call"
                value = None  # not a size of the inputs: each call's value is guarded anew
            else:
                continue
            ctx.report(self, node, self.message.format(call=call, what=what), guards=value)
            return
