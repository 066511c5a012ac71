"""Python tests first: `if torch.isnan(out) and losses.dtype == torch.float16:` (TCL201) ->
`if losses.dtype == torch.float16 and torch.isnan(out):`.

Dynamo decides a Python test while it traces, and it evaluates `and`/`or` left to right, so a
Python operand that comes after a tensor one is reached only after the tensor has been read:
the graph breaks on every call, though the Python operand alone would settle the test whenever
it is false (for `and`; true for `or`). pytorch-metric-learning's DivisorReducer is that case:
its fp16 fallback breaks every fp32 loss. Put first, the Python operand settles the test at
trace time and the tensor is never read where it does.

Why it is SAFE (eager results identical for every input eager accepted): in an `if`/`elif`/
conditional-expression/`assert` test only the truth value of the chain is used, and the truth
value of `A and B` (`A or B`) does not depend on the order of its operands when each is
evaluated at most once and evaluating one cannot change another. So tcl moves only

- Python operands that are total and pure: constants; a parameter or a name bound by a
  straight-line assignment before the statement, with a Python (not tensor) value; `self.training`;
  a tensor's metadata (`x.dtype`, `x.device`, `x.ndim`, `x.is_cuda`, `x.requires_grad`,
  `x.dim()`, `x.is_floating_point()`) of such a name; `torch.<dtype>`; comparisons, `in` of a
  tuple, `not`, `isinstance` of those; `name is None` for any bound name, tensor or not
  (identity runs no code). Evaluated earlier than before, none of them can raise or change
  anything.
- past tensor operands that are pure (tcl/fixes/exprs.py `pure`): no module calls, no in-place
  ops, no RNG. Skipped where the Python operand settles the test, they change nothing either;
  the one thing skipped with them is an error eager would have raised (`bool()` of a tensor
  of several elements), on an input eager rejected.

The operand nodes trade places, so the test keeps its line breaks and comments. Where the
Python operands do not settle the test (a float16 loss here), the tensor is read and the
graph breaks as before: the finding stays, and the note says so.
"""

from __future__ import annotations

import libcst as cst

from ..dataflow import Kind, is_tensor
from .base import SAFE, Fix
from .branches import bound_before
from .exprs import pure

# Metadata every tensor has: reading it cannot raise and Dynamo guards on it.
TENSOR_FACTS = frozenset({"dtype", "device", "ndim", "is_cuda", "requires_grad", "is_sparse", "is_leaf"})
TENSOR_FACT_METHODS = frozenset({"dim", "is_floating_point", "is_complex", "is_contiguous"})
SETTLED_CALLS = frozenset({
    "torch.is_grad_enabled", "torch.is_inference_mode_enabled", "torch.jit.is_scripting",
    "torch.jit.is_tracing", "torch.compiler.is_compiling", "torch._dynamo.is_compiling",
    "torch.is_autocast_enabled",
})
COMPARISONS = (cst.Equal, cst.NotEqual, cst.Is, cst.IsNot, cst.In, cst.NotIn,
               cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual)


def python_tests_first(finding, owner: cst.CSTNode, test: cst.BaseExpression, ctx) -> Fix | None:
    """The fix for the test `test` of `owner` (an If, IfExp or Assert), or None where no Python
    operand comes after a tensor operand, or an operand cannot be moved."""
    if not isinstance(test, cst.BooleanOperation):
        return None
    operator = type(test.operator)
    operands = _chain(test, operator)
    statement = ctx.statement_of(owner)
    settled = [_settled(o, ctx, statement) for o in operands]
    first_tensor = next((i for i, s in enumerate(settled) if not s), None)
    if first_tensor is None or all(not s for s in settled[first_tensor:]):
        return None  # nothing Python after a tensor operand
    if any(not s and not pure(o, ctx) for o, s in zip(operands, settled)):
        return None  # a tensor operand with effects must keep being evaluated where it was
    order = [o for o, s in zip(operands, settled) if s] + [o for o, s in zip(operands, settled) if not s]
    replacements = {old: new for old, new in zip(operands, order) if old is not new}
    word = "and" if operator is cst.And else "or"
    moved = ", ".join(ctx.code(o).strip() for o in order[:settled.count(True)])
    settles = "false" if operator is cst.And else "true"
    return Fix(
        code=finding.code, line=finding.line, col=finding.col,
        title=f"test the Python operands of `{word}` first ({moved})",
        safety=SAFE, replacements=replacements,
        note=(f"the same truth value for every input eager accepts; where {moved} is {settles}, "
              "Dynamo settles the test without reading the tensor and the graph does not break "
              "there; otherwise it still breaks"),
    )


def _chain(node: cst.BaseExpression, operator: type) -> list[cst.BaseExpression]:
    """The operands of `a and b and c` (one operator), left to right."""
    if isinstance(node, cst.BooleanOperation) and isinstance(node.operator, operator):
        return _chain(node.left, operator) + _chain(node.right, operator)
    return [node]


def _settled(node: cst.BaseExpression, ctx, statement) -> bool:
    """A Python value tcl can evaluate earlier than the code does: total, pure, no tensor data."""
    if isinstance(node, (cst.Integer, cst.Float, cst.SimpleString)):
        return True
    if isinstance(node, cst.Name):
        if node.value in ("True", "False", "None"):
            return True
        return _python_name(node, ctx, statement)
    if isinstance(node, cst.Attribute):
        qualified = ctx.qualify(node) or ""
        if qualified.startswith("torch.") and qualified.count(".") == 1:
            return True  # `torch.float16`
        if node.attr.value == "training" and isinstance(node.value, cst.Name) and node.value.value == "self" \
                and _is_method(ctx):
            return True
        return node.attr.value in TENSOR_FACTS and _tensor_name(node.value, ctx, statement)
    if isinstance(node, cst.Call):
        if node.args:
            return _isinstance(node, ctx, statement)
        if ctx.qualify(node.func) in SETTLED_CALLS:
            return True
        func = node.func
        return isinstance(func, cst.Attribute) and func.attr.value in TENSOR_FACT_METHODS \
            and _tensor_name(func.value, ctx, statement)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
        return _settled(node.expression, ctx, statement)
    if isinstance(node, cst.BooleanOperation):
        return _settled(node.left, ctx, statement) and _settled(node.right, ctx, statement)
    if isinstance(node, cst.Comparison):
        parts = [node.left] + [c.comparator for c in node.comparisons]
        if not all(isinstance(c.operator, COMPARISONS) for c in node.comparisons):
            return False
        if all(isinstance(c.operator, (cst.Is, cst.IsNot)) for c in node.comparisons):
            # `n is None`: identity calls no code, whatever `n` holds, tensor included
            return all(_settled(p, ctx, statement) or
                       (isinstance(p, cst.Name) and bound_before(p.value, statement, ctx)) for p in parts)
        return all(_settled(p, ctx, statement) for p in parts)
    if isinstance(node, (cst.Tuple, cst.List, cst.Set)):  # `in (torch.float16, torch.bfloat16)`
        return all(isinstance(e, cst.Element) and _settled(e.value, ctx, statement) for e in node.elements)
    return False


def _python_name(node: cst.Name, ctx, statement) -> bool:
    """A name whose value the analysis knows is Python metadata (a flag, a size, a string), bound
    on every path to the statement."""
    return ctx.kind(node) == Kind.META and bound_before(node.value, statement, ctx)


def _tensor_name(node: cst.BaseExpression, ctx, statement) -> bool:
    return isinstance(node, cst.Name) and is_tensor(ctx.kind(node)) and bound_before(node.value, statement, ctx)


def _isinstance(call: cst.Call, ctx, statement) -> bool:
    if ctx.qualify(call.func) != "builtins.isinstance" or len(call.args) != 2:
        return False
    value, types = (a.value for a in call.args)
    return isinstance(value, cst.Name) and bound_before(value.value, statement, ctx) and \
        (ctx.qualify(types) or "").count(".") >= 1 and not isinstance(types, cst.Call)


def _is_method(ctx) -> bool:
    """In a method of an nn.Module class, where `self.training` is always set."""
    params = ctx.function.node.params.params
    owner = ctx.function.owner
    return bool(params) and params[0].name.value == "self" and owner is not None and owner.is_module
