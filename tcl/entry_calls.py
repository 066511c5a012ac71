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

from .node_memo import per_node
from .params import UNKNOWN, literal_value


def compiled_call_literals(scope: cst.CSTNode, compile_call: cst.Call, module_compile: bool = False) -> list[dict] | None:
    """One {position or keyword: literal, or UNKNOWN} per call of what `compile_call` compiles
    in `scope` (a function's node, or the module). `module_compile`: `compile_call` is
    `model.compile()` and the calls are those of `model` after it. None when they cannot all be
    seen (see the module docstring)."""
    uses = scope_uses(scope)
    bound = uses.bindings.get((id(compile_call), module_compile))
    if bound is None:
        return None
    name, after = bound
    calls = []
    for event_name, what, nested, node, position in uses.events:
        if event_name != name or (position < after and not nested):
            continue  # before the compile, the name is the object it compiles (`model = Net()`)
        if what == "call":
            calls.append(node)
        elif what != "read":
            return None  # passed, stored, returned, rebound ...: called we know not how
    if not calls:
        return None
    sites = []
    for call in calls:
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


class ScopeUses(cst.CSTVisitor):
    """Every use of a name in a scope, in source order, read in one pass per scope (a file
    with twenty compile calls is read once, not twenty times):

    * `events`: (name, what, nested, node, position) with `what` one of "call" (the function
      of a call: the node is the call), "read" (an attribute read, `model.eval()`), "bind"
      (assigned, deleted, a parameter or `global` of that name) or "use" (anything else);
      `nested`: inside a def, lambda or class of the scope, which may run at any time;
      `position`: the event's index;
    * `bindings`: (id of a call, whether it is `x.compile()`) -> (the plain name the compiled
      object is bound to, the position of the first event after that statement), for
      `name = <call>`, `name: T = <call>` and the statement `name.compile()`."""

    def __init__(self) -> None:
        self.events: list[tuple] = []
        self.bindings: dict[tuple[int, bool], tuple[str, int]] = {}
        self._nested = 0
        self._callees: set[int] = set()
        self._readers: set[int] = set()  # Name nodes that are an attribute's object, or no variable
        self._binders: set[int] = set()  # Name nodes bound by an assignment target and the like
        self._pending: list[tuple] = []  # (statement, key, name): recorded when the statement ends

    def _event(self, name: str, what: str, node: cst.CSTNode) -> None:
        self.events.append((name, what, self._nested > 0, node, len(self.events)))

    # scopes inside the scope
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._event(node.name.value, "bind", node)
        self._readers.add(id(node.name))
        self._nested += 1

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._nested -= 1

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self._nested += 1

    def leave_Lambda(self, original_node: cst.Lambda) -> None:
        self._nested -= 1

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._event(node.name.value, "bind", node)
        self._readers.add(id(node.name))
        self._nested += 1

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self._nested -= 1

    def visit_Param(self, node: cst.Param) -> None:
        self._event(node.name.value, "bind", node)
        self._readers.add(id(node.name))

    # the statements that bind a compiled object
    def visit_Assign(self, node: cst.Assign) -> None:
        if isinstance(node.value, cst.Call) and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            self._pending.append((node, (id(node.value), False), node.targets[0].target.value))

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._bind(node.target)
        if isinstance(node.value, cst.Call) and isinstance(node.target, cst.Name):
            self._pending.append((node, (id(node.value), False), node.target.value))

    def visit_Expr(self, node: cst.Expr) -> None:
        call = node.value
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and isinstance(call.func.value, cst.Name):
            self._pending.append((node, (id(call), True), call.func.value.value))

    def _leave_statement(self, node: cst.CSTNode) -> None:
        if self._pending and self._pending[-1][0] is node:
            _, key, name = self._pending.pop()
            if self._nested == 0:
                self.bindings[key] = (name, len(self.events))

    def leave_Assign(self, original_node: cst.Assign) -> None:
        self._leave_statement(original_node)

    def leave_AnnAssign(self, original_node: cst.AnnAssign) -> None:
        self._leave_statement(original_node)

    def leave_Expr(self, original_node: cst.Expr) -> None:
        self._leave_statement(original_node)

    # bindings of any name
    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._bind(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bind(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._bind(node.target)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._bind(node.target)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._bind(node.asname.name)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bind(node.target)

    def visit_Del(self, node: cst.Del) -> None:
        self._bind(node.target)

    def visit_Global(self, node: cst.Global) -> None:
        for item in node.names:
            self._event(item.name.value, "bind", node)
            self._readers.add(id(item.name))

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        for item in node.names:
            self._event(item.name.value, "bind", node)
            self._readers.add(id(item.name))

    def visit_ImportAlias(self, node: cst.ImportAlias) -> bool:
        name = node.asname.name if node.asname is not None else node.name
        if isinstance(name, cst.Name):
            self._event(name.value, "bind", node)
        return False

    def _bind(self, target: cst.BaseExpression) -> None:
        for name in _target_names(target):
            if isinstance(name, cst.Name):
                self._binders.add(id(name))

    # uses
    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name):
            self._callees.add(id(node.func))
            self._event(node.func.value, "call", node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._readers.add(id(node.attr))  # `x.gen` names no variable
        if isinstance(node.value, cst.Name):
            self._readers.add(id(node.value))
            self._event(node.value.value, "read", node)

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self._readers.add(id(node.keyword))  # `f(gen=...)`: a keyword, not the variable

    def visit_Name(self, node: cst.Name) -> None:
        key = id(node)
        if key in self._callees or key in self._readers:
            return
        self._event(node.value, "bind" if key in self._binders else "use", node)


def scope_uses(scope: cst.CSTNode) -> ScopeUses:
    """ScopeUses of a function's node (its body: its own code) or a module, once per node
    (tcl/node_memo.py). A module's are joined from its top-level statements', each kept while
    the statement lives: the language server re-parses only the statements an edit touched, so
    a re-check reads one statement again, not the file."""
    def joined() -> ScopeUses:
        if not isinstance(scope, cst.Module):
            return _uses_in(scope.body if isinstance(scope, cst.FunctionDef) else scope)
        uses = ScopeUses()
        for statement in scope.body:
            part = _uses_in(statement)
            offset = len(uses.events)
            uses.events.extend((name, what, nested, node, position + offset)
                               for name, what, nested, node, position in part.events)
            uses.bindings.update((key, (name, after + offset)) for key, (name, after) in part.bindings.items())
        return uses

    return per_node(_SCOPES, scope, joined)


def _uses_in(node: cst.CSTNode) -> ScopeUses:
    def compute() -> ScopeUses:
        uses = ScopeUses()
        node.visit(uses)
        return uses

    return per_node(_PARTS, node, compute)


_SCOPES: dict[int, tuple] = {}  # a function's node or a module -> its ScopeUses
_PARTS: dict[int, tuple] = {}  # a top-level statement or a body -> its ScopeUses


def _target_names(target: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(target, (cst.Tuple, cst.List)):
        out: list[cst.BaseExpression] = []
        for element in target.elements:
            out.extend(_target_names(element.value))
        return out
    if isinstance(target, cst.StarredElement):
        return _target_names(target.value)
    return [target]
