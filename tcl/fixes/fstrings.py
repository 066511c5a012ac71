"""TCL601's fix: read the f-string's numbers into names first, so no break falls inside it.

`print(f"loss {loss.item():.4f} acc {acc.item():.3f}")` becomes

    loss_value = loss.item()
    acc_value = acc.item()
    print(f"loss {loss_value:.4f} acc {acc_value:.3f}")

Measured on torch 2.11, 2.13 and 2.14 (TCL601's VALID example): the reads still break the graph
(TCL203, each at its own line), but no break falls in the middle of the f-string any more, and
the compiled function no longer raises. Eager results are identical when the reads run in the
same order as before and nothing the statement evaluates before the f-string, or between the
reads, has an effect: the hoisted pieces are the f-string's reads (`.item()`, `.tolist()`,
`float(t)`, `int(t)`), its other pieces hold no call, the f-string is the statement's value or
an argument whose earlier arguments and callee are names, attributes or literals, and nothing
around it is evaluated conditionally (a lambda, a comprehension, `and`/`or`, `x if c else y`).
Anything else is left alone.
"""

from __future__ import annotations

import libcst as cst

from .base import SAFE, Fix
from .exprs import plain_reference, pure

_READ_METHODS = frozenset({"item", "tolist"})
_NUMBER_CALLS = frozenset({"builtins.int", "builtins.float"})
# What may stand between the f-string and its statement: evaluated once, in order.
_TRANSPARENT = (cst.Arg, cst.Call, cst.Element, cst.Tuple, cst.List, cst.Expr, cst.Assign, cst.AnnAssign,
                cst.Return)


def _is_read(node: cst.BaseExpression, ctx) -> bool:
    if not isinstance(node, cst.Call):
        return False
    if isinstance(node.func, cst.Attribute) and node.func.attr.value in _READ_METHODS and not node.args:
        return True
    return ctx.qualify(node.func) in _NUMBER_CALLS and len(node.args) == 1


def _evaluated_in_order(fstring: cst.FormattedString, statement: cst.SimpleStatementLine, ctx) -> bool:
    """Whether the f-string runs exactly once, after nothing with an effect."""
    child: cst.CSTNode = fstring
    for parent in ctx.ancestors(fstring):
        if parent is statement:
            return True
        if not isinstance(parent, _TRANSPARENT):
            return False
        if isinstance(parent, cst.Call):
            if child is parent.func or not plain_reference(parent.func):
                return False
            for arg in parent.args:
                if arg is child:
                    break
                if arg.star or not pure(arg.value, ctx):
                    return False
        if isinstance(parent, (cst.Tuple, cst.List)):  # `return x, f"..."`: elements run in order
            for element in parent.elements:
                if element is child:
                    break
                if isinstance(element, cst.StarredElement) or not pure(element.value, ctx):
                    return False
        if isinstance(parent, cst.Assign) and child is not parent.value:
            return False
        child = parent
    return False


def _name_for(read: cst.Call, taken: set[str]) -> str:
    receiver = read.func.value if isinstance(read.func, cst.Attribute) else read.args[0].value
    base = f"{receiver.value}_value" if isinstance(receiver, cst.Name) else "value"
    name, number = base, 2
    while name in taken:
        name, number = f"{base}{number}", number + 1
    taken.add(name)
    return name


def _names_in(node: cst.CSTNode) -> set[str]:
    names: set[str] = set()

    class Collector(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            names.add(name.value)

    node.visit(Collector())
    return names


def hoist_reads(finding, node: cst.CSTNode, ctx) -> Fix | None:
    if not isinstance(node, cst.FormattedString):
        return None
    statement = ctx.statement_of(node)
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    small = statement.body[0]
    if not isinstance(small, (cst.Expr, cst.Assign, cst.AnnAssign, cst.Return)):
        return None
    if not _evaluated_in_order(node, statement, ctx):
        return None
    pieces = [part for part in node.parts if isinstance(part, cst.FormattedStringExpression)]
    reads = [part for part in pieces if _is_read(part.expression, ctx)]
    if not reads or not all(pure(part.expression, ctx) for part in pieces if part not in reads) \
            or not all(pure(spec, ctx) for part in pieces for spec in (part.format_spec or ())):
        return None
    taken = _names_in(ctx.function.node) | set(ctx.index.functions) | set(ctx.index.classes)
    names = [_name_for(part.expression, taken) for part in reads]
    assignments = [
        ctx.statement(f"{name} = {ctx.code(part.expression)}").with_changes(leading_lines=())
        for name, part in zip(names, reads)
    ]
    assignments[0] = assignments[0].with_changes(leading_lines=statement.leading_lines)
    replaced = {id(part): name for part, name in zip(reads, names)}
    parts = [part.with_changes(expression=cst.Name(replaced[id(part)])) if id(part) in replaced else part
             for part in node.parts]
    new_fstring = node.with_changes(parts=parts)
    new_statement = statement.deep_replace(node, new_fstring).with_changes(leading_lines=())
    return Fix(
        code=finding.code, line=finding.line, col=finding.col,
        title="read the f-string's numbers into names before it",
        safety=SAFE,
        replacements={statement: cst.FlattenSentinel([*assignments, new_statement])},
        note=("the reads run in the same order, before the f-string; they still break the graph "
              "(TCL203), but the compiled function no longer raises"),
    )
