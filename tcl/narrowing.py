"""Python's isinstance() narrowing: which class a name holds where a test has just checked it.

`sum(r.pop_term() for r in self.modules() if isinstance(r, Regularizer))`, `for m in
self.modules(): if isinstance(m, MoE): aux = aux + m.aux_loss()`: nothing says what the loop
variable holds, except the test in front of the call. Dynamo runs the call on an object of that
class (or a subclass), so the call reaches the class's method. Narrowed here, per function, once:

* the body of `if isinstance(n, C):` (also `isinstance(n, C) and ...`; `C` may be a tuple of
  classes), and the `else` of `if not isinstance(n, C):`;
* the rest of a block after `if not isinstance(n, C): continue` / `return` / `raise` / `break`;
* the element of a comprehension whose condition is such a test on its target.

A name rebound inside the narrowed region keeps no narrowing there. The answer is the class
expressions of the test; `instances.InstanceResolver` turns them into classes the analysis can
read, and a call the answer cannot resolve is not followed, as before.
"""

from __future__ import annotations

import libcst as cst

from . import syntax_walk
from .node_memo import per_node

_EXITS = (cst.Continue, cst.Return, cst.Raise, cst.Break)
_COMPREHENSIONS = (cst.GeneratorExp, cst.ListComp, cst.SetComp, cst.DictComp)


def isinstance_tests(test: cst.BaseExpression) -> dict[str, list[cst.BaseExpression]]:
    """`{name: [class expressions]}` that `test` being true proves: `isinstance(n, C)` and the
    conjuncts of an `and`."""
    out: dict[str, list[cst.BaseExpression]] = {}
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        for side in (test.left, test.right):
            for name, classes in isinstance_tests(side).items():
                out.setdefault(name, []).extend(classes)
        return out
    if (isinstance(test, cst.Call) and isinstance(test.func, cst.Name) and test.func.value == "isinstance"
            and len(test.args) == 2 and isinstance(test.args[0].value, cst.Name)
            and not any(a.keyword or a.star for a in test.args)):
        classes = test.args[1].value
        elements = [e.value for e in classes.elements] if isinstance(classes, cst.Tuple) else [classes]
        if all(isinstance(e, (cst.Name, cst.Attribute)) for e in elements):
            out[test.args[0].value.value] = elements
    return out


def _negated(test: cst.BaseExpression) -> dict[str, list[cst.BaseExpression]]:
    """What `test` being false proves: `not isinstance(n, C)`."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return isinstance_tests(test.expression)
    return {}


def _exits(block: cst.BaseSuite) -> bool:
    body = block.body if isinstance(block, cst.IndentedBlock) else [block]
    last = body[-1] if body else None
    if isinstance(last, cst.SimpleStatementLine):
        return bool(last.body) and isinstance(last.body[-1], _EXITS)
    if isinstance(block, cst.SimpleStatementSuite):
        return bool(block.body) and isinstance(block.body[-1], _EXITS)
    return False


class _Narrowing(cst.CSTVisitor):
    def __init__(self) -> None:
        self.scopes: list[dict[str, list[cst.BaseExpression]]] = []
        self.calls: dict[int, dict[str, list[cst.BaseExpression]]] = {}

    def _current(self) -> dict[str, list[cst.BaseExpression]]:
        merged: dict[str, list[cst.BaseExpression]] = {}
        for scope in self.scopes:
            merged.update(scope)
        return merged

    def _visit_block_with(self, node: cst.CSTNode, facts: dict) -> None:
        self.scopes.append(dict(facts))
        syntax_walk.run(self, node)
        self.scopes.pop()

    def visit_If(self, node: cst.If) -> bool:
        syntax_walk.run(self, node.test)
        self._visit_block_with(node.body, isinstance_tests(node.test))
        if node.orelse is not None:
            self._visit_block_with(node.orelse, _negated(node.test))
        return False

    def _visit_statements(self, statements) -> None:
        """A block's statements; after `if not isinstance(n, C): continue`, the rest see n: C."""
        pushed = 0
        for statement in statements:
            syntax_walk.run(self, statement)
            if isinstance(statement, cst.If) and statement.orelse is None and _exits(statement.body):
                facts = _negated(statement.test)
                if facts:
                    self.scopes.append(facts)
                    pushed += 1
            if any(self.scopes):  # only a narrowed name can be forgotten: most blocks have none
                for name in _bound_names(statement):  # rebound: whatever it holds now, here on
                    for scope in self.scopes:
                        scope.pop(name, None)
        del self.scopes[len(self.scopes) - pushed:]

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> bool:
        self._visit_statements(node.body)
        return False

    def visit_Module(self, node: cst.Module) -> bool:
        self._visit_statements(node.body)
        return False

    def _comprehension(self, node, elements: list[cst.CSTNode]) -> bool:
        facts: dict[str, list[cst.BaseExpression]] = {}
        level = node.for_in
        while level is not None:
            syntax_walk.run(self, level.iter)
            for condition in level.ifs:
                syntax_walk.run(self, condition)
                facts.update(isinstance_tests(condition.test))
            level = level.inner_for_in
        self.scopes.append(facts)
        for element in elements:
            syntax_walk.run(self, element)
        self.scopes.pop()
        return False

    def visit_GeneratorExp(self, node: cst.GeneratorExp) -> bool:
        return self._comprehension(node, [node.elt])

    def visit_ListComp(self, node: cst.ListComp) -> bool:
        return self._comprehension(node, [node.elt])

    def visit_SetComp(self, node: cst.SetComp) -> bool:
        return self._comprehension(node, [node.elt])

    def visit_DictComp(self, node: cst.DictComp) -> bool:
        return self._comprehension(node, [node.key, node.value])

    def visit_Call(self, node: cst.Call) -> None:
        facts = self._current()
        if facts:
            self.calls[id(node)] = facts

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False  # its own function: narrowed when it is walked

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False


def _bound_names(statement: cst.CSTNode) -> set[str]:
    names: set[str] = set()

    class Targets(cst.CSTVisitor):
        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            _names(node.target, names)

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            _names(node.target, names)

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            _names(node.target, names)

        def visit_For(self, node: cst.For) -> None:
            _names(node.target, names)

        def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
            _names(node.target, names)

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False

    syntax_walk.run(Targets(), statement)
    return names


def _names(target: cst.BaseExpression, out: set[str]) -> None:
    if isinstance(target, cst.Name):
        out.add(target.value)
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            _names(element.value, out)
    elif isinstance(target, cst.StarredElement):
        _names(target.value, out)


def narrowed_calls(function: cst.FunctionDef) -> dict[int, dict[str, list[cst.BaseExpression]]]:
    """id(call) -> {name: [class expressions]} for every call in `function` (not in the defs
    nested in it) that runs where an isinstance() test has narrowed a name. Kept per def node:
    an editor's re-check walks the same installed functions again (session 32: a third of a
    warm re-check of a script compiling `generate` went here)."""
    def compute() -> dict[int, dict[str, list[cst.BaseExpression]]]:
        visitor = _Narrowing()
        syntax_walk.run(visitor, function.body)
        return visitor.calls

    return per_node(_NARROWED, function, compute)


_NARROWED: dict[int, tuple] = {}
