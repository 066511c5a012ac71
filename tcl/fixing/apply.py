"""The fix driver: analyse, ask each finding's rule for a fix, apply the non-overlapping ones,
re-parse, repeat until nothing changes.

Fixes come from the one engine (`Analyzer.check_source_with_nodes`): only findings `tcl check`
reports are fixed, so code outside compiled regions and `# noqa` lines are never touched.
"""

from __future__ import annotations

import ast
import difflib
import warnings
from dataclasses import dataclass, field

import libcst as cst

from ..findings import FileError, Finding
from ..guards import refusal
from ..fixes.base import SAFE, SUGGESTION, UNSAFE, Fix, FixContext
from ..fixes.settings import observed_settings_fixes, settings_fixes

MAX_ROUNDS = 8


@dataclass
class FileFix:
    path: str
    original: str
    fixed: str
    before: list[Finding] = field(default_factory=list)     # findings in the original source
    remaining: list[Finding] = field(default_factory=list)  # findings in the fixed source
    applied: list[Fix] = field(default_factory=list)
    pending: list[Fix] = field(default_factory=list)         # not applied (unsafe or suggestion)
    pending_diffs: list[str] = field(default_factory=list)   # one diff per pending fix
    errors: list[FileError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.fixed != self.original

    def diff(self) -> str:
        return unified_diff(self.original, self.fixed, self.path)


def fix_source(source: str, path: str, analyzer, *, unsafe: bool = False, package: str = "",
               ignored: tuple[str, ...] = (), unsafe_keys: frozenset | None = None,
               observed: dict[str, list[str]] | None = None) -> FileFix:
    """Fix one file's text. Never raises for bad input: problems land in `errors`.
    `unsafe_keys`: with `unsafe`, only the unsafe fixes whose (code, line, col) is in it are
    applied (`tcl fix --verify` tries them one at a time). `observed`: setting -> GB ids, the
    settings the file's examples call for at run time (`tcl fix --verify`; fixes/settings.py)."""
    result = FileFix(path, source, source)
    threshold = UNSAFE if unsafe else SAFE
    current = source
    # Syntax newer than this Python (PEP 695 `def f[T]` on 3.11): libcst parses it and tcl checks
    # it, but CPython here cannot judge a rewrite of it, so libcst alone does. Asked only once a
    # rewrite exists, i.e. after the input passed the pre-parse guards.
    python_judges: bool | None = None
    for round_number in range(MAX_ROUNDS + 1):
        report = analyzer.check_source_with_nodes(current, path, package)
        if report.report.errors:
            if round_number == 0:
                result.errors = list(report.report.errors)
            else:  # cannot happen: every round's output was parsed before it was kept
                result.errors.append(FileError(path, 0, "fix produced code the analyser rejects; file left unchanged"))
                result.fixed, result.remaining, result.applied = source, result.before, []
            return result
        pairs = [(f, c) for f, c in report.pairs if not any(f.code.startswith(i) for i in ignored)]
        findings = [f for f, _ in pairs]
        if round_number == 0:
            result.before = findings
        if report.module is None:
            break
        fixes = collect_fixes(report, pairs, analyzer.version, result.warnings, observed)
        if any(f.needs_torch for f in fixes) and imports_torch_lazily(report.module):
            for fix in fixes:
                if fix.needs_torch and fix.safety > UNSAFE:
                    fix.safety = UNSAFE
                    fix.note = (fix.note + "; " if fix.note else "") + (
                        "UNSAFE: adds a top-level `import torch` to a module that imports torch lazily")
        if unsafe_keys is not None:
            for fix in fixes:
                if fix.safety == UNSAFE and (fix.code, fix.line, fix.col) not in unsafe_keys:
                    fix.safety, fix.held_back = SUGGESTION, True  # not this variant's
        chosen = select(fixes, threshold, _parents(report.module)) if round_number < MAX_ROUNDS else []
        if not chosen:
            result.remaining = findings
            result.pending = [f for f in fixes if f.safety < threshold and not f.held_back]
            result.pending_diffs = [
                unified_diff(current, apply_fixes(report.module, [f], torch_bound(report)), path)
                for f in result.pending
            ]
            break
        new = apply_fixes(report.module, chosen, torch_bound(report))
        if python_judges is None:
            python_judges = compiles(source, path)
        problem = syntax_problem(new, path, python_judges)
        if problem is not None:
            result.errors.append(FileError(path, 0, f"fix produced invalid code ({problem}); file left unchanged"))
            result.fixed, result.remaining, result.applied = source, result.before, []
            return result
        if new == current:
            result.remaining = findings
            break
        result.applied.extend(chosen)
        current = new
    result.fixed = current
    return result


def torch_bound(report) -> bool:
    """Whether the name `torch` is bound when the module runs: `import torch` at the top level
    or in a top-level `try`. Under `if TYPE_CHECKING:` or inside functions it is not."""
    return report.module is not None and _imports_torch(report.module.body, top=True)


def _imports_torch(body, top: bool = False) -> bool:
    for statement in body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Import) and any(
                    alias.evaluated_name == "torch" and alias.asname is None for alias in small.names
                ):
                    return True
        elif top and isinstance(statement, cst.Try) and _imports_torch(statement.body.body):
            return True
    return False


def imports_torch_lazily(module: cst.Module) -> bool:
    """`import torch` only inside functions or conditional blocks: the module keeps torch an
    optional, deferred dependency, which a top-level `import torch` would change."""
    return not _imports_torch(module.body, top=True) and any(
        isinstance(n, cst.Import) and any(a.evaluated_name == "torch" for a in n.names)
        for n in _all_imports(module)
    )


def _all_imports(module: cst.Module) -> list:
    found = []

    class Imports(cst.CSTVisitor):
        def visit_Import(self, node: cst.Import) -> None:
            found.append(node)

    module.visit(Imports())
    return found


def syntax_problem(source: str, path: str, python_judges: bool = True) -> str | None:
    """Why a rewrite is no valid Python for libcst and (when `python_judges`: the input was
    valid for this Python) for CPython; None: it is valid."""
    refused, _ = refusal(path, source)  # a rewrite passes the same guards as the input did
    if refused is not None:
        return refused.message
    try:
        cst.parse_module(source)
        if python_judges:
            compile(source, path, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except (cst.ParserSyntaxError, SyntaxError, ValueError) as exc:
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return None


def compiles(source: str, path: str) -> bool:
    """Whether this Python's own parser accepts the source."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(source, path, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


# -- collecting fixes ------------------------------------------------------------------------


def collect_fixes(report, pairs, version, warnings: list[str], observed: dict | None = None) -> list[Fix]:
    module = report.module
    parents = _parents(module)
    fixes = []
    wanted = [(f, c) for f, c in pairs if getattr(c.rule, "fixer", None) is not None and not f.library]
    kinds = _kinds_at(report.analysis, [c for _, c in wanted], parents)
    rewritten: set[int] = set()
    for finding, candidate in wanted:
        ctx = FixContext(module, candidate.function.index, version, parents, candidate.function,
                         kinds.get(candidate.node, {}))
        try:
            fix = candidate.rule.fixer(finding, candidate.node, ctx)
        except MemoryError:  # not a fixer bug: the file's memory limit (tcl.fixing.bounded)
            raise
        except Exception as exc:  # a fixer bug must not end the run
            warnings.append(f"{finding.path}:{finding.line}: {finding.code} fixer failed: {type(exc).__name__}: {exc}")
            continue
        if fix is not None:
            fixes.append(fix)
            if fix.safety > SUGGESTION:  # a suggestion is never applied: a setting may still help
                rewritten.add(id(finding))
    # A finding in an installed package (the rule's rewrite is for code the user owns) or one of
    # the file's own that no rewrite covers: a Dynamo setting at the file's compile call may
    # remove the break (fixes/settings.py).
    fixes.extend(settings_fixes(report, [(f, c) for f, c in pairs if f.library or id(f) not in rewritten], parents))
    if observed:  # what the examples hit at run time and no finding's setting covers
        static = {fix.title for fix in fixes}
        fixes.extend(fix for fix in observed_settings_fixes(report, observed, parents) if fix.title not in static)
    return fixes


class _ParentMap(cst.CSTVisitor):
    def __init__(self) -> None:
        self.parents: dict = {}
        self.stack: list = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.stack:
            self.parents[node] = self.stack[-1]
        self.stack.append(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.stack.pop()


_PARENTS_CACHE: dict[int, tuple[cst.Module, "_Parents"]] = {}
# Parents inside each module-level statement, by the statement's identity: a module re-parsed
# after an edit (tcl.incremental_parse) shares its unchanged statements with the last version.
_STATEMENT_PARENTS: dict[int, tuple[cst.CSTNode, dict]] = {}
STATEMENT_PARENTS_KEPT = 4096


class _Parents:
    """node -> parent node for a whole module, made of one map per module-level statement."""

    def __init__(self, module: cst.Module) -> None:
        self.module = module
        self.tops = {id(statement) for statement in module.body}
        if len(_STATEMENT_PARENTS) > STATEMENT_PARENTS_KEPT:
            _STATEMENT_PARENTS.clear()
        self.maps = [_statement_parents(statement) for statement in module.body]

    def get(self, node, default=None):
        if id(node) in self.tops:
            return self.module
        for parents in self.maps:
            parent = parents.get(node)
            if parent is not None:
                return parent
        return default

    def top_of(self, node) -> cst.CSTNode | None:
        """The module-level statement holding `node` (itself, if it is one)."""
        while node is not None and id(node) not in self.tops:
            node = self.get(node)
        return node


def _statement_parents(statement: cst.CSTNode) -> dict:
    kept = _STATEMENT_PARENTS.get(id(statement))
    if kept is None or kept[0] is not statement:
        visitor = _ParentMap()
        statement.visit(visitor)
        kept = _STATEMENT_PARENTS[id(statement)] = (statement, visitor.parents)
    return kept[1]


def _parents(module: cst.Module) -> _Parents:
    cached = _PARENTS_CACHE.get(id(module))
    if cached is not None and cached[0] is module:
        return cached[1]
    parents = _Parents(module)
    _PARENTS_CACHE.clear()
    _PARENTS_CACHE[id(module)] = (module, parents)
    return parents


class _Snapshot:
    """A rule hook for a re-walk: at each target node, the kinds of every expression of the
    statement holding it (and of the next statement), with the environment at that point."""

    def __init__(self, targets: dict, parents: dict, out: dict) -> None:
        self.targets = targets  # node -> statements to evaluate
        self.parents = parents
        self.out = out

    def visit(self, node: cst.CSTNode, walker) -> None:
        statements = self.targets.get(node)
        if statements is None or node in self.out:
            return
        kinds: dict = {}
        expressions: list = []

        class Collect(cst.CSTVisitor):
            def on_visit(self, n: cst.CSTNode) -> bool:
                if isinstance(n, cst.BaseExpression):
                    expressions.append(n)
                return not isinstance(n, (cst.FunctionDef, cst.ClassDef))

        for statement in statements:
            statement.visit(Collect())
        for expression in expressions:
            try:
                kinds[expression] = walker.kind(expression)
            except RecursionError:
                break
        self.out[node] = kinds


def _kinds_at(analysis, candidates, parents) -> dict:
    """node -> {expression -> Kind} for each candidate's node."""
    if analysis is None or not candidates:
        return {}
    out: dict = {}
    by_function: dict[int, tuple] = {}
    for candidate in candidates:
        statements = _statements_around(candidate.node, parents)
        if not statements:
            continue
        entry = by_function.setdefault(id(candidate.function), (candidate.function, {}))
        entry[1][candidate.node] = statements
    for function, targets in by_function.values():
        if id(function) not in analysis.param_kinds:
            continue
        snapshot = _Snapshot(targets, parents, out)
        hooks = {}
        for node in targets:
            hooks.setdefault(type(node).__name__, [(snapshot, "visit")])
        try:
            analysis._walk(function, hooks=hooks)
        except RecursionError:
            continue
    return out


def _statements_around(node: cst.CSTNode, parents: dict) -> list:
    current = node
    while current is not None and not isinstance(current, cst.BaseStatement):
        current = parents.get(current)
    if current is None:
        return []
    statements = [current]
    block = parents.get(current)
    if isinstance(block, cst.IndentedBlock):
        body = list(block.body)
        for i, item in enumerate(body):
            if item is current and i + 1 < len(body):
                statements.append(body[i + 1])
    return statements


# -- choosing and applying -------------------------------------------------------------------


def select(fixes: list[Fix], threshold, parents: dict) -> list[Fix]:
    """The applicable fixes, first come first served, none touching another's nodes."""
    chosen: list[Fix] = []
    keys: set = set()
    keys_and_ancestors: set = set()
    for fix in sorted(fixes, key=lambda f: (f.line, f.col, f.code)):
        if fix.safety < threshold:
            continue
        mine = list(fix.replacements)
        ancestors = {a for k in mine for a in _ancestors(k, parents)}
        if any(k in keys_and_ancestors for k in mine) or ancestors & keys:
            continue  # overlaps an earlier fix: the next round will see it again
        chosen.append(fix)
        keys.update(mine)
        keys_and_ancestors.update(mine)
        keys_and_ancestors |= ancestors
    return chosen


def _ancestors(node, parents):
    node = parents.get(node)
    while node is not None:
        yield node
        node = parents.get(node)


class _Apply(cst.CSTTransformer):
    def __init__(self, replacements: dict, guards: set) -> None:
        super().__init__()
        self.replacements = replacements
        self.guards = guards  # ids of the guard `if`s created by fixes

    def on_leave(self, original_node, updated_node):
        updated_node = super().on_leave(original_node, updated_node)
        replacement = self.replacements.get(original_node)
        return updated_node if replacement is None else replacement

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock):
        body: list = []
        for item in updated_node.body:
            previous = body[-1] if body else None
            if id(item) in self.guards and previous is not None and id(previous) in self.guards:
                inner = list(item.body.body)
                inner[0] = inner[0].with_changes(leading_lines=[*item.leading_lines, *inner[0].leading_lines])
                merged = previous.with_changes(body=previous.body.with_changes(body=[*previous.body.body, *inner]))
                self.guards.add(id(merged))
                body[-1] = merged
            else:
                body.append(item)
        if len(body) != len(updated_node.body):
            return updated_node.with_changes(body=body)
        return updated_node


def apply_fixes(module: cst.Module, fixes: list[Fix], torch_is_bound: bool) -> str:
    replacements: dict = {}
    guards: set = set()
    for fix in fixes:
        replacements.update(fix.replacements)
        if fix.guard:
            guards.update(id(r) for r in fix.replacements.values())
    new_module = _apply_to_statements(module, _Apply(replacements, guards), replacements)
    if any(f.needs_torch for f in fixes) and not torch_is_bound:
        new_module = add_import(new_module)
    for name in sorted({name for f in fixes for name in f.imports}):
        if not _imports_module(new_module, name):
            new_module = add_import(new_module, name)
    return new_module.code


def _imports_module(module: cst.Module, name: str) -> bool:
    """Whether a top-level `import name` binds `name`."""
    for statement in module.body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Import) and any(
                        a.asname is None and isinstance(a.name, cst.Name) and a.name.value == name for a in small.names):
                    return True
    return False


def _apply_to_statements(module: cst.Module, transformer: "_Apply", replacements: dict) -> cst.Module:
    """`module.visit(transformer)`, visiting only the module-level statements that hold a
    replaced node (a fix rewrites inside one function: the rest need no traversal)."""
    parents = _parents(module)
    touched = {id(parents.top_of(node)) for node in replacements}
    if None in touched or id(None) in touched:
        return module.visit(transformer)
    body: list = []
    for statement in module.body:
        if id(statement) not in touched:
            body.append(statement)
            continue
        new = statement.visit(transformer)
        if isinstance(new, cst.FlattenSentinel):
            body.extend(new.nodes)
        elif not isinstance(new, cst.RemovalSentinel):
            body.append(new)
    return module.with_changes(body=body)


def add_import(module: cst.Module, name: str = "torch") -> cst.Module:
    """`import torch` (or `import name`) after the module's leading imports (or its docstring)."""
    body = list(module.body)
    position = 0
    for i, statement in enumerate(body):
        if isinstance(statement, cst.SimpleStatementLine):
            smalls = statement.body
            if all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in smalls):
                position = i + 1
                continue
            docstring = len(smalls) == 1 and isinstance(smalls[0], cst.Expr) and isinstance(
                smalls[0].value, (cst.SimpleString, cst.ConcatenatedString))
            if i == 0 and docstring:
                position = 1
                continue
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            break
    line = cst.parse_statement(f"import {name}" + module.default_newline, config=module.config_for_parsing)
    body.insert(position, line)
    return module.with_changes(body=body)


def unified_diff(before: str, after: str, path: str) -> str:
    if before == after:
        return ""
    a = before.splitlines(keepends=True)
    b = after.splitlines(keepends=True)
    lines = []
    for line in difflib.unified_diff(a, b, fromfile=path, tofile=path):
        if not line.endswith(("\n", "\r")):
            line += "\n\\ No newline at end of file\n"
        lines.append(line)
    return "".join(lines)
