"""Module-level constants that decide branches under compile: `_debug_importing = False` at the
top of a module makes `if _debug_importing: print(...)` in its functions dead code for Dynamo,
which reads the global's value while tracing (and guards on it) instead of breaking on the body.

A name counts when the module binds it exactly once at module scope, by a plain assignment of a
literal (True/False/None, a number, a string), and no function of the module declares it
`global`: a flag that an `if`, a `try`/`except ImportError` or a setter rebinds is not one value.
Another module assigning it (`einops._backends._debug_importing = True`) is not seen: tcl reads
the default the module ships with, as a user runs it. Inside a function the name must not be a
local there or in an enclosing def (a parameter or assignment of the same name shadows it).
"""

from __future__ import annotations

import ast

import libcst as cst

from .module_index import FunctionInfo, ModuleIndex
from .python_nodes import nodes_of

_LITERAL_TYPES = (bool, int, float, str, type(None))
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def module_constants(index: ModuleIndex) -> dict[str, object]:
    """name -> value of each module-level literal constant of the file (see the module doc)."""
    return index.file_fact("_module_constants", _constants) or {}


def function_locals(function: FunctionInfo) -> frozenset[str]:
    """The names a function and the defs enclosing it bind (parameters included): they shadow a
    module constant of the same name."""
    from .branches import names_bound_in
    from .params import all_params

    names: set[str] = set()
    scope: FunctionInfo | None = function
    while scope is not None:
        names |= {p.name.value for p in all_params(scope.node.params)}
        for star in (scope.node.params.star_arg, scope.node.params.star_kwarg):
            if isinstance(star, cst.Param):
                names.add(star.name.value)
        names |= names_bound_in(scope.node.body)
        scope = scope.enclosing
    return frozenset(names)


def _constants(tree: ast.Module) -> dict[str, object]:
    bindings: dict[str, list[ast.AST]] = {}
    for node in _module_scope(tree.body):
        for name in _bound_names(node):
            bindings.setdefault(name, []).append(node)
    declared_global = {name for node in nodes_of(tree, ast.Global) for name in node.names}
    out: dict[str, object] = {}
    for name, nodes in bindings.items():
        if len(nodes) != 1 or name in declared_global:
            continue
        node = nodes[0]
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        value = _literal(node.value)
        if value is not _NOT_LITERAL:
            out[name] = value
    return out


_NOT_LITERAL = object()


def _literal(node: ast.AST):
    if isinstance(node, ast.Constant) and isinstance(node.value, _LITERAL_TYPES):
        return node.value
    if (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant)
            and isinstance(node.operand.value, (int, float)) and not isinstance(node.operand.value, bool)):
        return -node.operand.value
    return _NOT_LITERAL


def _module_scope(body: list[ast.stmt]):
    """Every statement that runs at module scope, compound statements' bodies included (not
    those of defs and classes, which are scopes of their own)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, _SCOPES):
            continue
        for field in ("body", "orelse", "finalbody"):
            yield from _module_scope(getattr(stmt, field, None) or [])
        for handler in getattr(stmt, "handlers", None) or []:
            yield handler
            yield from _module_scope(handler.body)
        for case in getattr(stmt, "cases", None) or []:
            yield from _module_scope(case.body)


def _bound_names(node: ast.AST) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(alias.asname or alias.name).split(".")[0] for alias in node.names]
    if isinstance(node, ast.ExceptHandler):
        return [node.name] if node.name else []
    targets: list[ast.AST] = []
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        targets = [node.target]
    elif isinstance(node, (ast.For, ast.AsyncFor)):
        targets = [node.target]
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        targets = [item.optional_vars for item in node.items if item.optional_vars is not None]
    elif isinstance(node, ast.Delete):
        targets = list(node.targets)
    names = [n.id for target in targets for n in ast.walk(target) if isinstance(n, ast.Name)]
    # `if (flag := probe()):` at module scope binds too; not in nested defs/lambdas/comprehensions
    if isinstance(node, ast.stmt) and not isinstance(node, _SCOPES):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                names += [n.target.id for n in ast.walk(child)
                          if isinstance(n, ast.NamedExpr) and isinstance(n.target, ast.Name)]
    return names
