"""print / logging / warnings (TCL101, TCL104, TCL105): guard the statement with
`if not torch.compiler.is_compiling():`; debugger calls (TCL102): remove them (unsafe).

Under torch.compile the guard is a constant, so Dynamo drops the guarded statement and the
graph stays whole; eager runs execute it exactly as before. Only a call that is a whole
expression statement on its own line is rewritten (`y = print(x)` or `a; print(a)` are not).
"""

from __future__ import annotations

import libcst as cst

from .base import SAFE, UNSAFE, Fix
from .exprs import pure

WHAT = {
    "TCL101": "print() output",
    "TCL104": "the log record",
    "TCL105": "the warning",
}


def _statement_line(node: cst.CSTNode, ctx) -> tuple[cst.SimpleStatementLine, cst.Expr] | None:
    expr = ctx.parent(node)
    if not isinstance(expr, cst.Expr) or expr.value is not node:
        return None
    line = ctx.parent(expr)
    if not isinstance(line, cst.SimpleStatementLine):
        return None  # `if x: print(x)` on one line (a SimpleStatementSuite)
    if not isinstance(ctx.parent(line), cst.IndentedBlock):
        return None
    return line, expr


def guard_call(finding, node: cst.CSTNode, ctx) -> Fix | None:
    if not isinstance(node, cst.Call) or ctx.qualify(node.func) == "builtins.input":
        return None  # input() returns what the user types: guarding it changes the program
    found = _statement_line(node, ctx)
    if found is None:
        return None
    line, _ = found
    if len(line.body) != 1:
        return None
    guard = ctx.statement(f"if not {ctx.is_compiling()}:\n    pass")
    wrapped = guard.with_changes(
        body=cst.IndentedBlock(body=[line.with_changes(leading_lines=())]),
        leading_lines=line.leading_lines,
    )
    safe = all(pure(arg.value, ctx) for arg in node.args)
    note = f"{WHAT.get(finding.code, 'the call')} is skipped under torch.compile; eager runs are unchanged"
    if not safe:
        note += "; UNSAFE: its arguments have side effects that would be skipped too"
    return Fix(
        code=finding.code, line=finding.line, col=finding.col,
        title=f"guard with `if not {ctx.is_compiling()}:`",
        safety=SAFE if safe else UNSAFE,
        replacements={line: wrapped},
        note=note,
        needs_torch=True,
        guard=True,
    )


def remove_debugger(finding, node: cst.CSTNode, ctx) -> Fix | None:
    found = _statement_line(node, ctx)
    if found is None:
        return None
    line, expr = found
    if len(line.body) == 1:
        replacement = cst.RemoveFromParent()
    else:
        body = [s for s in line.body if s is not expr]
        body[-1] = body[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
        replacement = line.with_changes(body=body)
    return Fix(
        code=finding.code, line=finding.line, col=finding.col,
        title=f"remove `{ctx.code(node).strip()}`",
        safety=UNSAFE,
        replacements={line: replacement},
        note="UNSAFE: the debugger no longer stops in eager runs either",
    )
