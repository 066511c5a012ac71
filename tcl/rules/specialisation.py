"""Sizes that Python code turns into plain values: recompiles automatic dynamic shapes cannot absorb.

After a size first changes, Dynamo makes it symbolic and stops recompiling for new values --
unless Python code needs the size as a concrete int: as the key of a dict or list lookup, as
the argument of `list.index()`, or as a Python loop's trip count. Each of those guards on the
exact value, so every new size compiles again until the recompile limit (8), after which the
frame runs eagerly. Measured on torch 2.13 with four shapes (2, 4), (2, 8), (2, 16), (2, 32),
default mode, counting each frame's compilations (tcl.verify.compile_trace): a recompile on every
call after the automatic-dynamic one for each use below; none for arithmetic, views,
comparisons, `if size % 8 == 0`, `assert list(x.size()) == [b, t, 4]` or `if n == 8:`.
`str(size)` does not recompile: once the size is symbolic it breaks the graph instead (the
resumed frame then compiles once more, automatic-dynamic), so it is not reported here.

A *size* is `t.shape[i]`, `t.size(i)`, `len(t)` of a tensor `t`, the names a function binds
from them (`b, n, d = x.shape` included), and their integer arithmetic.
"""

from __future__ import annotations

import functools

import libcst as cst

from ..dataflow import Kind, is_tensor
from ..names import dotted
from ..fixes.diagonal import fix_fill_diagonal
from .base import Example, Rule

SIZE_OPERATORS = (cst.Add, cst.Subtract, cst.Multiply, cst.FloorDivide, cst.Modulo)
SHAPES = "[(torch.randn(2, 4),), (torch.randn(2, 8),), (torch.randn(2, 16),), (torch.randn(2, 32),)]"


def _sizes(ctx) -> set[str]:
    """The names this function has bound to sizes so far (the walk goes in source order)."""
    return ctx.memo.setdefault("specialisation.sizes", set())


def is_size(node: cst.BaseExpression, ctx) -> bool:
    if isinstance(node, cst.Name):
        return node.value in _sizes(ctx)
    if isinstance(node, cst.Subscript):
        value = node.value
        return (
            isinstance(value, cst.Attribute) and value.attr.value == "shape" and is_tensor(ctx.kind(value.value))
            and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index)
        )
    if isinstance(node, cst.Call):
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "size" and len(node.args) == 1:
            return node.args[0].keyword is None and is_tensor(ctx.kind(func.value))
        if ctx.qualname(func) == "builtins.len" and len(node.args) == 1:
            return is_tensor(ctx.kind(node.args[0].value))
        return False
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, SIZE_OPERATORS):
        sides = (node.left, node.right)
        return any(is_size(s, ctx) for s in sides) and all(
            is_size(s, ctx) or isinstance(s, cst.Integer) for s in sides
        )
    return False


def _is_whole_shape(node: cst.BaseExpression, ctx) -> bool:
    """`t.shape` or `t.size()`: a tuple of sizes (bound by unpacking, formatted as a whole)."""
    if isinstance(node, cst.Attribute) and node.attr.value == "shape":
        return is_tensor(ctx.kind(node.value))
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "size":
        return not node.args and is_tensor(ctx.kind(node.func.value))
    return False


class SizeSpecialisedByPython(Rule):
    code = "TCL505"
    name = "size-used-as-python-value"
    message = (
        "{expr} is used as a {use}: Dynamo specialises on the exact size, so every call with a "
        "new size compiles again (automatic dynamic shapes cannot help), up to the recompile "
        "limit (8), then the frame runs eagerly"
    )
    consequence_after = ": Dynamo specialises"
    fix = (
        "keep the size symbolic: index tensors instead of Python containers (torch.tensor(table)[n] "
        "or a lookup computed once in __init__), vectorise the loop; or pad inputs to a few "
        "bucket sizes"
    )
    gb = (((2, 0), "GB0039"),)
    category = "recompile"
    persistent = True
    rationale = (
        "After a size first changes, Dynamo makes it symbolic and stops recompiling for new "
        "values, unless Python code needs the exact int: as a dict or list key, as the "
        "argument of list.index(), or as a Python loop's trip count. Each guards on the value. "
        "Measured on torch 2.13, four shapes (2, 4) ... (2, 32): the frame compiles on every "
        "call (4 compilations) for each such use; 2 (the automatic-dynamic recompile) for "
        "arithmetic, views and comparisons of the same size."
    )
    VALID = [Example('''
import torch

@torch.compile
def fn(x):
    b, n = x.shape
    scale = 1.0 / (n ** 0.5)
    if n % 8 == 0 and x.size(1) > 2:
        x = x * 2
    return x.view(b, n // 2, 2) * scale
''', calls=SHAPES)]
    INVALID = [
        Example('''
import torch

@torch.compile
def fn(x):
    table = {4: 1.0, 8: 2.0, 16: 3.0, 32: 4.0}
    return x * table[x.shape[1]]  # BREAK
''', calls=SHAPES),
        Example('''
import torch

BUCKETS = [4, 8, 16, 32]

@torch.compile
def fn(x):
    seq_len = x.size(1)
    i = BUCKETS.index(seq_len)  # BREAK
    return x * i
''', calls=SHAPES),
        Example('''
import torch

@torch.compile
def fn(x):
    _, steps = x.shape
    for _ in range(steps // 4):  # BREAK
        x = x + 1
    return x
''', calls=SHAPES),
    ]

    # -- where sizes get names ------------------------------------------------------------
    def visit_Assign(self, node: cst.Assign, ctx) -> None:
        sizes = _sizes(ctx)
        for target in node.targets:
            target = target.target
            if isinstance(target, cst.Name):
                (sizes.add if is_size(node.value, ctx) else sizes.discard)(target.value)
            elif isinstance(target, (cst.Tuple, cst.List)):
                whole = _is_whole_shape(node.value, ctx)
                for element in target.elements:
                    if isinstance(element.value, cst.Name):
                        (sizes.add if whole else sizes.discard)(element.value.value)

    # -- the uses that specialise ---------------------------------------------------------
    def visit_Call(self, node: cst.Call, ctx) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "index" and node.args:
            if not is_tensor(ctx.kind(func.value)) and is_size(node.args[0].value, ctx):
                self._report(node, node.args[0].value, "list.index() argument", ctx)

    def visit_Subscript(self, node: cst.Subscript, ctx) -> None:
        if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
            return
        key = node.slice[0].slice.value
        container = node.value
        if is_size(key, ctx) and not is_tensor(ctx.kind(container)) and not _is_whole_shape(container, ctx):
            self._report(node, key, "key of a Python dict or list lookup", ctx)

    def visit_DictElement(self, node: cst.DictElement, ctx) -> None:
        if is_size(node.key, ctx):
            self._report(node.key, node.key, "dict key", ctx)

    def visit_For(self, node: cst.For, ctx) -> None:
        iterable = node.iter
        if isinstance(iterable, cst.Call) and ctx.qualname(iterable.func) == "builtins.range":
            for arg in iterable.args:
                if is_size(arg.value, ctx):
                    self._report(iterable, arg.value, "Python loop's trip count", ctx)
                    return

    def _report(self, node: cst.CSTNode, size: cst.BaseExpression, use: str, ctx) -> None:
        expr = cst.Module([]).code_for_node(size)
        ctx.report(self, node, self.message.format(expr=f"the size {expr}", use=use))


SQUARES = "[(torch.randn(n, n),) for n in (4, 6, 8, 10)]"


@functools.lru_cache(maxsize=8)
def _size_specialising_calls(release: tuple[int, int]) -> dict[str, str]:
    """{"Tensor.fill_diagonal_": "receiver", "torch.triu_indices": "size arguments", ...}:
    measured on the compiler by scripts/gen_torch_facts.py (tcl/torch_facts)."""
    from .. import torch_facts

    facts = torch_facts.facts_for(release)
    return dict(facts.size_specialising_calls or {}) if facts is not None else {}


def _held_by_module(node: cst.BaseExpression) -> bool:
    """`self.weight`, `self.mask[:n]`: a parameter or buffer, whose sizes do not change."""
    while isinstance(node, (cst.Attribute, cst.Subscript, cst.Call)):
        if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
            return True
        node = node.func if isinstance(node, cst.Call) else node.value
    return False


def _is_tensor_receiver(func: cst.Attribute, ctx) -> bool:
    """The receiver of `.fill_diagonal_()` is a tensor: inferred so, or the method exists only on
    tensors (torch facts: Tensor has it, list/dict/str/... do not) and the receiver is a local
    value of unknown kind."""
    kind = ctx.kind(func.value)
    if is_tensor(kind):
        return True
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


def _splits_dim_zero(call: cst.Call) -> bool:
    """`t.split(k)` / `t.split(k, 0)`: the number of pieces follows dim 0 (the batch)."""
    dims = [a.value for a in call.args if a.keyword is not None and a.keyword.value == "dim"]
    positional = [a.value for a in call.args if a.keyword is None]
    dims += positional[1:2]
    return not dims or (isinstance(dims[0], cst.Integer) and dims[0].value == "0")


def _batch_size(node: cst.BaseExpression, ctx, depth: int = 0) -> bool:
    """A size of dim 0 (`t.shape[0]`, `t.size(0)`, `len(t)`, a name bound to one, their
    arithmetic): the batch, which changes between calls. A size of another dim is as often a
    fixed one (classes, channels, features), so it is not taken as changing here."""
    if depth > 4:
        return False
    if isinstance(node, cst.Name):
        origin = ctx.origins.get(node.value)
        return origin is not None and _batch_size(origin, ctx, depth + 1)
    if isinstance(node, cst.Subscript):
        index = node.slice[0].slice
        return isinstance(index, cst.Index) and isinstance(index.value, cst.Integer) and index.value.value == "0"
    if isinstance(node, cst.Call):
        if ctx.qualname(node.func) == "builtins.len":
            return True
        return bool(node.args) and isinstance(node.args[0].value, cst.Integer) and node.args[0].value.value == "0"
    if isinstance(node, cst.BinaryOperation):
        return _batch_size(node.left, ctx, depth + 1) or _batch_size(node.right, ctx, depth + 1)
    return False


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
            found.add(_text(node.target))
        elif isinstance(node, cst.Assign):
            for target in node.targets:
                if isinstance(target.target, (cst.Subscript, cst.Attribute)):
                    text = _text(target.target)
                    if text in _text(node.value):
                        found.add(text)
        elif isinstance(node, (cst.BaseExpression, cst.Decorator)):
            continue  # updates are statements: no need to descend into expressions
        stack.extend(_children(node))
    return {t for t in found if "[" in t or "." in t}


def _text(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


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
        return _text(node) in targets
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
        "sizes, compilations counted per call); on torch 2.13 17 of 72 probed calls do: "
        "Tensor.fill_diagonal_, Tensor.take_along_dim, Tensor.split along a changing dim, torch.triu_indices / "
        "tril_indices, torch.linspace, torch.hann_window, one_hot with a size as num_classes, and "
        "math.pow/log/exp/log10/log1p/expm1/fabs/hypot/isqrt of a changing int (a size, or a step "
        "counter the compiled function increments, once automatic dynamic shapes made it "
        "symbolic). Lookalikes keep the size symbolic: diagonal, tril, eye, arange, zeros, topk, "
        "interpolate, pad, math.sqrt, math.ceil, ... The examples below, four calls each: 4 "
        "compilations (a recompile on every call after the automatic-dynamic one) for each "
        "recompiling example, 2 for the one that does not."
    )
    VALID = [Example('''
import torch

@torch.compile
def fn(x):
    n = x.shape[0]
    mask = torch.eye(n, dtype=torch.bool, device=x.device)
    return x.masked_fill(mask, 0) + torch.tril(x)
''', calls=SQUARES)]
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
    ]

    def visit_Assign(self, node: cst.Assign, ctx) -> None:
        targets, names = _changing(ctx)
        if not targets and not names:
            return
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                (names.add if is_changing_int(node.value, ctx) else names.discard)(target.target.value)

    def visit_Call(self, node: cst.Call, ctx) -> None:
        calls = _size_specialising_calls(tuple(ctx.version[:2]))
        if not calls:
            return
        func = node.func
        if isinstance(func, cst.Attribute):
            method = f"Tensor.{func.attr.value}"
            carrier = calls.get(method)
            if carrier is not None and _is_tensor_receiver(func, ctx):
                receiver = cst.Module([]).code_for_node(func.value)
                if carrier == "receiver":
                    if _held_by_module(func.value) or (method == "Tensor.split" and not _splits_by_int(node, ctx)):
                        return
                    what = f"on {receiver}, whose sizes follow the inputs"
                    ctx.report(self, node, self.message.format(call=f".{func.attr.value}()", what=what))
                    return
                self._report_sized(node, f".{func.attr.value}()", ctx)
                return
        qualname = ctx.qualname(func)
        if qualname is None or calls.get(qualname) != "size arguments":
            return
        self._report_sized(node, f"{qualname}()", ctx)

    def _report_sized(self, node: cst.Call, call: str, ctx) -> None:
        for arg in node.args:
            if is_size(arg.value, ctx) and _batch_size(arg.value, ctx):
                what = f"takes the size {_text(arg.value)}"
            elif is_changing_int(arg.value, ctx):
                what = f"takes {_text(arg.value)}, an int this function changes on every call"
            else:
                continue
            ctx.report(self, node, self.message.format(call=call, what=what))
            return
