"""Locals bound once to a value known before tracing, and the literal a helper returns.

Dynamo runs the Python of a traced function with the values it has. A local bound once, by a
statement at the top level of the function's body, to a literal (`debug = False`), to a keyword
no call passes (`trust_remote_code = kwargs.pop("trust_remote_code", None)`, tcl/params.py
KnownKeywords) or to what a small helper returns for the literals this call passes
(`repo = self._get_deprecated_gen_repo(mode, trust_remote_code)`, whose only `return` a walk
with `trust_remote_code=None` reaches is `return None`: the other path raises first) holds that
value in every statement after it. The walker (tcl/walker.py) decides tests on such a name as it
does on a parameter every caller fixes (tcl/guard_facts.py constant_truth), so the branch
`if repo is not None: return GenerationMixin.generate(self, ..., **kwargs)` is never walked: its
call neither reaches other code nor widens what `generate` is traced with. A helper's value is
asked for only when a test reads the name, because it costs a walk of the helper
(tcl/file_analysis.py `returned_literal`); that walk decides the helper's own tests with the call's
literals, and its literal counts only when every `return` it reaches gives the same literal and
the end of the body is not reached without one.
"""

from __future__ import annotations

import libcst as cst

from . import syntax_walk
from .branches import BoundNames, target_names
from .bindings import _statements
from .node_memo import per_node
from .params import all_params

MAX_HELPER_STATEMENTS = 40  # a helper longer than this is not walked for its return value
# Decorators that leave what a call returns as the function returns it; a helper with any
# other decorator is not asked for its literal.
TRANSPARENT_DECORATORS = frozenset({
    "staticmethod", "classmethod", "builtins.staticmethod", "builtins.classmethod",
    "functools.lru_cache", "functools.cache", "torch.no_grad",
})


class _Mixed:
    def __repr__(self) -> str:
        return "MIXED"


MIXED = _Mixed()  # `returns_literal` of a function whose returns give different values


def joined_literal(current, new):
    """The literal a function returns, with one more `return` seen: `new` is (True, value) or
    None (not a literal); `current` None (no return yet), (True, value) or MIXED."""
    if current is MIXED or new is None:
        return MIXED
    if current is None:
        return new
    same = type(current[1]) is type(new[1]) and current[1] == new[1]
    return current if same else MIXED


def single_bindings(function: cst.FunctionDef) -> dict[str, tuple[int, cst.Assign]]:
    """name -> (position in the body, the statement) of each local the function binds exactly
    once, by a plain `name = value` directly in its body (not in a loop, branch, `try` or
    `with`). A name also declared global or nonlocal, deleted, or bound in any other way
    (augmented, loop target, `with ... as`, `:=`, `except ... as`, import, def, a nonlocal in
    a nested def) is left out."""
    return per_node(_SINGLE, function, lambda: _single_bindings(function))


_SINGLE: dict[int, tuple] = {}


class _Bindings(BoundNames):
    """How many times the body binds each name (`_add` of every binding BoundNames sees, and
    the other ways to bind), and the names it must never take for constants."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: dict[str, int] = {}
        self.excluded: set[str] = set()

    def _add(self, target: cst.BaseExpression) -> None:
        for name in target_names(target):
            self.counts[name] = self.counts.get(name, 0) + 1

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        # A nested def binds its name; its own assignments are its scope, but a `nonlocal`
        # there rebinds ours.
        self._add(node.name)
        self.excluded.update(item.name.value for small in _statements(node.body)
                             if isinstance(small, cst.Nonlocal) for item in small.names)
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self._add(node.name)
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._add(node.asname.name)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._add(node.target)  # binds in the function even inside a comprehension

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        if node.name is not None:
            self._add(node.name.name)

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        bound = node.asname.name if node.asname is not None else node.name
        while isinstance(bound, cst.Attribute):
            bound = bound.value
        self._add(bound)

    def visit_Global(self, node: cst.Global) -> None:
        self.excluded.update(item.name.value for item in node.names)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self.excluded.update(item.name.value for item in node.names)

    def visit_Del(self, node: cst.Del) -> None:
        self.excluded.update(target_names(node.target))

    def visit_MatchAs(self, node: cst.MatchAs) -> None:
        if node.name is not None:
            self.excluded.add(node.name.value)


def _single_bindings(function: cst.FunctionDef) -> dict[str, tuple[int, cst.Assign]]:
    body = function.body
    if not isinstance(body, cst.IndentedBlock):
        return {}
    visitor = _Bindings()
    syntax_walk.run(visitor, body)
    parameters = {param.name.value for param in all_params(function.params)}
    found: dict[str, tuple[int, cst.Assign]] = {}
    for position, statement in enumerate(body.body):
        if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            continue
        small = statement.body[0]
        if not (isinstance(small, cst.Assign) and len(small.targets) == 1
                and isinstance(small.targets[0].target, cst.Name)):
            continue
        name = small.targets[0].target.value
        if visitor.counts.get(name) == 1 and name not in visitor.excluded and name not in parameters:
            found[name] = (position, small)
    return found


def falls_off_end(function: cst.FunctionDef) -> bool:
    """Whether the body's last statement may be followed by the implicit `return None`: it is
    not a `return` or `raise` line (conservative: an `if`/`else` that returns on both sides
    counts as falling off)."""
    body = function.body
    if not isinstance(body, cst.IndentedBlock) or not body.body:
        return True
    last = body.body[-1]
    return not (isinstance(last, cst.SimpleStatementLine)
                and any(isinstance(small, (cst.Return, cst.Raise)) for small in last.body))


def is_generator(function: cst.FunctionDef) -> bool:
    """A `yield` in the function's own body (not in a nested def or lambda)."""
    def compute() -> bool:
        class Finder(cst.CSTVisitor):
            found = False

            def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
                return node is function

            def visit_Lambda(self, node: cst.Lambda) -> bool:
                return False

            def visit_Yield(self, node: cst.Yield) -> None:
                self.found = True

        finder = Finder()
        syntax_walk.run(finder, function)
        return finder.found or function.asynchronous is not None

    return per_node(_GENERATORS, function, compute)


_GENERATORS: dict[int, tuple] = {}
