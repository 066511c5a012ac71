"""How the checked code calls what it compiles: the constants Dynamo traces an entry with.

`gen = torch.compile(lm.generate)` followed by `gen(ids, max_new_tokens=4)` traces `generate`
with `custom_generate=None` and every other parameter the call leaves out at its default:
Dynamo specialises on None, bools, numbers and strings passed as arguments, so a test such as
`if custom_generate is not None:` is decided before tracing and its body is never traced. This
module reads the calls of the compiled object in the scope that compiles it and turns them into
tcl/walker.py CallSites (their literals only), which tcl/params.py `entry_constants` agrees over.
It answers None, and the entry is walked as before with every parameter unknown, whenever the
calls are not all visible: the compiled object is passed somewhere, stored, returned, rebound,
called with `*args`/`**kwargs`, or never called in that scope. Attribute reads
(`model.eval()`, `model.parameters()`) are not calls of the compiled object and are allowed.
"""

from __future__ import annotations

import libcst as cst

from .params import UNKNOWN, literal_value


def compiled_call_literals(scope: cst.CSTNode, compile_call: cst.Call, module_compile: bool = False) -> list[dict] | None:
    """One {position or keyword: literal, or UNKNOWN} per call of what `compile_call` compiles
    in `scope` (a function's node, or the module). `module_compile`: `compile_call` is
    `model.compile()` and the calls are those of `model` after it. None when they cannot all be
    seen (see the module docstring)."""
    if isinstance(scope, cst.FunctionDef):
        scope = scope.body  # its own code, not a nested scope
    found = _BoundName(compile_call, module_compile)
    scope.visit(found)
    if found.name is None:
        return None
    uses = _Uses(found.name, found.statement)
    scope.visit(uses)
    if uses.escapes or not uses.calls:
        return None
    sites = []
    for call in uses.calls:
        literals: dict = {}
        position = 0
        for arg in call.args:
            if arg.star:
                return None
            key = arg.keyword.value if arg.keyword is not None else position
            if arg.keyword is None:
                position += 1
            literal = literal_value(arg.value)
            literals[key] = literal[1] if literal is not None else UNKNOWN
        sites.append(literals)
    return sites


class _BoundName(cst.CSTVisitor):
    """The plain name the compiled object is bound to, and the statement binding it:
    `gen = torch.compile(f)`; for `model.compile()`, `model` and that statement."""

    def __init__(self, compile_call: cst.Call, module_compile: bool) -> None:
        self.compile_call = compile_call
        self.module_compile = module_compile
        self.name: str | None = None
        self.statement: cst.CSTNode | None = None

    def visit_Assign(self, node: cst.Assign) -> None:
        if (not self.module_compile and node.value is self.compile_call and len(node.targets) == 1
                and isinstance(node.targets[0].target, cst.Name)):
            self.name, self.statement = node.targets[0].target.value, node

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if not self.module_compile and node.value is self.compile_call and isinstance(node.target, cst.Name):
            self.name, self.statement = node.target.value, node

    def visit_Expr(self, node: cst.Expr) -> None:
        call = self.compile_call
        if (self.module_compile and node.value is call and isinstance(call.func, cst.Attribute)
                and isinstance(call.func.value, cst.Name)):
            self.name, self.statement = call.func.value.value, node


class _Uses(cst.CSTVisitor):
    """The calls of `name` that can see the binding made by `statement`, and whether the name
    is used any other way there (passed, stored, returned, rebound).

    Uses in the scope's own code before the statement see an earlier binding (`model =
    Net(); model = torch.compile(model)`) and are left out; uses inside nested functions and
    classes may run at any time and all count."""

    def __init__(self, name: str, statement: cst.CSTNode) -> None:
        self.name = name
        self.statement = statement
        self.after = False
        self.nested = 0
        self.calls: list[cst.Call] = []
        self.escapes = False
        self._callees: set[int] = set()  # Name nodes that are a call's function
        self._readers: set[int] = set()  # Name nodes whose attribute is read

    def _counts(self) -> bool:
        return self.after or self.nested > 0

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.nested += 1

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.nested -= 1

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self.nested += 1

    def leave_Lambda(self, original_node: cst.Lambda) -> None:
        self.nested -= 1

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.nested += 1

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.nested -= 1

    def visit_Param(self, node: cst.Param) -> None:
        if node.name.value == self.name:
            self.escapes = True  # a parameter of the same name shadows it somewhere

    def leave_Assign(self, original_node: cst.Assign) -> None:
        if original_node is self.statement:
            self.after = True

    def leave_AnnAssign(self, original_node: cst.AnnAssign) -> None:
        if original_node is self.statement:
            self.after = True

    def leave_Expr(self, original_node: cst.Expr) -> None:
        if original_node is self.statement:
            self.after = True

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == self.name:
            self._callees.add(id(node.func))
            if self._counts():
                self.calls.append(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._readers.add(id(node.attr))  # `x.gen` names no variable
        if isinstance(node.value, cst.Name) and node.value.value == self.name:
            self._readers.add(id(node.value))

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self._readers.add(id(node.keyword))  # `f(gen=...)`: a keyword, not the variable

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._binding(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node is not self.statement:
            self._binding(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._binding(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._binding(node.target)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._binding(node.asname.name)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._binding(node.target)

    def visit_Global(self, node: cst.Global) -> None:
        if any(item.name.value == self.name for item in node.names):
            self.escapes = True

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        if any(item.name.value == self.name for item in node.names):
            self.escapes = True

    def visit_Del(self, node: cst.Del) -> None:
        self._binding(node.target)

    def _binding(self, target: cst.BaseExpression) -> None:
        # A rebinding after the compile (or in a nested scope) changes what later calls call.
        if self._counts() and any(isinstance(n, cst.Name) and n.value == self.name for n in _target_names(target)):
            self.escapes = True

    def visit_Name(self, node: cst.Name) -> None:
        if node.value != self.name or not self._counts():
            return
        if id(node) in self._callees or id(node) in self._readers:
            return
        self.escapes = True  # passed, stored, returned, compared ...: called we know not how


def _target_names(target: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(target, (cst.Tuple, cst.List)):
        out: list[cst.BaseExpression] = []
        for element in target.elements:
            out.extend(_target_names(element.value))
        return out
    if isinstance(target, cst.StarredElement):
        return _target_names(target.value)
    return [target]
