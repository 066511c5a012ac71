"""Validation guards -> in-graph checks: `if <tensor test>: raise E(...)` (TCL201, and TCL203 /
TCL204 when the test reads `.item()` / `float(t)`) becomes

    # torch.compile: this check runs in the graph and raises RuntimeError, not E
    if torch.compiler.is_compiling():
        torch._assert_async(<tensor that is true when the check passes>, "E: <test>")
    elif <test>:
        raise E(...)

Eager runs take the `elif`: the same test, the same exception, the same message, so eager results
are identical for every input. Under torch.compile the test becomes a graph op and
`torch._assert_async` fails the call when the check fails (measured on torch 2.13, CPU, backends
eager and inductor: the break is gone and a failing input raises RuntimeError with the message).
What changes under compile is the exception type, and on CUDA the failure is a device-side
assert, reported asynchronously as "CUDA error: device-side assert triggered" without the
message (pytorch/pytorch#131491): the diff says so.

The test is split into a Python part and a tensor part so that nothing reads a tensor's truth
value under compile: `P and T` checks `T` in the graph only when the Python condition `P` holds
(`if is_compiling() and P:`), `P or T` only when it does not (`P` true raises as written, with
no tensor read). `T1 and T2` / `T1 or T2` become `torch.logical_and/or`, which evaluate both
operands: only when both are side-effect free and index nothing (an index that the first operand
guards could fail when evaluated anyway). Tests with a tensor operand before a Python one, chained
comparisons, `elif`s and `if`s with an `else` are left to the other fixes.
"""

from __future__ import annotations

import json

import libcst as cst

from ..dataflow import Kind
from .base import SAFE, Fix, Safety
from .exprs import boolean_operands, pure, tensor_condition, tensor_valued
from .guards import _reporting_call


# Inductor dropped `aten._assert_async.msg` as a no-op until it gained a device-assert lowering
# (pytorch/pytorch#147282, fixed by #160677, August 2025: torch 2.9). For older targets the
# rewrite would silently lose the check under the default backend, so it is not offered.
INDUCTOR_KEEPS_ASSERTS = (2, 9)


def check_in_graph(finding, if_node: cst.If, test: cst.BaseExpression, ctx, safety: Safety = SAFE,
                   notes: tuple[str, ...] = ()) -> Fix | None:
    """The rewrite above for `if_node`, whose (possibly `.item()`-stripped) test is `test`."""
    if ctx.version < INDUCTOR_KEEPS_ASSERTS:
        return None
    raised = _final_raise(if_node, ctx)
    exception = None if raised is None else _exception_name(raised, ctx)
    if exception is None or not isinstance(ctx.parent(if_node), cst.IndentedBlock):
        return None
    python_test, negate_python, tensor_test = _split(test, ctx)
    passes = _passes(tensor_test, ctx)
    if passes is None:
        return None
    compiling = ctx.is_compiling()
    header = compiling
    if python_test is not None:
        header = f"{compiling} and {_python_test(python_test, negate_python, ctx)}"
    message = json.dumps(f"{exception}: {_message(raised, if_node, ctx)}")
    check = ctx.statement(
        f"if {header}:\n    torch._assert_async({passes}, {message})\nelif {ctx.code(if_node.test).strip()}:\n    pass"
    )
    original_elif = cst.If(test=if_node.test, body=if_node.body, orelse=None,
                           whitespace_before_test=if_node.whitespace_before_test,
                           whitespace_after_test=if_node.whitespace_after_test)
    changes = f"RuntimeError, not {exception}" if exception.rsplit(".", 1)[-1] != "RuntimeError" else "RuntimeError"
    comment = cst.EmptyLine(comment=cst.Comment(f"# torch.compile: this check runs in the graph and raises {changes}"))
    replacement = check.with_changes(orelse=original_elif, leading_lines=[*if_node.leading_lines, comment])
    note = (f"eager runs are unchanged; under torch.compile the check stays, in the graph: a failing "
            f"input raises {changes.replace(', not', ' instead of')} (on CUDA a device-side assert, "
            f"reported asynchronously and without the message)")
    if notes:
        note = "; ".join([*notes, note])
    return Fix(
        code=finding.code, line=finding.line, col=finding.col,
        title="check in the graph under torch.compile (`torch._assert_async`), raise as before in eager",
        safety=safety,
        replacements={if_node: replacement},
        note=note,
        needs_torch=True,
    )


def _final_raise(if_node: cst.If, ctx) -> cst.Raise | None:
    """The `raise E(...)` / `raise E` that ends the body when the `if` has no else, is not an
    `elif`, and its body only reports before raising; else None."""
    if if_node.orelse is not None or isinstance(ctx.parent(if_node), cst.If):
        return None
    if not isinstance(if_node.body, cst.IndentedBlock):
        return None
    smalls = []
    for statement in if_node.body.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            return None
        smalls.extend(statement.body)
    if not smalls or not isinstance(smalls[-1], cst.Raise) or smalls[-1].exc is None:
        return None
    if any(_reporting_call(small, ctx) is None for small in smalls[:-1]):
        return None
    return smalls[-1]


def _exception_name(raised: cst.Raise, ctx) -> str | None:
    """`E` of `raise E(...)` / `raise E` when it is a (dotted) name."""
    name = raised.exc.func if isinstance(raised.exc, cst.Call) else raised.exc
    text = ctx.code(name).strip()
    return text if text.replace(".", "").replace("_", "").isalnum() else None


def _message(raised: cst.Raise, if_node: cst.If, ctx) -> str:
    """The raise's own message when it is a constant string, else the test that failed."""
    exc = raised.exc
    if isinstance(exc, cst.Call) and exc.args and exc.args[0].keyword is None:
        first = exc.args[0].value
        if isinstance(first, (cst.SimpleString, cst.ConcatenatedString)):
            value = first.evaluated_value
            if isinstance(value, str):
                return value
    return " ".join(ctx.code(if_node.test).split())


def _split(test: cst.BaseExpression, ctx) -> tuple[cst.BaseExpression | None, bool, cst.BaseExpression]:
    """(the Python part or None, whether the compile branch needs `not` on it, the tensor part)."""
    if isinstance(test, cst.BooleanOperation) and _python_only(test.left, ctx) and not _python_only(test.right, ctx):
        return test.left, isinstance(test.operator, cst.Or), test.right
    return None, False, test


def _python_only(node: cst.BaseExpression, ctx) -> bool:
    """A side-effect-free test of Python values (flags, `x is None`, shapes): Dynamo evaluates it
    while tracing, so branching on it breaks nothing."""
    return all(ctx.kind(o) == Kind.META and not tensor_valued(o, ctx) and pure(o, ctx) for o in boolean_operands(node))


def _passes(test: cst.BaseExpression, ctx) -> str | None:
    """Code of a one-element bool tensor that is true when `test` is false (the check passes)."""
    if not all(tensor_valued(operand, ctx) for operand in boolean_operands(test)):
        return None
    if _contains(test, cst.BooleanOperation) and not (pure(test, ctx) and not _contains(test, cst.Subscript)):
        return None  # logical_and/or evaluate both operands
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = tensor_condition(test.expression, ctx)
        if inner is None:
            return None
        code = inner.code
        while code.startswith("(") and code.endswith(")") and _balanced(code[1:-1]):
            code = code[1:-1]
        return code
    condition = tensor_condition(test, ctx)
    if condition is None:
        return None
    return f"torch.logical_not({condition.code})"


def _contains(node: cst.CSTNode, kind: type) -> bool:
    """Whether `node` holds a node of type `kind` (a `BooleanOperation`, a `Subscript`)."""
    found = []

    class Find(cst.CSTVisitor):
        def on_visit(self, n: cst.CSTNode) -> bool:
            if isinstance(n, kind):
                found.append(n)
            return not found

    node.visit(Find())
    return bool(found)


def _python_test(node: cst.BaseExpression, negate: bool, ctx) -> str:
    """`node`'s code, after `and` or `and not` in the compile branch's header."""
    code = ctx.code(node).strip()
    atomic = (cst.Name, cst.Attribute, cst.Call, cst.Subscript) + (() if negate else (cst.Comparison,))
    code = code if isinstance(node, atomic) else f"({code})"
    return f"not {code}" if negate else code


def _balanced(code: str) -> bool:
    """Whether the parentheses of `code` pair up on their own (`(a) & (b)` does not)."""
    depth = 0
    for char in code:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth < 0:
            return False
    return depth == 0
