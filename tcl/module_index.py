"""One cheap pass over a module's top level: imports, functions, classes, loggers, compile targets.

Only top-level statements and class bodies are read here; function bodies are walked later, and
only for functions that torch.compile traces.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from . import syntax_walk, torch_facts
from .names import ImportMap, canonical, dotted
from .node_memo import per_node

COMPILE_NAMES = frozenset({"torch.compile"})
DISABLE_NAMES = frozenset({"torch.compiler.disable", "torch._dynamo.disable"})
LOGGER_FACTORIES = ("getLogger", "get_logger")


@dataclass(eq=False)
class FunctionInfo:
    name: str
    node: cst.FunctionDef
    top: cst.CSTNode  # the module-level statement holding it, for positions
    owner: "ClassInfo | None" = None
    decorators: tuple[str, ...] = ()
    index: "ModuleIndex | None" = None  # the module it lives in
    # For a nested def (`make.<locals>.step`): the function whose scope its free names read.
    enclosing: "FunctionInfo | None" = None
    # For a method inherited by the class of the compiled object (`TripletMarginLoss` running
    # `BaseMetricLossFunction.forward`): that class, where `self.m()` and `self.x` are looked up
    # first, as Python does. None: the owner itself.
    receiver: "ClassInfo | None" = None

    @property
    def qualname(self) -> str:
        return f"{self.owner.name}.{self.name}" if self.owner else self.name

    @property
    def is_disabled(self) -> bool:
        return any(d in DISABLE_NAMES for d in self.decorators)

    @property
    def is_compiled(self) -> bool:
        return any(d in COMPILE_NAMES for d in self.decorators)

    @property
    def is_property(self) -> bool:
        return any(d.rsplit(".", 1)[-1] in ("property", "cached_property") for d in self.decorators)

    @property
    def is_staticmethod(self) -> bool:
        return "builtins.staticmethod" in self.decorators or "staticmethod" in self.decorators


@dataclass(eq=False)
class ClassInfo:
    name: str
    node: cst.ClassDef
    bases: tuple[str, ...]
    methods: dict[str, FunctionInfo] = field(default_factory=dict)
    is_module: bool = False
    is_optimizer: bool = False  # a torch.optim.Optimizer: its step() is compiled as users do
    # A torch.autograd.Function: `C.apply(...)` in traced code runs its forward and backward,
    # both of which Dynamo traces (measured on 2.13: a data-dependent branch in either breaks).
    is_autograd_function: bool = False
    index: "ModuleIndex | None" = None
    _attributes: dict[str, cst.BaseExpression] = field(default_factory=dict)
    _buffers: set[str] = field(default_factory=set)
    _scanned: bool = False

    @property
    def attributes(self) -> dict[str, cst.BaseExpression]:
        """`self.<attr> = value` assignments in the class's methods (read on first use)."""
        if not self._scanned:
            self._scanned = True
            _collect_self_attributes(self)
        return self._attributes

    @property
    def buffers(self) -> set[str]:
        """Names given to register_buffer / register_parameter."""
        self.attributes
        return self._buffers


@dataclass
class ModuleIndex:
    imports: ImportMap
    functions: dict[str, FunctionInfo] = field(default_factory=dict)
    classes: dict[str, ClassInfo] = field(default_factory=dict)
    loggers: set[str] = field(default_factory=set)
    compile_targets: set[str] = field(default_factory=set)  # "fn" or "Class.method"
    # Every `torch.compile(<target>)`: (target expression, names of the defs/classes around
    # it, the call, the module-level statement holding it)
    compile_sites: list = field(default_factory=list)
    # Every `<expr>.compile(...)` whose receiver is not an imported name (`model.compile()`,
    # nn.Module.compile: torch.compile of the module's call), in compile_sites' form; an entry
    # only where the receiver resolves to an nn.Module class (tcl/entry_points.py)
    module_compile_sites: list = field(default_factory=list)
    # Targets of `torch.compile(f, dynamic=False)` calls: every new input shape recompiles (TCL503).
    dynamic_false_targets: set[str] = field(default_factory=set)
    # Module-level dicts of callables (`LOSS_MAPPING = {"ForCTC": ForCTCLoss, ...}`): name ->
    # (the entry's string key, None where it is not a string literal; its value), in order
    dispatch_tables: dict[str, list[tuple[str | None, cst.BaseExpression]]] = field(default_factory=dict)
    local_defs: frozenset[str] = frozenset()
    known_modules: frozenset[str] = frozenset()  # nn.Module classes of other checked files
    known_optimizers: frozenset[str] = frozenset()  # torch.optim.Optimizer classes of other files
    # Where it came from: findings in its functions are reported against this file.
    name: str = ""
    path: str = ""
    source: str = ""
    module: cst.Module | None = None
    python_tree: object = None  # the `ast` tree of the same source, when one was built
    installed: bool = False  # a file of an installed package, read with --follow-imports
    # Facts a rule reads from the whole file once (`tcl.rules.counters`), by the rule's key.
    file_facts: dict = field(default_factory=dict)
    # id(expression) -> (expression, qualify()'s answer): rules and the walker ask again and
    # again for the same names (a million times in a check of torch/nn + torch/_dynamo)
    qualified: dict = field(default_factory=dict, repr=False, compare=False)

    def file_fact(self, key: str, compute):
        """`compute(tree)` over this file's `ast` tree (the parse's own, else parsed here),
        once per file; None when the source does not parse."""
        if key not in self.file_facts:
            tree = self.python_tree
            if tree is None:
                import ast

                try:
                    tree = ast.parse(self.source)
                except (SyntaxError, ValueError, RecursionError, MemoryError):
                    tree = None
            self.file_facts[key] = compute(tree) if tree is not None else None
        return self.file_facts[key]

    def qualify(self, node: cst.BaseExpression) -> str | None:
        kept = self.qualified.get(id(node))
        if kept is not None and kept[0] is node:
            return kept[1]
        name = canonical(self.imports.qualify(node, self.local_defs))
        self.qualified[id(node)] = (node, name)  # the index keeps the node: its id stays its own
        return name


def decorator_names(node: cst.FunctionDef | cst.ClassDef, imports: ImportMap) -> tuple[str, ...]:
    names = []
    for decorator in node.decorators:
        expr = decorator.decorator
        if isinstance(expr, cst.Call):
            expr = expr.func
        names.append(canonical(imports.qualify(expr)) or "")
    return tuple(names)


def build_index(
    module: cst.Module, package: str = "", source: str = "", known_modules: frozenset[str] = frozenset(),
    compile_calls: dict | None = None, known_optimizers: frozenset[str] = frozenset(),
) -> ModuleIndex:
    imports = ImportMap(package)
    _collect_imports(module, imports)
    index = ModuleIndex(imports=imports, known_modules=known_modules, known_optimizers=known_optimizers)
    local_defs = set()
    for stmt in module.body:
        if isinstance(stmt, cst.FunctionDef):
            local_defs.add(stmt.name.value)
        elif isinstance(stmt, cst.ClassDef):
            local_defs.add(stmt.name.value)
    index.local_defs = frozenset(local_defs)

    for stmt in module.body:
        _index_statement(stmt, stmt, index)
    for info in index.classes.values():
        info.index = index
        for method in info.methods.values():
            method.index = index
    for function in index.functions.values():
        function.index = index
    _mark_module_classes(index)
    _mark_optimizer_classes(index)
    _mark_classes(index, "is_autograd_function", lambda base: base in AUTOGRAD_FUNCTION_ROOTS)
    if "compile(" in source:
        collect_compile_calls(module, index, compile_calls)
    return index


def _collect_imports(module: cst.Module, imports: ImportMap) -> None:
    # Imports inside `if TYPE_CHECKING:` / `try:` blocks count too; a full visit would be
    # wasteful, so look one level into compound statements.
    for stmt in _top_level_simple(module.body):
        for small in stmt.body:
            if isinstance(small, cst.Import):
                imports.add_import(small)
            elif isinstance(small, cst.ImportFrom):
                imports.add_import_from(small)


def _top_level_simple(body, depth: int = 0):
    for stmt in body:
        if isinstance(stmt, cst.SimpleStatementLine):
            yield stmt
        elif depth < 2 and isinstance(stmt, (cst.If, cst.Try)):
            yield from _top_level_simple(stmt.body.body, depth + 1)
            for handler in getattr(stmt, "handlers", ()):
                yield from _top_level_simple(handler.body.body, depth + 1)
            orelse = getattr(stmt, "orelse", None)
            if isinstance(orelse, cst.Else):
                yield from _top_level_simple(orelse.body.body, depth + 1)


def _index_statement(stmt: cst.CSTNode, top: cst.CSTNode, index: ModuleIndex) -> None:
    if isinstance(stmt, cst.FunctionDef):
        info = FunctionInfo(stmt.name.value, stmt, top, None, decorator_names(stmt, index.imports))
        index.functions[info.name] = info
    elif isinstance(stmt, cst.ClassDef):
        _index_class(stmt, top, index)
    elif isinstance(stmt, cst.SimpleStatementLine):
        for small in stmt.body:
            _index_small_statement(small, index, owner=None)
    elif isinstance(stmt, (cst.If, cst.Try)):
        for inner in stmt.body.body:
            _index_statement(inner, top, index)


def _unsubscripted(node: cst.BaseExpression) -> cst.BaseExpression:
    return node.value if isinstance(node, cst.Subscript) else node


def _index_class(node: cst.ClassDef, top: cst.CSTNode, index: ModuleIndex) -> None:
    # A generic base, `Interaction[A, B]`, is the class itself for the hierarchy.
    bases = tuple(canonical(index.imports.qualify(_unsubscripted(arg.value), index.local_defs)) or ""
                  for arg in node.bases)
    info = ClassInfo(node.name.value, node, bases)
    index.classes[info.name] = info
    for stmt in node.body.body:
        if isinstance(stmt, cst.FunctionDef):
            decorators = decorator_names(stmt, index.imports)
            if any(d.endswith((".setter", ".deleter")) for d in decorators):
                continue  # keep the property's getter: that is what reading the attribute runs
            method = FunctionInfo(stmt.name.value, stmt, top, info, decorators)
            info.methods[method.name] = method


class _StatementScanner:
    """Visits statements only: expressions are never descended into, which is what makes
    these scans cheap next to a full traversal. `scan(node)` walks as `node.visit()` would,
    without libcst's rebuilding of every container it passes (tcl/syntax_walk.py)."""

    CONTAINERS = (
        cst.Module, cst.BaseCompoundStatement, cst.BaseSuite, cst.Else, cst.ExceptHandler,
        cst.ExceptStarHandler, cst.Finally,
    )

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            for small in node.body:
                self.handle(small)
            return False
        if isinstance(node, cst.ClassDef):
            self.enter_class(node)
        return isinstance(node, self.CONTAINERS)

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if isinstance(original_node, cst.ClassDef):
            self.leave_class(original_node)

    def scan(self, node: cst.CSTNode) -> None:
        if self.on_visit(node):
            for child in syntax_walk.children(node):
                self.scan(child)
        self.on_leave(node)

    def handle(self, small: cst.BaseSmallStatement) -> None:
        raise NotImplementedError

    def enter_class(self, node: cst.ClassDef) -> None:
        pass

    def leave_class(self, node: cst.ClassDef) -> None:
        pass


class _SelfAttributeScanner(_StatementScanner):
    """`self.x = ...` and `self.register_buffer("x", ...)` in a class's methods."""

    def __init__(self, attributes: dict, buffers: set) -> None:
        self.attributes = attributes
        self.buffers = buffers

    def handle(self, small: cst.BaseSmallStatement) -> None:
        if isinstance(small, cst.Assign):
            for target in small.targets:
                attr = _self_attribute(target.target)
                if attr and attr not in self.attributes:
                    self.attributes[attr] = small.value
        elif isinstance(small, cst.AnnAssign):
            attr = _self_attribute(small.target)
            if attr and small.value is not None and attr not in self.attributes:
                self.attributes[attr] = small.value
        elif isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            call = small.value
            if dotted(call.func) in ("self.register_buffer", "self.register_parameter") and call.args:
                first = call.args[0].value
                if isinstance(first, cst.SimpleString):
                    self.buffers.add(first.evaluated_value)


def _self_attribute(target: cst.BaseExpression) -> str | None:
    if (
        isinstance(target, cst.Attribute)
        and isinstance(target.value, cst.Name)
        and target.value.value == "self"
    ):
        return target.attr.value
    return None


def _collect_self_attributes(info: ClassInfo) -> None:
    # Read from every method, not only __init__: models often build submodules in helpers
    # such as `_init_layers`. Methods are scanned in order, so __init__'s assignment wins.
    scanner = _SelfAttributeScanner(info._attributes, info._buffers)
    for method in info.methods.values():
        scanner.scan(method.node.body)


def _index_small_statement(small: cst.BaseSmallStatement, index: ModuleIndex, owner) -> None:
    if isinstance(small, (cst.Assign, cst.AnnAssign)):
        value = small.value
        targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
        if isinstance(value, cst.Call):
            func = dotted(value.func) or ""
            if func.endswith(LOGGER_FACTORIES):
                index.loggers.update(t.value for t in targets if isinstance(t, cst.Name))
            _record_compile_target(value, index, owner)
        elif isinstance(value, cst.Dict) and owner is None and value.elements:
            entries = [(e.key.evaluated_value if isinstance(e.key, cst.SimpleString) else None, e.value)
                       for e in value.elements if isinstance(e, cst.DictElement)]
            # Only tables of plain names: `{"a": fn_a, "b": mod.fn_b}`, not data dicts.
            if len(entries) == len(value.elements) and all(dotted(v) for _, v in entries):
                for target in targets:
                    if isinstance(target, cst.Name):
                        index.dispatch_tables[target.value] = entries
    elif isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
        _record_compile_target(small.value, index, owner)


def _record_compile_target(call: cst.Call, index: ModuleIndex, owner: ClassInfo | None,
                           scope: tuple[str, ...] = (), top: cst.CSTNode | None = None) -> None:
    if canonical(index.imports.qualify(call.func, index.local_defs)) not in COMPILE_NAMES:
        func = call.func
        if (top is not None and isinstance(func, cst.Attribute) and func.attr.value == "compile"
                and (dotted(func.value) or "self").partition(".")[0] not in index.imports.aliases):
            index.module_compile_sites.append((func.value, scope, call, top))
        return
    if not call.args or call.args[0].keyword is not None:
        return
    target = call.args[0].value
    # Every target with the scope it is evaluated in: `torch.compile(model.generate)` after
    # `model = Model(...)` is resolved through that scope's bindings (tcl/instances.py).
    if top is not None:
        index.compile_sites.append((target, scope, call, top))
    name = dotted(target)
    if name is None:
        return
    if name.startswith("self.") and owner is not None:
        name = f"{owner.name}.{name[5:]}"
    index.compile_targets.add(name)
    if any(arg.keyword is not None and arg.keyword.value == "dynamic" and is_false(arg.value) for arg in call.args):
        index.dynamic_false_targets.add(name)


def is_false(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "False"


def _mark_classes(index: ModuleIndex, flag: str, is_root) -> None:
    """Set `flag` on every class a base of which is a root (`is_root(base)`) or a flagged class
    of this file, until nothing changes (bases may come after their subclasses)."""
    changed = True
    while changed:
        changed = False
        for info in index.classes.values():
            if getattr(info, flag):
                continue
            for base in info.bases:
                parent = index.classes.get(base)
                if is_root(base) or (parent is not None and getattr(parent, flag)):
                    setattr(info, flag, True)
                    changed = True
                    break


def mark_module_classes(index: ModuleIndex, extra: frozenset[str]) -> None:
    """Mark again with more known module bases (installed classes, tcl/installed.py)."""
    index.known_modules = index.known_modules | extra
    _mark_module_classes(index)


def _mark_module_classes(index: ModuleIndex) -> None:
    """A class is an nn.Module if a base is torch.nn.<Something> or a module class of this file."""
    _mark_classes(index, "is_module", lambda base: is_torch_module_base(base) or base in index.known_modules)


OPTIMIZER_ROOTS = frozenset({"torch.optim.Optimizer", "torch.optim.optimizer.Optimizer"})
AUTOGRAD_FUNCTION_ROOTS = frozenset({
    "torch.autograd.Function", "torch.autograd.function.Function", "torch.autograd.function.InplaceFunction",
})


def _mark_optimizer_classes(index: ModuleIndex) -> None:
    """A class is a torch.optim.Optimizer if a base is, here or in another checked file."""
    _mark_classes(index, "is_optimizer", lambda base: base in OPTIMIZER_ROOTS or base in index.known_optimizers)


def is_torch_module_base(qualname: str) -> bool:
    """An nn.Module class of torch, by torch's own data (tcl/torch_facts: private bases such as
    torch.nn.modules.loss._Loss too); a name the data lacks is judged by its spelling."""
    if not qualname.startswith(("torch.nn.", "torch.ao.nn.")):
        return False
    known = torch_facts.is_module_class(qualname)
    if known is not None:
        return known
    last = qualname.rsplit(".", 1)[-1]
    return last[:1].isupper() and last not in ("Parameter", "Buffer")


class _CompileCallScanner(_StatementScanner):
    """`x = torch.compile(f)` / `torch.compile(self.m)` statements anywhere in the file.
    With `calls`, the calls and their classes' names are listed instead of recorded."""

    def __init__(self, index: ModuleIndex, calls: list | None = None) -> None:
        self.index = index
        self.owners: list[str] = []
        self.scopes: list[str] = []  # enclosing defs and classes, outermost first
        self.calls = calls
        self.top: cst.CSTNode | None = None  # the module-level statement being scanned

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.FunctionDef):
            self.scopes.append(node.name.value)
        return super().on_visit(node)

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if isinstance(original_node, cst.FunctionDef):
            self.scopes.pop()
        super().on_leave(original_node)

    def enter_class(self, node: cst.ClassDef) -> None:
        self.owners.append(node.name.value)
        self.scopes.append(node.name.value)

    def leave_class(self, node: cst.ClassDef) -> None:
        self.owners.pop()
        self.scopes.pop()

    def handle(self, small: cst.BaseSmallStatement) -> None:
        value = getattr(small, "value", None)
        # `torch.compile(f)` and `torch.compile(f)(x)`: walk the chain of calls.
        while isinstance(value, cst.Call):
            owner = self.owners[-1] if self.owners else None
            scope = tuple(self.scopes)
            if self.calls is not None:
                self.calls.append((value, owner, scope))
            else:
                _record_compile_target(value, self.index, self.index.classes.get(owner) if owner else None, scope,
                                       self.top)
            value = value.func


def collect_compile_calls(module: cst.Module, index: ModuleIndex, memo: dict | None = None) -> None:
    """`memo` (statement id -> (statement, its calls)): the language server's, so that only
    statements an edit changed are scanned again."""
    if memo is None:
        scanner = _CompileCallScanner(index)
        for statement in module.body:
            scanner.top = statement
            scanner.scan(statement)
        return
    if len(memo) > 20_000:
        memo.clear()
    for statement in module.body:
        kept = memo.get(id(statement))
        if kept is None or kept[0] is not statement:
            calls: list = []
            _CompileCallScanner(index, calls).scan(statement)
            kept = memo[id(statement)] = (statement, calls)
        for call, owner, scope in kept[1]:
            _record_compile_target(call, index, index.classes.get(owner) if owner else None, scope, statement)


def named_calls(node: cst.CSTNode) -> list[tuple[str, cst.Call, bool]]:
    """(name, call, whether on `self`) for every `name(...)` and `self.name(...)` in `node`,
    kept while the node lives (tcl/node_memo.py): the calls of a file's functions by name,
    which tcl/params.py and tcl/instances.py read per statement or per def."""
    def compute() -> list[tuple[str, cst.Call, bool]]:
        found: list[tuple[str, cst.Call, bool]] = []
        for call in syntax_walk.nodes(node):
            if not isinstance(call, cst.Call):
                continue
            func = call.func
            if isinstance(func, cst.Name):
                found.append((func.value, call, False))
            elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
                found.append((func.attr.value, call, True))
        return found

    return per_node(_NAMED_CALLS, node, compute)


_NAMED_CALLS: dict[int, tuple] = {}
