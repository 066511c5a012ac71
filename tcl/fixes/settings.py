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

`tcl fix --verify` adds the settings the file's examples call for at run time
(`settings_for_breaks`): a break the examples hit whose GB id a setting removes (the id's own
hints in torch's graph-break registry, generated into torch_facts, or a rule measured to be
removed by it) gets the setting at the file's compile call even where no finding of tcl check
names that break; such a fix is only ever kept after the compiler shows the breaks go down.
"""

from __future__ import annotations

import libcst as cst

from .. import dynamo_settings
from ..module_index import FunctionInfo
from .base import UNSAFE, Fix


def logging_targets(sites) -> set[str]:
    """The logging functions that broke at `sites` ((gb id, file, line) of observed breaks), as
    ignore_logger_methods lists them: `logger.warning_once(` -> `logging.Logger.warning_once`,
    `logging.info(` -> `logging.info`. The GB id alone does not say which function it was."""
    import linecache
    import re

    from ..names import LOG_METHODS
    from ..rules import BY_CODE

    ids = set(BY_CODE["TCL104"].gb_ids())
    call = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\.(" + "|".join(sorted(LOG_METHODS)) + r")\s*\(")
    targets = set()
    for gb_id, path, line in sites:
        if gb_id not in ids or not path or not line:
            continue
        for receiver, method in call.findall(linecache.getline(path, line)):
            targets.add(f"logging.{method}" if receiver == "logging" else f"logging.Logger.{method}")
    return targets


def settings_for_breaks(gb_ids, version, logging_sites=()) -> dict[str, list[str]]:
    """setting -> the GB ids among `gb_ids` it may remove, for the settings tcl can insert and
    read back (dynamo_settings.KNOWN): those the targeted release's graph-break registry names in
    the id's hints, and those a rule reporting the id is measured to be removed by; and the
    logging functions of `logging_sites` ((gb id, file, line), logging_targets) as one
    ignore_logger_methods line."""
    from .. import torch_facts
    from ..rules import BY_CODE

    hinted = torch_facts.measured(tuple(version), "gb_settings")
    found: dict[str, list[str]] = {}
    for gb_id in sorted(set(i for i in gb_ids if i)):
        settings = set(hinted.get(gb_id, ()))
        for rule in BY_CODE.values():
            if gb_id in rule.gb_ids():
                # which logging function broke is not in the id: a finding names it instead
                settings |= {s for s in rule.removed_by if not s.startswith(dynamo_settings.IGNORED_LOGGING + ":")}
        for setting in sorted(settings & set(dynamo_settings.KNOWN)):
            found.setdefault(setting, []).append(gb_id)
    targets = logging_targets(logging_sites)
    if targets:
        setting = f"{dynamo_settings.IGNORED_LOGGING}:{','.join(sorted(targets))}"
        found[setting] = sorted({gb for gb, _, _ in logging_sites if gb in BY_CODE["TCL104"].gb_ids()})
    return found


def observed_settings_fixes(report, observed: dict[str, list[str]], parents) -> list[Fix]:
    """One fix per setting of `observed` (settings_for_breaks of the breaks the file's examples
    hit at run time) that the file does not set yet, before its first compile statement; none
    where the file compiles nothing. Line 0: the fix belongs to the file, not to a finding, and
    its key must not move when another setting goes in above the same statement."""
    analysis, module = report.analysis, report.module
    index = analysis.index
    statement = _first_compile_call(index, parents)
    if statement is None:
        statement = next((_innermost_statement(f.node, parents) for f in index.functions.values()
                          if f.is_compiled), None)
    if statement is None:
        return []
    already = dynamo_settings.settings_in_file(index)
    fixes = []
    for setting, gb_ids in sorted(observed.items()):
        if setting in already:
            continue
        ids = ", ".join(gb_ids)
        fixes.append(_setting_fix(setting, statement, module, ids, 0, 0, f"The examples break with {ids} at run time"))
    return fixes


def _setting_fix(setting: str, statement, module, code: str, line: int, col: int, why: str) -> Fix:
    new_line = cst.parse_statement(dynamo_settings.statement(setting) + module.default_newline,
                                   config=module.config_for_parsing)
    new_line = new_line.with_changes(leading_lines=statement.leading_lines)
    # A def keeps its blank lines above it (PEP 8); a plain statement follows the setting.
    after = statement if isinstance(statement, (cst.FunctionDef, cst.ClassDef)) else \
        statement.with_changes(leading_lines=())
    name, _, target = setting.partition(":")
    if target:
        title = f"list {target.replace(',', ', ')} in torch._dynamo.config.{name} before compiling"
    elif setting == dynamo_settings.REORDERABLE:
        title = f"register print and warnings.warn in torch._dynamo.config.{setting} before compiling"
    else:
        title = f"turn on torch._dynamo.config.{setting} before compiling"
    return Fix(code, line, col, title, UNSAFE,
               {statement: cst.FlattenSentinel([new_line, after])},
               note=f"UNSAFE: a process-wide Dynamo setting: {dynamo_settings.KNOWN[name]}. {why}",
               needs_torch=True, imports=dynamo_settings.statement_imports(setting))


def settings_fixes(report, pairs, parents) -> list[Fix]:
    """One fix per setting, at the first compile statement that needs it, for the findings among
    `pairs`: in installed code, or in the file's own code where no rewrite covers them (the
    caller decides which)."""
    analysis, module = report.analysis, report.module
    fixes: dict[str, Fix] = {}
    # The logging functions to list in ignore_logger_methods, per compile statement: one line
    # for all of them (a line per function would need one fix round each).
    ignored: dict[int, tuple] = {}
    branching = _functions_branching_on_captured_scalars(analysis)
    for finding, candidate in pairs:
        if not candidate.removed_settings:
            continue
        if finding.library:
            statement = _compile_statement(analysis, candidate.function, parents, module)
        elif "capture_scalar_outputs" in candidate.removed_settings and id(candidate.function.node) in branching:
            # The scalar steers a Python branch in the same function: under the setting the break
            # moves to the branch (TCL208), and nothing is gained. In installed code the same
            # case is left to --verify, which sees whether the breaks go down.
            continue
        else:
            statement = _own_compile_statement(candidate.function, analysis.index, parents)
        if statement is None:
            continue
        for setting in sorted(candidate.removed_settings):
            if setting.startswith(dynamo_settings.IGNORED_LOGGING + ":"):
                _, targets, first = ignored.get(id(statement), (statement, set(), finding))
                targets.add(setting.partition(":")[2])
                ignored[id(statement)] = (statement, targets, first)
                continue
            key = setting  # one line per setting: once it is in the file, it holds for every compile
            if key in fixes:
                continue
            what = {"recompile": "the recompiles", "crash": "the compiled call's error"}.get(
                candidate.rule.category, "the break")
            fixes[key] = _setting_fix(
                setting, statement, module, finding.code, finding.line, finding.col,
                f"It removes {what} in {finding.library.split(':')[0]}, code you do not edit"
                if finding.library else f"It removes {what} at line {finding.line}, which has no rewrite")
    for statement, targets, finding in ignored.values():
        setting = f"{dynamo_settings.IGNORED_LOGGING}:{','.join(sorted(targets))}"
        fixes[setting] = _setting_fix(
            setting, statement, module, finding.code, finding.line, finding.col,
            f"It removes the logging breaks in {finding.library.split(':')[0]}, code you do not edit"
            if finding.library else f"It removes the logging break at line {finding.line}, which has no rewrite")
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
