"""print / logging / warnings (TCL101, TCL104, TCL105): guard the statement with
`if not torch.compiler.is_compiling():`; debugger calls (TCL102): remove them (unsafe).
A data-dependent `if` whose body only reports (TCL201: `if not torch.isfinite(loss):
logger.warning(...)`) gets the same guard in front of its test: `if not
torch.compiler.is_compiling() and (test):`.

Under torch.compile the guard is a constant, so Dynamo drops the guarded statement and the
graph stays whole; eager runs execute it exactly as before. Only a call that is a whole
expression statement on its own line is rewritten (`y = print(x)` or `a; print(a)` are not).
"""

from __future__ import annotations

import libcst as cst

from ..names import LOG_METHODS, LOGGER_NAMES, dotted
from .base import SAFE, UNSAFE, Fix
from .exprs import pure

# The reporting calls TCL101/TCL105 flag; TCL104's logger calls are recognised as that rule does.
REPORT_FUNCTIONS = frozenset({"builtins.print", "warnings.warn", "warnings.warn_explicit"})
# A test that is safe to put after `not ... and` without parentheses.
ATOMIC_TESTS = (cst.Call, cst.Attribute, cst.Name, cst.Comparison, cst.Subscript, cst.UnaryOperation)

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


def _reporting_call(node: cst.BaseSmallStatement, ctx) -> cst.Call | None:
    """`print(...)`, `warnings.warn(...)`, `logger.info(...)` as a whole statement, else None."""
    if not isinstance(node, cst.Expr) or not isinstance(node.value, cst.Call):
        return None
    call = node.value
    qualname = ctx.qualify(call.func) or ""
    if qualname in REPORT_FUNCTIONS:
        return call
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value not in LOG_METHODS:
        return None
    if qualname.startswith("logging.") and qualname.count(".") == 1:
        return call
    owner = dotted(func.value) or ""
    if owner in ctx.index.loggers or owner.rsplit(".", 1)[-1] in LOGGER_NAMES:
        return call
    return None


def guard_reporting_branch(finding, if_node: cst.If, ctx) -> Fix | None:
    """TCL201 on `if <tensor test>:` whose body only prints / logs / warns, with no else
    (SAFE), or ends in a `raise` (UNSAFE: a data check skipped under compile).

    Prefixing the test with `not is_compiling() and` keeps eager runs identical (the test is
    evaluated and the body runs exactly as before) and, under torch.compile, short-circuits
    before the tensor's truth value is needed: the same trade as guarding each call on its own.
    """
    if if_node.orelse is not None or not isinstance(if_node.body, cst.IndentedBlock):
        return None
    if isinstance(ctx.parent(if_node), cst.If):
        return None  # an `elif`: its test only runs when the earlier tests were false
    calls, raises = [], []
    for statement in if_node.body.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            return None
        for small in statement.body:
            if isinstance(small, cst.Raise) and small.exc is not None and small.cause is None:
                raises.append(small)  # a data check: skipping it under compile is a real change
                continue
            call = _reporting_call(small, ctx)
            if call is None:
                return None
            calls.append(call)
    test = if_node.test
    test_code = ctx.code(test).strip()
    if not isinstance(test, ATOMIC_TESTS):
        test_code = f"({test_code})"
    guarded = ctx.expression(f"not {ctx.is_compiling()} and {test_code}")
    pure_parts = pure(test, ctx) and all(pure(arg.value, ctx) for call in calls for arg in call.args)
    note = "the branch (it only reports) is skipped under torch.compile; eager runs are unchanged"
    if not pure_parts:
        note += "; UNSAFE: its test or messages have side effects that would be skipped too"
    if raises:
        note = ("UNSAFE: the check no longer runs under torch.compile (compiled calls cannot raise "
                "here); eager runs are unchanged")
    return Fix(
        code=finding.code, line=finding.line, col=finding.col,
        title=f"skip the reporting branch under torch.compile (`not {ctx.is_compiling()} and ...`)",
        safety=SAFE if pure_parts and not raises else UNSAFE,
        # The whole `if` is replaced so that guards for the calls inside are not stacked on top.
        replacements={if_node: if_node.with_changes(test=guarded)},
        note=note,
        needs_torch=True,
    )
