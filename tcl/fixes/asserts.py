"""Asserts on tensor data.

Measured on torch 2.13 (tests/test_fix_properties.py re-checks it): Dynamo turns
`assert <tensor>` into an in-graph `torch._assert_async` only when the message is absent or a
constant string. `torch._check(cond, msg)` needs a Python bool or SymBool (a tensor raises
TypeError), and `torch._check_tensor_all` calls `.item()` (graph break GB0124), so neither is
the rewrite.

* TCL202 `assert t, f"... {v}"` -> `assert t, "... {v}"`: the f-string becomes a plain string.
  SAFE: the same AssertionError is raised for the same inputs; the message shows the
  placeholders instead of the formatted values (said next to the diff).
* TCL201 `assert not t, msg` -> `assert torch.logical_not(t), msg`: the same truth value for
  every tensor eager accepts (a multi-element tensor raises in both). `and`/`or` become
  torch.logical_and/or, which evaluate both operands: UNSAFE.
"""

from __future__ import annotations

import libcst as cst

from .base import SAFE, UNSAFE, Fix
from .exprs import tensor_condition

CONSTANT = (cst.SimpleString, cst.ConcatenatedString)


def constant_message(message: cst.BaseExpression, ctx) -> str | None:
    """A plain string literal carrying the message's text, formatting left unapplied."""
    if isinstance(message, cst.FormattedString):
        code = ctx.code(message.with_changes(lpar=[], rpar=[]))
        prefix = message.prefix
        plain = prefix.replace("f", "").replace("F", "")
        code = plain + code[len(prefix):]
    elif isinstance(message, cst.ConcatenatedString):
        left, right = constant_message(message.left, ctx), constant_message(message.right, ctx)
        if left is None or right is None:
            return None
        code = f"{left} {right}"
    elif isinstance(message, cst.SimpleString):
        code = ctx.code(message.with_changes(lpar=[], rpar=[]))
    elif (isinstance(message, cst.BinaryOperation) and isinstance(message.operator, cst.Modulo)
          and isinstance(message.left, CONSTANT)):
        code = ctx.code(message.left.with_changes(lpar=[], rpar=[]))
    elif (
        isinstance(message, cst.Call)
        and isinstance(message.func, cst.Attribute)
        and message.func.attr.value == "format"
        and isinstance(message.func.value, CONSTANT)
    ):
        code = ctx.code(message.func.value.with_changes(lpar=[], rpar=[]))
    else:
        return None
    try:
        parsed = cst.parse_expression(code)
    except cst.ParserSyntaxError:
        return None
    return code if isinstance(parsed, CONSTANT) else None


MESSAGE_NOTE = "the assert message is now a constant string: an eager failure shows the {...} placeholders, not the values"


def fix_assert_message(finding, node: cst.CSTNode, ctx) -> Fix | None:
    """TCL202: `node` is the test of `assert <tensor>, <non-constant message>`."""
    statement = ctx.parent(node)
    if not isinstance(statement, cst.Assert) or statement.msg is None:
        return None
    message = constant_message(statement.msg, ctx)
    if message is None:
        return None
    replacement = statement.with_changes(msg=ctx.expression(message))
    return Fix(
        code=finding.code, line=finding.line, col=finding.col,
        title="make the assert message a constant string",
        safety=SAFE,
        replacements={statement: replacement},
        note=MESSAGE_NOTE,
    )


def fix_assert_condition(finding, statement: cst.Assert, ctx) -> Fix | None:
    """TCL201 on `assert not t` / `assert a and b`: a tensor-valued test Dynamo can keep."""
    condition = tensor_condition(statement.test, ctx)
    if condition is None:
        return None
    changes = {"test": ctx.expression(condition.code)}
    notes = []
    if statement.msg is not None and not isinstance(statement.msg, CONSTANT):
        message = constant_message(statement.msg, ctx)
        if message is None:
            return None
        changes["msg"] = ctx.expression(message)
        notes.append(MESSAGE_NOTE)
    safety = SAFE
    if not condition.exact:
        safety = UNSAFE
        notes.insert(0, "UNSAFE: `and`/`or` now evaluate both operands")
    return Fix(
        code=finding.code, line=finding.line, col=finding.col,
        title="assert a tensor (torch.logical_not/and/or) so Dynamo keeps it in the graph",
        safety=safety,
        replacements={statement: statement.with_changes(**changes)},
        note="; ".join(notes),
        needs_torch=True,
    )
