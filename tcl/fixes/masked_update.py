"""`x[x > c] -= d` and `out[m] = x[m]` rewritten as static-shape selects (TCL301).

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
from .exprs import MASK_FUNCTIONS, is_number, plain_reference, pure

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
    """TCL301 at a boolean-mask read: `x[x > c] -= d` (here) or `out[m] = x[m]` (fix_masked_copy)."""
    return _fix_masked_augment(finding, node, ctx) or fix_masked_copy(finding, node, ctx)


def _fix_masked_augment(finding, node: cst.CSTNode, ctx) -> Fix | None:
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


# -- `out[m] = x[m]`: a masked copy --------------------------------------------------------------
#
# A masked copy reads `x[m]` (data-dependent length, GB0036) and writes it through the same mask.
# As a select over whole tensors:
#
#     out[m] = x[m]          ->   out.copy_(torch.where(m, x, out))
#     out[m] = 1.0 / x[m]    ->   out.copy_(torch.where(m, 1.0 / x, out))
#
# SAFE when `m`, `x` and `out` provably have one shape (below): `where` then selects exactly the
# elements the index_put_ writes, the other elements of `out` keep their bits, `copy_` writes in
# place as index_put_ does (views and autograd see the same update), and every read happens before
# the write. The value may be `x[m]` under + - * / with number literals or unary minus: IEEE
# arithmetic gives each element the same bits whether it is computed over `x` or over `x[m]`
# (transcendental functions are left alone: CPU kernels may round a vector lane and a scalar tail
# differently). One relaxation: index_put_ raises when the value's dtype differs from `out`'s;
# `copy_` casts instead.
#
# One shape, proven from the function's own code (no shape-changing in-place method such as
# `resize_`, `unsqueeze_` or `t_` may appear in it): `x` and `out` are the same value up to
# shape-keeping steps -- a parameter or a binding reaching the statement, through
# `torch.zeros_like(x)` / `ones_like` / `empty_like` / `full_like`, `x.clone()` / `.detach()` /
# `.contiguous()` / a dtype cast -- and `m` is an elementwise function of `x` (`x > c`, `~m`,
# `m1 & m2`, `torch.isnan(x)`, a name bound to one). Such a mask broadcasts its operands, so its
# shape is x's or larger; a larger mask makes `x[m]` raise IndexError in eager, and the rewrite
# raises too (RuntimeError: `copy_` cannot write a larger result into `out`). So either both run
# and write the same elements, or both raise.

_LIKE_FUNCTIONS = frozenset({
    "torch.zeros_like", "torch.ones_like", "torch.empty_like", "torch.full_like", "torch.rand_like",
    "torch.randn_like", "torch.clone",
})
_SAME_SHAPE_METHODS = frozenset({
    "clone", "detach", "contiguous", "float", "double", "half", "bfloat16", "int", "long", "bool",
})
_MASK_CALLS = MASK_FUNCTIONS | {"logical_not"}
_RESHAPING_IN_PLACE = frozenset({
    "resize_", "resize_as_", "set_", "unsqueeze_", "squeeze_", "t_", "transpose_", "swapdims_",
    "swapaxes_", "as_strided_",
})
_ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide)


class _Binding:
    __slots__ = ("order", "value", "conditional")

    def __init__(self, order: int, value: cst.BaseExpression | None, conditional: bool) -> None:
        self.order, self.value, self.conditional = order, value, conditional


_BRANCHING = (cst.If, cst.For, cst.While, cst.Try, cst.With, cst.Match) if hasattr(cst, "Match") \
    else (cst.If, cst.For, cst.While, cst.Try, cst.With)


class _Bindings(cst.CSTVisitor):
    """Every binding of a name in one function's own scope, in source order: its position, the
    value of a plain `name = value`, and whether it sits under a branch, loop, try or with.
    Also where `statement` is and whether it runs in a loop; and whether any shape-changing
    in-place method is called."""

    def __init__(self, statement: cst.CSTNode) -> None:
        self.statement = statement
        self.order = 0
        self.nesting: list[cst.CSTNode] = []
        self.names: dict[str, list[_Binding]] = {}
        self.statement_order: int | None = None
        self.statement_in_loop = False
        self.reshapes = False

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.order += 1
        if node is self.statement:
            self.statement_order = self.order
            self.statement_in_loop = any(isinstance(n, (cst.For, cst.While)) for n in self.nesting)
        if isinstance(node, _BRANCHING):
            self.nesting.append(node)
        return super().on_visit(node)

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if self.nesting and self.nesting[-1] is original_node:
            self.nesting.pop()
        super().on_leave(original_node)

    def _bind(self, target: cst.BaseExpression, value: cst.BaseExpression | None = None) -> None:
        if isinstance(target, cst.Name):
            self.names.setdefault(target.value, []).append(_Binding(self.order, value, bool(self.nesting)))
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._bind(element.value)
        elif isinstance(target, cst.StarredElement):
            self._bind(target.value)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bind(target.target, node.value if len(node.targets) == 1 else None)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._bind(node.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bind(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._bind(node.target)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._bind(node.asname.name)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bind(node.target)

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        name = node.asname.name if node.asname else node.name
        if isinstance(name, cst.Name):
            self._bind(name)

    def visit_Global(self, node: cst.Global) -> None:
        for item in node.names:  # bound elsewhere too: never one known value here
            self._bind(item.name)
            self._bind(item.name)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        for item in node.names:
            self._bind(item.name)
            self._bind(item.name)

    def visit_Del(self, node: cst.Del) -> None:
        self._bind(node.target)

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        if node.name is not None:
            self._bind(node.name.name)

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Attribute) and node.func.attr.value in _RESHAPING_IN_PLACE:
            self.reshapes = True

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self._bind(node.name)
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self._bind(node.name)
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False


class _Shapes:
    """The tensor whose shape an expression provably has (its name), or None.

    A name used at a point (a position in source order) has the value of its reaching binding:
    the one binding before that point, or the last of several that are all unconditional (a
    parameter counts, before everything). A point in a loop also sees later bindings, so a name
    bound after the statement in its loop has no known value."""

    def __init__(self, ctx, function: cst.FunctionDef, statement: cst.CSTNode) -> None:
        self.ctx = ctx
        self.bindings = _Bindings(statement)
        function.body.visit(self.bindings)
        params = function.params
        self.params = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                self.params.add(star.name.value)

    def reaching(self, name: str, order: int) -> tuple[str, _Binding | None] | None:
        """("param", None) / ("local", binding) for `name` used at `order`, or None."""
        bindings = self.bindings.names.get(name, [])
        if self.bindings.statement_in_loop and any(b.order > order for b in bindings):
            return None
        before = [b for b in bindings if b.order < order]
        if not before:
            return ("param", None) if name in self.params else None
        if len(before) > 1 and any(b.conditional for b in before):
            return None
        if len(before) == 1 and before[0].conditional and name in self.params:
            return None  # the parameter or the binding, depending on the branch
        return "local", before[-1]

    def base(self, node: cst.BaseExpression, order: int, depth: int = 0) -> str | None:
        """The value whose shape `node` has exactly: a parameter or a binding that is not one of
        the shape-keeping forms below, as `name@where`."""
        if depth > 8:
            return None
        if isinstance(node, cst.Name):
            reached = self.reaching(node.value, order)
            if reached is None:
                return None
            where, binding = reached
            if binding is None:
                return f"{node.value}@param"
            if binding.value is None:
                return None
            return self.base(binding.value, binding.order, depth + 1) or f"{node.value}@{binding.order}"
        if isinstance(node, cst.Call) and not any(a.star for a in node.args):
            args = [a.value for a in node.args if a.keyword is None]
            name = self.ctx.qualify(node.func) or ""
            if name in _LIKE_FUNCTIONS and args:
                return self.base(args[0], order, depth + 1)
            func = node.func
            if isinstance(func, cst.Attribute) and not name.startswith("torch.") \
                    and func.attr.value in _SAME_SHAPE_METHODS and not node.args:
                return self.base(func.value, order, depth + 1)
        return None

    def covered(self, node: cst.BaseExpression, order: int, depth: int = 0) -> set[str]:
        """Values whose shape a boolean mask's shape provably contains: an elementwise comparison,
        `~`, `&`, `|`, `^`, isnan and the like broadcast their operands, so the mask has each
        operand's shape or a larger one (and a larger mask makes `x[mask]` raise in eager)."""
        if depth > 8:
            return set()
        found: set[str] = set()
        exact = self.base(node, order, depth + 1)
        if exact is not None:
            found.add(exact)
        if isinstance(node, cst.Name):
            reached = self.reaching(node.value, order)
            if reached is not None and reached[1] is not None and reached[1].value is not None:
                found |= self.covered(reached[1].value, reached[1].order, depth + 1)
            return found
        operands: list[cst.BaseExpression] = []
        if isinstance(node, cst.Comparison) and len(node.comparisons) == 1:
            operands = [node.left, node.comparisons[0].comparator]
        elif isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.BitInvert):
            operands = [node.expression]
        elif isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.BitAnd, cst.BitOr, cst.BitXor)):
            operands = [node.left, node.right]
        elif isinstance(node, cst.Call) and not any(a.star or a.keyword for a in node.args):
            name = self.ctx.qualify(node.func) or ""
            short = name.rsplit(".", 1)[-1]
            if name.startswith("torch.") and (short in _MASK_CALLS or short in _LOGICAL):
                operands = [a.value for a in node.args]
            elif isinstance(node.func, cst.Attribute) and not name.startswith("torch.") \
                    and (node.func.attr.value in _MASK_CALLS or node.func.attr.value in _LOGICAL):
                operands = [node.func.value, *(a.value for a in node.args)]
        for operand in operands:
            found |= self.covered(operand, order, depth + 1)
        return found


_LOGICAL = frozenset({"logical_and", "logical_or", "logical_xor", "logical_not"})


def _value_over(value: cst.BaseExpression, read: cst.Subscript, ctx) -> str | None:
    """`value` with the masked read `x[m]` replaced by `x`, when the value is that read under
    + - * / with number literals or unary minus; else None."""
    if value is read:
        return ctx.code(read.value)
    if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus):
        inner = _value_over(value.expression, read, ctx)
        return f"-({inner})" if inner is not None else None
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, _ARITHMETIC):
        left, right = value.left, value.right
        if is_number(left) or is_number(right):
            other = right if is_number(left) else left
            inner = _value_over(other, read, ctx)
            if inner is None:
                return None
            op = ctx.code(value.operator).strip()
            if not inner.isidentifier():
                inner = f"({inner})"
            return f"{ctx.code(left)} {op} {inner}" if is_number(left) else f"{inner} {op} {ctx.code(right)}"
    return None


def fix_masked_copy(finding, node: cst.CSTNode, ctx) -> Fix | None:
    """TCL301 at the read `x[m]` of `out[m] = x[m]` (or `out[m] = 1.0 / x[m]`, ...)."""
    if not isinstance(node, cst.Subscript) or len(node.slice) != 1 \
            or not isinstance(node.slice[0].slice, cst.Index) or node.slice[0].slice.star:
        return None
    statement = next((a for a in ctx.ancestors(node) if isinstance(a, cst.BaseSmallStatement)), None)
    if not isinstance(statement, cst.Assign) or len(statement.targets) != 1:
        return None
    target = statement.targets[0].target
    if not isinstance(target, cst.Subscript) or len(target.slice) != 1 \
            or not isinstance(target.slice[0].slice, cst.Index) or target.slice[0].slice.star:
        return None
    mask = node.slice[0].slice.value
    # The mask is evaluated once instead of twice: it must not have an effect.
    if ctx.code(target.slice[0].slice.value) != ctx.code(mask) or not pure(mask, ctx):
        return None
    if not (isinstance(node.value, cst.Name) and isinstance(target.value, cst.Name)):
        return None
    value = _value_over(statement.value, node, ctx)
    function = ctx.function.node if ctx.function is not None else None
    if value is None or not isinstance(function, cst.FunctionDef):
        return None
    shapes = _Shapes(ctx, function, statement)
    order = shapes.bindings.statement_order
    if shapes.bindings.reshapes or order is None:
        return None
    source, destination = shapes.base(node.value, order), shapes.base(target.value, order)
    if source is None or source != destination or source not in shapes.covered(mask, order):
        return None
    out, m = ctx.code(target.value), ctx.code(mask)
    line = ctx.statement(f"{out}.copy_(torch.where({m}, {value}, {out}))")
    return Fix(
        code=finding.code, line=finding.line, col=finding.col,
        title=f"copy into {out} with torch.where instead of through the boolean mask",
        safety=SAFE,
        replacements={statement: line.body[0]},
        note=(f"{m}, {' and '.join(dict.fromkeys((ctx.code(node.value), out)))} have one shape, so the same "
              "elements are written; "
              "the shape stays static under compile (a dtype index_put_ would reject is cast instead)"),
        needs_torch=True,
    )
