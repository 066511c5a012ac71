"""The fix for a break no rewrite removes: turn on the Dynamo setting that does.

A finding that --follow-imports reports from a library cannot be rewritten: the code is someone
else's; and some breaks in the file's own code have no rewrite (`.item()` feeding arithmetic,
`nonzero`). When the checked file owns a `torch.compile` and the finding's rule is removed by a
setting (`Rule.removed_by`, measured per rule by the examples' test), the fix inserts
`torch._dynamo.config.<setting> = True` just before the statement that compiles: the
`torch.compile(...)` call, the `@torch.compile` function, or, for a helper the compiled code
calls, the file's first compile call (a file that compiles nothing gets no such fix: a library
module should not set process-wide state on import). Dynamo reads the setting when it traces (the first call),
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
    """One fix per setting, at the first compile statement that needs it, for the findings among
    `pairs`: in installed code, or in the file's own code where no rewrite covers them (the
    caller decides which)."""
    analysis, module = report.analysis, report.module
    fixes: dict[str, Fix] = {}
    branching = _functions_branching_on_captured_scalars(analysis)
    for finding, candidate in pairs:
        if not candidate.rule.removed_by:
            continue
        if finding.library:
            statement = _compile_statement(analysis, candidate.function, parents, module)
        elif "capture_scalar_outputs" in candidate.rule.removed_by and id(candidate.function.node) in branching:
            # The scalar steers a Python branch in the same function: under the setting the break
            # moves to the branch (TCL208), and nothing is gained. In installed code the same
            # case is left to --verify, which sees whether the breaks go down.
            continue
        else:
            statement = _own_compile_statement(candidate.function, analysis.index, parents)
        if statement is None:
            continue
        for setting in sorted(candidate.rule.removed_by):
            key = setting  # one line per setting: once it is in the file, it holds for every compile
            if key in fixes:
                continue
            line = cst.parse_statement(dynamo_settings.statement(setting) + module.default_newline,
                                       config=module.config_for_parsing)
            line = line.with_changes(leading_lines=statement.leading_lines)
            # A def keeps its blank lines above it (PEP 8); a plain statement follows the setting.
            after = statement if isinstance(statement, (cst.FunctionDef, cst.ClassDef)) else \
                statement.with_changes(leading_lines=())
            fixes[key] = Fix(
                finding.code, finding.line, finding.col,
                f"turn on torch._dynamo.config.{setting} before compiling",
                UNSAFE,
                {statement: cst.FlattenSentinel([line, after])},
                note=(f"UNSAFE: a process-wide Dynamo setting: {dynamo_settings.KNOWN[setting]}. "
                      + (f"It removes the break in {finding.library.split(':')[0]}, code you do not edit"
                         if finding.library else f"It removes the break at line {finding.line}, which has no rewrite")),
                needs_torch=True,
            )
    return list(fixes.values())


def _functions_branching_on_captured_scalars(analysis) -> set[int]:
    """Node ids of the functions with a TCL208 candidate (a Python branch on a scalar read from
    tensor data): the walk makes them whatever the settings, tcl check shows them only under one."""
    return {id(c.function.node) for result in analysis.results.values() for c in result.candidates
            if "capture_scalar_outputs" in c.rule.needs_settings}


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
    return _first_compile_call(index, parents)  # a helper a compiled function calls


def _own_compile_statement(function, index, parents) -> cst.BaseStatement | None:
    """For the file's own code: before its `@torch.compile` def, else before the file's first
    `torch.compile(...)` call, else before its first compiled def; None when it compiles nothing."""
    if function.is_compiled and function.index is index:
        return _innermost_statement(function.node, parents)
    first = _first_compile_call(index, parents)
    if first is not None:
        return first
    for candidate in index.functions.values():
        if candidate.is_compiled:
            return _innermost_statement(candidate.node, parents)
    return None


def _first_compile_call(index, parents) -> cst.BaseStatement | None:
    """The statement holding the file's first `torch.compile(...)` call, or None."""
    for _target, _scope, call, _top in index.compile_sites:
        return _innermost_statement(call, parents)
    return None


def _innermost_statement(node, parents) -> cst.BaseStatement | None:
    while node is not None and not isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
        node = parents.get(node)
    return node
