"""The fix for a break in an installed package: turn on the Dynamo setting that removes it.

A finding that --follow-imports reports from a library cannot be rewritten: the code is someone
else's. When the checked file owns the `torch.compile` that reaches it and the finding's rule is
removed by a setting (`Rule.removed_by`, measured per rule by the examples' test), the fix inserts
`torch._dynamo.config.<setting> = True` just before the statement that compiles: the
`torch.compile(...)` call, the `@torch.compile` function, or, for a helper the compiled code
calls, the file's first compile call. Dynamo reads the setting when it traces (the first call),
so before the compile call is early enough. It is an UNSAFE fix: the setting is process-wide, a
Python branch on a captured value still breaks (TCL208 then says where), and a backend must
handle the captured ops; `tcl fix --verify` tries it on the compiler first. Once the line is in
the file, tcl check reads it (tcl/dynamo_settings.py) and the findings it removes are gone, so
the fix is applied once.
"""

from __future__ import annotations

import libcst as cst

from .. import dynamo_settings
from ..module_index import FunctionInfo
from .base import UNSAFE, Fix


def settings_fixes(report, pairs, parents) -> list[Fix]:
    """One fix per (compile statement, setting) for the library findings among `pairs`."""
    analysis, module = report.analysis, report.module
    fixes: dict[tuple, Fix] = {}
    for finding, candidate in pairs:
        if not finding.library or not candidate.rule.removed_by:
            continue
        statement = _compile_statement(analysis, candidate.function, parents, module)
        if statement is None:
            continue
        for setting in sorted(candidate.rule.removed_by):
            key = (id(statement), setting)
            if key in fixes:
                continue
            line = cst.parse_statement(dynamo_settings.statement(setting) + module.default_newline,
                                       config=module.config_for_parsing)
            line = line.with_changes(leading_lines=statement.leading_lines)
            fixes[key] = Fix(
                finding.code, finding.line, finding.col,
                f"turn on torch._dynamo.config.{setting} before compiling",
                UNSAFE,
                {statement: cst.FlattenSentinel([line, statement.with_changes(leading_lines=())])},
                note=(f"UNSAFE: a process-wide Dynamo setting: {dynamo_settings.KNOWN[setting]}. "
                      f"It removes the break in {finding.library.split(':')[0]}, code you do not edit"),
                needs_torch=True,
            )
    return list(fixes.values())


def _compile_statement(analysis, function, parents, module) -> cst.BaseStatement | None:
    """The statement of the checked file before which the setting goes, or None."""
    anchor = analysis.anchor_of(function)
    if anchor is None:
        return None
    index, node, owner = anchor
    if index.module is not module:
        return None
    if not isinstance(owner, FunctionInfo):  # `torch.compile(lib_obj)` in the checked code
        return _innermost_statement(node, parents)
    if owner.is_compiled and isinstance(owner.node, cst.FunctionDef):  # `@torch.compile def step`
        return _innermost_statement(owner.node, parents)
    for _target, _scope, call, _top in index.compile_sites:  # a helper a compiled function calls
        return _innermost_statement(call, parents)
    return None


def _innermost_statement(node, parents) -> cst.BaseStatement | None:
    while node is not None and not isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
        node = parents.get(node)
    return node
