"""`x[x > c] -= d` rewritten as a static-shape select (TCL301).

An augmented assignment through a boolean mask reads `x[mask]` first, a tensor whose length
depends on the data: in default mode Dynamo ends the graph there (GB0036, measured on 2.13;
a plain masked write `x[mask] = v` is traced as index_put_ and does not break). The same update
as a select over the whole tensor keeps every shape static:

    x[x >= 1.0] -= 1.0   ->   x.copy_(torch.where(x >= 1.0, x.clone().sub_(1.0), x))

Why it is the same in eager, for every input (SAFE; tests/test_fix_properties.py checks dtypes,
values with NaN, inf and -0.0, and the compiler):

* the mask is a comparison of `x` itself with a Python number, so it has x's shape and `where`
  selects exactly the elements `x[mask]` would;
* the masked elements get `x.clone().sub_(d)`: the same in-place op on a copy of x's dtype as
  Python's `tmp = x[mask]; tmp -= d`, with the same rounding and the same error when the result
  cannot be cast back (`int_tensor[mask] -= 0.5` raises either way); the other elements are x's
  own values, bit for bit (a `-0.0` stays `-0.0`);
* `copy_` writes in place like the original index_put_, so views of x and autograd see the same
  update (a leaf that requires grad raises either way);
* every read of x happens before the write.

Only a statement whose target is a name or attribute chain (read several times, no side effect),
whose mask is `x OP number` or `number OP x`, and whose value is a number literal is rewritten.
"""

from __future__ import annotations

import libcst as cst

from .base import SAFE, Fix
from .exprs import is_number, plain_reference

_IN_PLACE = {
    cst.AddAssign: "add_", cst.SubtractAssign: "sub_", cst.MultiplyAssign: "mul_", cst.DivideAssign: "div_",
}
_COMPARISONS = (cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual, cst.Equal, cst.NotEqual)


def _self_mask(mask: cst.BaseExpression, target: str, ctx) -> bool:
    """`x >= 1.0` / `0 < x`: an elementwise comparison of the target with one number."""
    if not isinstance(mask, cst.Comparison) or len(mask.comparisons) != 1:
        return False
    comparison = mask.comparisons[0]
    if not isinstance(comparison.operator, _COMPARISONS):
        return False
    sides = (mask.left, comparison.comparator)
    return any(ctx.code(a) == target and is_number(b) for a, b in (sides, sides[::-1]))


def fix_masked_update(finding, node: cst.CSTNode, ctx) -> Fix | None:
    if not isinstance(node, cst.Subscript):
        return None
    statement = ctx.parent(node)
    if not isinstance(statement, cst.AugAssign) or statement.target is not node:
        return None
    method = _IN_PLACE.get(type(statement.operator))
    if method is None or not plain_reference(node.value) or len(node.slice) != 1 \
            or not isinstance(node.slice[0].slice, cst.Index) or not is_number(statement.value):
        return None
    x = ctx.code(node.value)
    mask = node.slice[0].slice.value
    if not _self_mask(mask, x, ctx):
        return None
    condition, value = ctx.code(mask), ctx.code(statement.value)
    line = ctx.statement(f"{x}.copy_(torch.where({condition}, {x}.clone().{method}({value}), {x}))")
    return Fix(
        code=finding.code, line=finding.line, col=finding.col,
        title=f"update {x} with torch.where instead of through the boolean mask",
        safety=SAFE,
        replacements={statement: line.body[0]},
        note="same values, dtype and errors in eager; the shape stays static under compile",
        needs_torch=True,
    )
