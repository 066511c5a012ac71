"""F.one_hot without num_classes (TCL302).

Eager `F.one_hot(t)` is `t.max() + 1` wide, a value only the data knows. A constant
`num_classes` changes the output shape whenever a batch lacks the largest class, so tcl adds it
only when the same function proves the width: the one-hot tensor is the target of a loss that
requires `target.shape == input.shape` (binary_cross_entropy[_with_logits]). Every eager run
that did not raise had `t.max() + 1 == input.shape[-1]`, so `num_classes=input.shape[-1]` gives
the identical tensor (SAFE; inputs that made the loss raise a shape error now get a
zero-padded one-hot instead). Anything else is a suggestion with `num_classes=...` to fill in,
never applied.
"""

from __future__ import annotations

import libcst as cst

from .base import SAFE, SUGGESTION, Fix
from .exprs import positional

SAME_SHAPE_LOSSES = frozenset({
    "torch.nn.functional.binary_cross_entropy_with_logits",
    "torch.nn.functional.binary_cross_entropy",
    "torch.binary_cross_entropy_with_logits",
})
CASTS = frozenset({"to", "float", "double", "half", "bfloat16", "type_as", "long", "int", "type"})


def fix_one_hot(finding, node: cst.CSTNode, ctx) -> Fix | None:
    if not isinstance(node, cst.Call) or not positional(node):
        return None
    width = _derived_width(node, ctx)
    args = [a for a in node.args if not (a.keyword is not None and a.keyword.value == "num_classes")]
    if len([a for a in args if a.keyword is None]) >= 2:
        args = [args[0]] + args[2:]  # a positional num_classes=-1
    value = width if width is not None else "..."
    last = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    no_space = cst.SimpleWhitespace("")
    new_arg = cst.Arg(keyword=cst.Name("num_classes"), value=ctx.expression(value),
                      equal=cst.AssignEqual(whitespace_before=no_space, whitespace_after=no_space))
    replacement = node.with_changes(args=[*args[:-1], last, new_arg])
    if width is not None:
        return Fix(
            code=finding.code, line=finding.line, col=finding.col,
            title=f"pass num_classes={width}",
            safety=SAFE,
            replacements={node: replacement},
            note=f"the one-hot feeds a loss that requires its shape to equal {width.rsplit('.', 1)[0]}'s",
        )
    return Fix(
        code=finding.code, line=finding.line, col=finding.col,
        title="pass num_classes=<the number of classes>",
        safety=SUGGESTION,
        replacements={node: replacement},
        note="the number of classes cannot be derived here; eager output width is labels.max() + 1",
    )


def _derived_width(call: cst.Call, ctx) -> str | None:
    # `name = F.one_hot(t)` (possibly followed by casts such as `.float()`)
    node: cst.CSTNode = call
    parent = ctx.parent(node)
    while isinstance(parent, cst.Attribute) and parent.attr.value in CASTS:
        grand = ctx.parent(parent)
        if not isinstance(grand, cst.Call) or grand.func is not parent:
            return None
        node, parent = grand, ctx.parent(grand)
    if not (isinstance(parent, cst.Assign) and parent.value is node and len(parent.targets) == 1
            and isinstance(parent.targets[0].target, cst.Name)):
        return None
    name = parent.targets[0].target.value
    function = ctx.function.node
    assignments = _assignment_counts(function)
    if assignments.get(name, 0) != 1:
        return None
    for loss in _calls(function.body):
        if ctx.qualify(loss.func) not in SAME_SHAPE_LOSSES:
            continue
        args = positional(loss)
        keywords = {a.keyword.value: a.value for a in loss.args if a.keyword is not None}
        target = args[1] if len(args) > 1 else keywords.get("target")
        source = args[0] if args else keywords.get("input")
        if target is None or source is None or not _is_cast_of(target, name):
            continue
        if not isinstance(source, cst.Name) or not _stable(source.value, function, assignments):
            continue
        return f"{source.value}.shape[-1]"
    return None


def _is_cast_of(node: cst.BaseExpression, name: str) -> bool:
    while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in CASTS:
        node = node.func.value
    return isinstance(node, cst.Name) and node.value == name


def _stable(name: str, function: cst.FunctionDef, assignments: dict[str, int]) -> bool:
    """A parameter never rebound in the function: the same tensor everywhere in it."""
    params = function.params
    is_param = any(p.name.value == name for p in [*params.posonly_params, *params.params, *params.kwonly_params])
    return is_param and assignments.get(name, 0) == 0


def _assignment_counts(function: cst.FunctionDef) -> dict[str, int]:
    counts: dict[str, int] = {}

    class Count(cst.CSTVisitor):
        def _add(self, target) -> None:
            if isinstance(target, cst.Name):
                counts[target.value] = counts.get(target.value, 0) + 1
            elif isinstance(target, (cst.Tuple, cst.List)):
                for element in target.elements:
                    value = element.value
                    self._add(value.value if isinstance(value, cst.StarredElement) else value)

        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            self._add(node.target)

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            self._add(node.target)

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            self._add(node.target)

        def visit_For(self, node: cst.For) -> None:
            self._add(node.target)

        def visit_WithItem(self, node: cst.WithItem) -> None:
            if node.asname is not None:
                self._add(node.asname.name)

        def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
            self._add(node.target)

    function.body.visit(Count())
    return counts


def _calls(node: cst.CSTNode) -> list[cst.Call]:
    found: list[cst.Call] = []

    class Collect(cst.CSTVisitor):
        def visit_Call(self, n: cst.Call) -> None:
            found.append(n)

    node.visit(Collect())
    return found
