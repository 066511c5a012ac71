"""The current spelling of a deprecated scalar-first call (TCL418).

torch defines each deprecated overload as the current one with its arguments reordered
(`add_(Scalar alpha, Tensor other)` is `add_(other, alpha=alpha)`): the rewrite moves each
scalar to its keyword and keeps the tensors positional in their order (`p.add_(grad, alpha=-lr)`).
Where that would change the order in which something with an effect is evaluated (a scalar that
calls a function, or a name read before a tensor argument's call), every argument is passed by
its keyword in the original order instead (`p.add_(alpha=-lr, other=g.sign())`), which torch's
parser also matches to the current signature. Either way each argument is evaluated once, in an
order that cannot change a result: eager results are identical for every input eager accepted
(SAFE), and the compiler traces the new form.
"""

from __future__ import annotations

import libcst as cst

from .base import SAFE, Fix


def fix_deprecated_signature(finding, node: cst.CSTNode, ctx) -> Fix | None:
    from ..rules.signatures import deprecated_form  # here: the rule's module imports this one

    if not isinstance(node, cst.Call) or not isinstance(node.func, cst.Attribute):
        return None
    params = deprecated_form(node, node.func.attr.value, ctx.version)
    if params is None:
        return None
    moved = _moves_past_calls(node.args, params)
    no_space = cst.SimpleWhitespace("")
    equal = cst.AssignEqual(whitespace_before=no_space, whitespace_after=no_space)
    comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    if moved:
        # A scalar would move past a call (or a call past the tensors): name every argument
        # instead, in the original order, so each is evaluated exactly when it was.
        new_args = [arg.with_changes(keyword=cst.Name(name), equal=equal, comma=comma)
                    for arg, (_, name) in zip(node.args, params)]
    else:
        new_args = [arg.with_changes(comma=comma) for arg, (kind, _) in zip(node.args, params) if kind == "Tensor"]
        new_args += [arg.with_changes(keyword=cst.Name(name), equal=equal, comma=comma)
                     for arg, (kind, name) in zip(node.args, params) if kind == "Scalar"]
    new_args[-1] = new_args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    replacement = node.with_changes(args=new_args)
    return Fix(
        code=finding.code, line=finding.line, col=finding.col,
        title=f"use the current signature: {ctx.code(replacement)}",
        safety=SAFE,
        replacements={node: replacement},
        note="the deprecated overload is defined as this call: the same result in eager",
    )


def _moves_past_calls(args, params) -> bool:
    """Whether putting the scalars after the tensors changes the order of anything that could
    have an effect: a scalar that calls something, or one that reads names while a tensor
    argument after it calls something (which might change what the name holds)."""
    for position, (arg, (kind, _)) in enumerate(zip(args, params)):
        if kind != "Scalar":
            continue
        later_tensors = [a for a, (k, _) in zip(args[position + 1:], params[position + 1:]) if k == "Tensor"]
        if _has_call(arg.value) or (not _is_literal(arg.value) and any(_has_call(a.value) for a in later_tensors)):
            return True
    return False


def _is_literal(node: cst.BaseExpression) -> bool:
    """Numbers and arithmetic on numbers only: nothing another argument could change."""
    if isinstance(node, (cst.Integer, cst.Float)):
        return True
    if isinstance(node, cst.UnaryOperation):
        return _is_literal(node.expression)
    if isinstance(node, cst.BinaryOperation):
        return _is_literal(node.left) and _is_literal(node.right)
    return False


def _has_call(node: cst.BaseExpression) -> bool:
    found = []

    class Calls(cst.CSTVisitor):
        def visit_Call(self, call: cst.Call) -> None:
            found.append(call)

    node.visit(Calls())
    return bool(found)
