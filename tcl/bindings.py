"""What a def, a class's methods and a module bind, read from the syntax once per node.

The questions tcl/instances.py asks of the code itself, before any class is resolved: which
value a name is bound to in a def (its assignments, parameters, imports, nested defs), what a
class's methods write to `self.x` or append to it, which module-level names hold what, what a
def returns, which literal index a subscript takes, which elements a list or tuple display
holds. Each answer is kept per node (tcl/node_memo.py) or per file (`ModuleIndex.file_facts`),
so the resolver, the entry finder and the rules ask as often as they like.
"""

from __future__ import annotations

import libcst as cst

from . import syntax_walk
from .module_index import ClassInfo, FunctionInfo, ModuleIndex, named_calls
from .node_memo import per_node


def _calls_by_name(index: ModuleIndex) -> dict[str, list]:
    """function or class name -> (call, calling FunctionInfo) for `name(...)` calls in the
    file's module-level functions and methods, collected once per file."""
    calls = index.file_facts.get("_instances.calls")
    if calls is not None:
        return calls
    calls = {}
    aliases = _compiled_aliases(index)

    def add(node: cst.CSTNode, caller: FunctionInfo | None) -> None:
        for callee, call, on_self in named_calls(node):
            if on_self:
                continue
            name = aliases.get(callee, callee)
            if name in index.functions or name in index.classes:
                calls.setdefault(name, []).append((call, caller))

    functions = list(index.functions.values()) + [m for c in index.classes.values() for m in c.methods.values()]
    for caller in functions:
        add(caller.node.body, caller)
    for stmt in _top_level(index.module.body if index.module is not None else ()):
        add(stmt, None)  # `MODELS = {"a": make(_loss, _miner)}` at module level
    index.file_facts["_instances.calls"] = calls
    return calls


def _compiled_aliases(index: ModuleIndex) -> dict[str, str]:
    """`step = torch.compile(train_step)`: alias name -> the module-level function it compiles,
    so that `step(model, x)` passes its arguments to train_step."""
    aliases: dict[str, str] = {}
    for target, _scope, call, top in index.compile_sites:
        if not (isinstance(target, cst.Name) and target.value in index.functions):
            continue
        for node in _assignments_of(top, call):
            for assign_target in node.targets:
                if isinstance(assign_target.target, cst.Name) and assign_target.target.value not in index.functions:
                    aliases[assign_target.target.value] = target.value
    return aliases


def _assignments_of(top: cst.CSTNode, value: cst.CSTNode) -> list[cst.Assign]:
    """The assignments in `top` whose value is `value` itself."""
    found: list[cst.Assign] = []

    class Finder(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            if node.value is value:
                found.append(node)

    syntax_walk.run(Finder(), top)
    return found


CONTAINERS = ("ModuleList", "Sequential", "list", "tuple")


def _assignments(owner: ClassInfo, attr: str) -> list[cst.BaseExpression]:
    """Every value the class's own methods assign to `self.<attr>`."""
    return _self_writes(owner)[0].get(attr, [])


def _self_writes(owner: ClassInfo) -> tuple[dict, dict]:
    """({attr: values assigned to self.attr}, {attr: values appended / extended into it}) over
    the class's own methods, in one statement pass per class."""
    kept = _WRITES.get(id(owner))
    if kept is not None and kept[0] is owner:
        return kept[1]
    assigned: dict[str, list] = {}
    appended: dict[str, list] = {}
    for method in owner.methods.values():
        for stmt in _statements(method.node.body):
            if isinstance(stmt, (cst.Assign, cst.AnnAssign)) and stmt.value is not None:
                targets = [t.target for t in stmt.targets] if isinstance(stmt, cst.Assign) else [stmt.target]
                for t in targets:
                    if isinstance(t, cst.Attribute) and isinstance(t.value, cst.Name) and t.value.value == "self":
                        assigned.setdefault(t.attr.value, []).append(stmt.value)
            elif isinstance(stmt, cst.Expr) and isinstance(stmt.value, cst.Call):
                func = stmt.value.func
                if (isinstance(func, cst.Attribute) and func.attr.value in ("append", "extend", "add_module")
                        and isinstance(func.value, cst.Attribute) and isinstance(func.value.value, cst.Name)
                        and func.value.value.value == "self" and stmt.value.args):
                    value = stmt.value.args[-1].value
                    items = container_elements(value, owner.index) if func.attr.value == "extend" else [value]
                    appended.setdefault(func.value.attr.value, []).extend(items)
    if len(_WRITES) > 20_000:
        _WRITES.clear()
    _WRITES[id(owner)] = (owner, (assigned, appended))
    return assigned, appended


_WRITES: dict[int, tuple] = {}


def constant_index(node: cst.Subscript) -> int | None:
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return None
    value = node.slice[0].slice.value
    if isinstance(value, cst.Integer):
        return int(value.value)
    if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus) and isinstance(value.expression, cst.Integer):
        return -int(value.expression.value)
    return None


def _pick(elements: list, position: int | None):
    """The element a constant index names (of a container built in order), else the first."""
    if not elements:
        return None
    if position is not None and -len(elements) <= position < len(elements):
        return elements[position]
    return elements[0]


def _appended(owner: ClassInfo, attr: str) -> list[cst.BaseExpression]:
    """What the class's methods `self.<attr>.append(...)` / `.extend([...])` to a container."""
    return _self_writes(owner)[1].get(attr, [])


def container_elements(value, index: ModuleIndex, scope: cst.FunctionDef | None = None) -> list[cst.BaseExpression]:
    """The element expressions of a container-building expression, or []. With the def it
    is evaluated in, `nn.ModuleList(model)` also reads the list `model` is built up to there
    (`model = [A(...)]`, `model += [B(...)]`, `model.append(C(...))`)."""
    if isinstance(value, cst.Call) and value.args:
        name = (index.qualify(value.func) or "").rsplit(".", 1)[-1]
        if name not in CONTAINERS:
            return []
        if name == "Sequential" and not isinstance(value.args[0].value, (cst.ListComp, cst.GeneratorExp, cst.List)):
            if scope is not None and len(value.args) == 1 and value.args[0].star == "*":
                return _built_list(scope, value.args[0].value, index)
            return [arg.value for arg in value.args if not arg.star and arg.keyword is None]
        value = value.args[0].value
    if isinstance(value, (cst.ListComp, cst.GeneratorExp)):
        return [value.elt]
    if isinstance(value, (cst.List, cst.Tuple)):
        return [e.value for e in value.elements if isinstance(e, cst.Element)]
    if scope is not None and isinstance(value, cst.Name):
        return _built_list(scope, value, index)
    return []


MAX_BUILT_ELEMENTS = 32


def _built_list(scope: cst.FunctionDef, name: cst.BaseExpression, index: ModuleIndex) -> list[cst.BaseExpression]:
    """The elements a def puts into the local list `name`: its displays (`model = [...]`),
    `model += [...]`, `model.append(x)` and `model.extend([...])`, anywhere in its body."""
    if not isinstance(name, cst.Name):
        return []
    memo = index.file_facts.setdefault("_instances.built_lists", {})
    key = (id(scope), name.value)
    if key in memo:
        return memo[key]
    target, found = name.value, []

    class Builds(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is scope

        def visit_Assign(self, node: cst.Assign) -> None:
            if any(isinstance(t.target, cst.Name) and t.target.value == target for t in node.targets):
                found.extend(container_elements(node.value, index))

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            if isinstance(node.target, cst.Name) and node.target.value == target and isinstance(node.operator, cst.AddAssign):
                found.extend(container_elements(node.value, index))

        def visit_Call(self, node: cst.Call) -> None:
            func = node.func
            if (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == target
                    and func.attr.value in ("append", "extend") and len(node.args) == 1):
                value = node.args[0].value
                found.extend(container_elements(value, index) if func.attr.value == "extend" else [value])

    syntax_walk.run(Builds(), scope)
    memo[key] = found[:MAX_BUILT_ELEMENTS]
    return memo[key]


def qualify_in(expr: cst.BaseExpression, function: FunctionInfo | None, index: ModuleIndex) -> str | None:
    """`index.qualify`, with the imports inside `function` and the defs around it first
    (`from pytorch_metric_learning import miners` in a factory's body)."""
    parts = []
    node = expr
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name):
        scope = function
        while scope is not None:
            imported = _local_imports(scope.node, scope.index).get(node.value)
            if imported is not None:
                return ".".join([imported, *reversed(parts)])
            scope = scope.enclosing
    return index.qualify(expr)


def _local_imports(node: cst.FunctionDef, index: ModuleIndex) -> dict[str, str]:
    """name -> dotted module or object, for the import statements in a def's own body."""
    cache = index.file_facts.setdefault("_instances.local_imports", {})
    kept = cache.get(id(node))
    if kept is not None and kept[0] is node:
        return kept[1]
    from .names import ImportMap

    imports = ImportMap(index.imports.package)
    for stmt in _statements(node.body):
        if isinstance(stmt, cst.Import):
            imports.add_import(stmt)
        elif isinstance(stmt, cst.ImportFrom):
            imports.add_import_from(stmt)
    cache[id(node)] = (node, dict(imports.aliases))
    return cache[id(node)][1]


def _is_classmethod(method: FunctionInfo) -> bool:
    return any(d.rsplit(".", 1)[-1] == "classmethod" for d in method.decorators)


def field_annotations(cls: ClassInfo) -> dict[str, cst.Annotation]:
    """`name: T` (with or without a value) at the top of a class body."""
    found = {}
    for stmt in cls.node.body.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
                    found[small.target.value] = small.annotation
    return found


def _class_attribute(owner: ClassInfo | None, attr: str):
    if owner is None or owner.index is None:
        return None
    return owner.attributes.get(attr)


def rebound_values(node: cst.FunctionDef, name: str) -> list[cst.BaseExpression]:
    """Every value a def assigns to `name`, both sides of a conditional expression apart, when
    there are several; [] for one."""
    out = assigned_values(node, name)
    return out if len(out) > 1 else []


def assigned_values(node: cst.FunctionDef, name: str) -> list[cst.BaseExpression]:
    """Every value a def assigns to the local `name`, both sides of a conditional expression apart."""
    values = [stmt.value for stmt in _statements(node.body)
              if isinstance(stmt, cst.Assign) and any(isinstance(t.target, cst.Name) and t.target.value == name
                                                      for t in stmt.targets)]
    out = []
    while values:
        value = values.pop(0)
        if isinstance(value, cst.IfExp):
            values[:0] = [value.body, value.orelse]
        else:
            out.append(value)
    return out


def _statements(body, defs: bool = False):
    """The statements of a block and of the compound statements in it (if/for/while/try/with
    bodies), not of nested defs or classes: what binds names in this scope. Statements only
    (no expression visit), so a whole function costs one cheap pass. `defs`: also yield the
    nested defs themselves (not their bodies)."""
    stack = [body]
    while stack:
        block = stack.pop(0)
        for stmt in getattr(block, "body", ()):
            if isinstance(stmt, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
                yield from stmt.body
            elif isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                if defs and isinstance(stmt, cst.FunctionDef):
                    yield stmt
            elif isinstance(stmt, cst.BaseCompoundStatement):
                yield stmt
                for part in (getattr(stmt, "body", None), getattr(stmt, "orelse", None),
                             getattr(stmt, "finalbody", None), *getattr(stmt, "handlers", ())):
                    if isinstance(part, cst.If):  # elif
                        stack.append(cst.IndentedBlock(body=[part]))
                    elif isinstance(part, (cst.Else, cst.Finally, cst.ExceptHandler, cst.ExceptStarHandler)):
                        stack.append(part.body)
                    elif isinstance(part, cst.BaseSuite):
                        stack.append(part)


def _bindings(node: cst.FunctionDef) -> dict:
    """name -> (kind, value) of the first binding of each name in a def's body: "value" for
    an assignment (element-wise for `a, b = x, y`) or `with ... as`, "annotation" for a bare
    annotation, "element" for a loop target (`for layer in self.layers`, through enumerate /
    zip). Computed once per def."""
    kept = _BINDINGS.get(id(node))
    if kept is not None and kept[0] is node:
        return kept[1]
    found: dict = {}
    for stmt in _statements(node.body):
        if isinstance(stmt, cst.Assign):
            for t in stmt.targets:
                if isinstance(t.target, cst.Name):
                    found.setdefault(t.target.value, ("value", stmt.value))
                elif (isinstance(t.target, (cst.Tuple, cst.List)) and isinstance(stmt.value, (cst.Tuple, cst.List))
                      and len(t.target.elements) == len(stmt.value.elements)):
                    for target, value in zip(t.target.elements, stmt.value.elements):
                        if isinstance(target.value, cst.Name):
                            found.setdefault(target.value.value, ("value", value.value))
                else:
                    for name, value in _unpacked(t.target, stmt.value):
                        found.setdefault(name, ("value", value))
        elif isinstance(stmt, cst.AnnAssign) and isinstance(stmt.target, cst.Name):
            found.setdefault(stmt.target.value, ("value", stmt.value) if stmt.value is not None
                             else ("annotation", stmt.annotation.annotation))
        elif isinstance(stmt, cst.For):
            target, iterable = stmt.target, stmt.iter
            if isinstance(target, cst.Name):
                found.setdefault(target.value, ("element", iterable))
            elif (isinstance(target, cst.Tuple) and isinstance(iterable, cst.Call)
                  and isinstance(iterable.func, cst.Name) and iterable.func.value in ("enumerate", "zip")):
                for position, element in enumerate(target.elements):
                    if not isinstance(element.value, cst.Name):
                        continue
                    if iterable.func.value == "enumerate" and position == 1 and iterable.args:
                        found.setdefault(element.value.value, ("element", iterable.args[0].value))
                    elif iterable.func.value == "zip" and position < len(iterable.args):
                        found.setdefault(element.value.value, ("element", iterable.args[position].value))
        elif isinstance(stmt, cst.With):
            for item in stmt.items:
                if item.asname is not None and isinstance(item.asname.name, cst.Name):
                    found.setdefault(item.asname.name.value, ("value", item.item))
    if len(_BINDINGS) > 50_000:
        _BINDINGS.clear()
    _BINDINGS[id(node)] = (node, found)
    return found


_BINDINGS: dict[int, tuple] = {}


def _function_binding(node: cst.FunctionDef, name: str):
    for param in [*node.params.posonly_params, *node.params.params, *node.params.kwonly_params]:
        if param.name.value == name:
            return ("annotation", param.annotation.annotation) if param.annotation is not None else ("param", None)
    kind, value = _bindings(node).get(name, (None, None))
    return (kind, value) if value is not None else None


def module_binding(index: ModuleIndex, name: str) -> cst.BaseExpression | None:
    return _module_bindings(index)[0].get(name)


def _module_bindings(index: ModuleIndex) -> tuple[dict, dict]:
    """(name -> the value of its first top-level assignment, name -> the annotation of its first
    annotated one), read in one pass per file."""
    kept = index.file_facts.get("_instances.bindings")
    if kept is None:
        bindings, annotations = {}, {}
        module = index.module
        for stmt in _top_level(module.body if module is not None else ()):
            for small in stmt.body:
                if isinstance(small, cst.Assign):
                    for target in small.targets:
                        if isinstance(target.target, cst.Name):
                            bindings.setdefault(target.target.value, small.value)
                        for name, value in _unpacked(target.target, small.value):
                            bindings.setdefault(name, value)
                elif isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name) and small.value is not None:
                    bindings.setdefault(small.target.value, small.value)
                    annotations.setdefault(small.target.value, small.annotation.annotation)
        kept = index.file_facts["_instances.bindings"] = (bindings, annotations)
    return kept


def _annotations(node: cst.FunctionDef) -> dict[str, cst.BaseExpression]:
    """name -> annotation of the first annotated assignment of each name in a def's body."""
    kept = _ANNOTATIONS.get(id(node))
    if kept is not None and kept[0] is node:
        return kept[1]
    found = {stmt.target.value: stmt.annotation.annotation for stmt in _statements(node.body)
             if isinstance(stmt, cst.AnnAssign) and isinstance(stmt.target, cst.Name) and stmt.value is not None}
    if len(_ANNOTATIONS) > 50_000:
        _ANNOTATIONS.clear()
    _ANNOTATIONS[id(node)] = (node, found)
    return found


_ANNOTATIONS: dict[int, tuple] = {}


def _top_level(body, depth: int = 0):
    for stmt in body:
        if isinstance(stmt, cst.SimpleStatementLine):
            yield stmt
        elif depth < 2 and isinstance(stmt, (cst.If, cst.Try, cst.With)):
            yield from _top_level(stmt.body.body, depth + 1)
            orelse = getattr(stmt, "orelse", None)
            if isinstance(orelse, cst.Else):
                yield from _top_level(orelse.body.body, depth + 1)


class _Returns(cst.CSTVisitor):
    def __init__(self, root: cst.FunctionDef) -> None:
        self.root = root
        self.values: list[cst.BaseExpression] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return node is self.root

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is not None:
            self.values.append(node.value)


_UNPACKED: dict[int, tuple] = {}  # assignment target -> _unpacked's answer (tcl/node_memo.py)


def _unpacked(target: cst.BaseExpression, value: cst.BaseExpression) -> list[tuple[str, cst.Subscript]]:
    """`tokenizer, model = load()`: each name with `load()[i]`, what unpacking the call's
    result gives it (element_class reads the elements of what `load` returns); nothing after a
    starred target, nothing for a value that is not a call. The subscripts are made once per
    target, so they keep their identity across the bindings' readers."""
    if not (isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, cst.Call)):
        return []

    def compute() -> list[tuple[str, cst.Subscript]]:
        out = []
        for position, element in enumerate(target.elements):
            if isinstance(element, cst.StarredElement):
                break
            if isinstance(element.value, cst.Name):
                index = cst.Index(cst.Integer(str(position)))
                out.append((element.value.value, cst.Subscript(value=value, slice=[cst.SubscriptElement(index)])))
        return out

    return per_node(_UNPACKED, target, compute)


def returned_values(node: cst.FunctionDef) -> list[cst.BaseExpression]:
    visitor = _Returns(node)
    syntax_walk.run(visitor, node)
    return visitor.values


def nested_function(function: FunctionInfo, name: str) -> FunctionInfo | None:
    """`outer.<locals>.name`: the def named `name` in `function`'s body (not in deeper scopes),
    as a FunctionInfo whose free variables resolve through `function`."""
    found = _nested_defs(function.node).get(name)
    if found is None:
        return None
    from .module_index import decorator_names

    return FunctionInfo(f"{function.qualname}.<locals>.{name}", found, function.top, None,
                        decorator_names(found, function.index.imports), function.index,
                        enclosing=function)


def _nested_defs(node: cst.FunctionDef) -> dict[str, cst.FunctionDef]:
    """name -> the first def of that name in a def's own body (inside if/for/with/try blocks
    too, not in deeper defs or classes), read once per def by the statement walk."""
    kept = _NESTED.get(id(node))
    if kept is not None and kept[0] is node:
        return kept[1]
    found: dict[str, cst.FunctionDef] = {}
    for stmt in _statements(node.body, defs=True):
        if isinstance(stmt, cst.FunctionDef):
            found.setdefault(stmt.name.value, stmt)
    if len(_NESTED) > 50_000:
        _NESTED.clear()
    _NESTED[id(node)] = (node, found)
    return found


_NESTED: dict[int, tuple] = {}
