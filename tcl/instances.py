"""Which class a value is an instance of, so calls on objects reach the methods they run.

Users compile code that calls objects: `flow = zuko.flows.NSF(...)` at module level, then
`flow(c).log_prob(x)` inside a compiled function; `self.encoder.encode(x)`; `model =
Model.from_pretrained(...); torch.compile(model.generate)`. The answer here is deliberately
shallow and explicit, like the rest of the engine: a name is an instance of `C` when the scope
that binds it (the function, then the functions around a nested one, then the module) assigns
it `C(...)`, `C.from_*(...)` / a classmethod of `C`, `torch.compile(<instance of C>)`, or a
module-returning-self call on one (`C(...).eval()`, `.to(device)`), or annotates it `C`; a
call's result is an instance of `C` when the callee is annotated `-> C` or every `return` of it
builds a `C`. `C` must be a class the analysis can read (this file, another checked file, or
an installed package with --follow-imports). Anything else is no class: the call is simply
not followed, which costs reach, never precision.

Where the class is chosen at run time, every class that may be chosen counts (the call runs one
of them; which one is rarely static): `TABLE[key](...)` / `TABLE.get(key)(...)` of a module-
level dict whose values are all classes (`table_classes`: `SOLVERS[method](...)`,
`*_ATTENTION_CLASSES[config.impl](config)`), what any method assigns to `self.x` when
`__init__`'s value says nothing (`self.kv_cache = KVCache(...)` in `setup_caches`), and a loop
variable over a container (`element_classes`: `for layer in self.layers`, with the list built up
by `model += [...]` / `.append` before `nn.ModuleList(model)`). A bound method passed on
(`default(decay, self.get_current_decay)`) is the function the callee calls.
"""

from __future__ import annotations

import libcst as cst

from .bindings import (
    _annotations, _appended, _assignments, _calls_by_name, _class_attribute, _function_binding, _is_classmethod,
    _module_bindings, _pick, constant_index, container_elements, field_annotations, module_binding,
    nested_function, qualify_in, rebound_values, returned_values,
)
from .dataflow import field_annotation_kind
from .module_index import ClassInfo, FunctionInfo, ModuleIndex

# nn.Module (and tensor-like) methods that return the object itself.
RETURNS_SELF = frozenset({
    "train", "eval", "to", "cuda", "cpu", "float", "half", "double", "bfloat16", "requires_grad_",
    "to_empty", "type", "share_memory", "xpu", "mps",
})
COMPILE_CALLS = frozenset({"torch.compile"})
# Wrappers whose forward runs the module they wrap (`self.module(*inputs)`): compiling or
# calling `DDP(Net())` traces Net's forward, so the wrapper is taken for the module.
MODULE_WRAPPERS = frozenset({
    "torch.nn.DataParallel", "torch.nn.parallel.DataParallel", "torch.nn.parallel.data_parallel.DataParallel",
    "torch.nn.parallel.DistributedDataParallel", "torch.nn.parallel.distributed.DistributedDataParallel",
    "torch.distributed.fsdp.FullyShardedDataParallel",
    "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel",
})
MAX_DEPTH = 6


class InstanceResolver:
    """Mixin of CallResolver: needs `class_named`, `method_of` and `_resolve` from it. Its
    per-analysis memos are made by `init_instance_memos` (FileAnalysis.__init__)."""

    def init_instance_memos(self) -> None:
        self._return_classes: dict[int, ClassInfo | None] = {}  # def node id -> its return class
        self._nested_defs: dict[tuple, tuple] = {}  # (def node, receiver, name) -> (node, FunctionInfo)
        self._calls_in_progress: set[int] = set()  # calls being resolved: `a = b(); b = a()`
        self._arguments_in_progress: set[tuple] = set()  # parameters being bound from call sites
        self._attributes_in_progress: set[tuple] = set()  # (class id, attr): `self.a = self.b`, `self.b = self.a`
        self._bound_methods: dict[tuple, FunctionInfo] = {}  # CallResolver.bind's copies
        self._candidates: dict[tuple, list] = {}  # CallResolver._candidate_targets
        self._narrowed: dict[int, tuple] = {}  # def node id -> (node, narrowing.narrowed_calls)
        # def node id -> {free variable or global: [class spec]} of a recorded entry (record_bindings)
        self._recorded_bindings: dict[int, dict[str, tuple[str, ...]]] = {}

    def record_bindings(self, spec, found) -> None:
        """Keep what a recorded entry's free variables held when it ran (EntrySpec.bindings) for
        the functions `found` it names: `_binding` answers those names with these classes."""
        if not spec.bindings or not isinstance(found, list):
            return
        for function in found:
            if function.node is None:
                continue
            # one nested def run by several tests (a training step over different optimizers):
            # every class any of them saw
            kept = self._recorded_bindings.setdefault(id(function.node), {})
            for name, specs in spec.bindings:
                kept[name] = tuple(dict.fromkeys([*kept.get(name, ()), *specs]))

    def recorded_classes(self, scope: FunctionInfo, name: str) -> list[ClassInfo]:
        """The classes the recorded entry `scope` saw `name` (a name it does not bind itself)
        hold, that the analysis can read (checked files, installed packages with
        --follow-imports); [] when nothing was recorded for it."""
        specs = self._recorded_bindings.get(id(scope.node), {}).get(name, ())
        out = []
        for spec in specs:
            found = self.project.find(spec.replace(":", "."))
            if isinstance(found, ClassInfo) and found not in out:
                out.append(found)
        return out

    def instance_class(self, expr: cst.BaseExpression, function: FunctionInfo | None,
                       index: ModuleIndex, depth: int = 0) -> ClassInfo | None:
        """The class `expr` (evaluated in `function`, or at the top level of `index`) is an
        instance of, or None."""
        if depth > MAX_DEPTH:
            return None
        if isinstance(expr, cst.Name):
            bound = self._binding(expr.value, function, index, depth)
            if bound is None:
                return None
            value, where, scope_index = bound
            if isinstance(value, ClassInfo):
                return value
            found = self.instance_class(value, where, scope_index, depth + 1)
            return found if found is not None else self._declared_class(expr.value, where, scope_index)
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
            owner = function.owner if function is not None else None
            receiver = function.receiver if function is not None else None
            for cls in self._mro(receiver or owner):
                value = _class_attribute(cls, expr.attr.value)
                if value is not None:
                    # read in the class's __init__, so `self.default_reducer()` resolves there
                    init = self.bind(self.method_of(cls, "__init__"), receiver) if cls is not None else None
                    found = self.instance_class(value, init, cls.index, depth + 1)
                    if found is not None:
                        return found
            # `self.kv_cache = kv_cache` (None by default) in __init__, `self.kv_cache =
            # KVCache(...)` in `setup_caches`: what any method of the class assigns
            classes = self.attribute_classes(receiver or owner, expr.attr.value) if depth <= 2 else []
            return classes[0] if classes else None
        if isinstance(expr, cst.IfExp):  # `a if c else b`: the first branch with a known class
            return (self.instance_class(expr.body, function, index, depth + 1)
                    or self.instance_class(expr.orelse, function, index, depth + 1))
        if isinstance(expr, cst.Call):
            return self._call_class(expr, function, index, depth)
        if isinstance(expr, cst.Subscript):  # `self.layers[i]`, `self.layer[-1]`
            return self.element_class(expr.value, function, index, depth + 1, constant_index(expr))
        return None

    def element_class(self, expr: cst.BaseExpression, function: FunctionInfo | None, index: ModuleIndex,
                      depth: int = 0, position: int | None = None) -> ClassInfo | None:
        """The class of the elements of a container: `nn.ModuleList([Block(...) for _ in ...])`,
        `nn.Sequential(A(), ...)` (its first element), a list display or comprehension, bound
        to `self.layers` or a name."""
        if depth > MAX_DEPTH:
            return None
        value = expr
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
            owner = function.owner if function is not None else None
            receiver = function.receiver if function is not None else None
            value = _class_attribute(receiver, expr.attr.value) or _class_attribute(owner, expr.attr.value)
            index = (receiver or owner).index if value is not None else index
            holder = receiver if _class_attribute(receiver, expr.attr.value) is not None else owner
            if value is not None and not container_elements(value, index) and holder is not None:
                init = self.method_of(holder, "__init__")
                # `self.layers = nn.ModuleList(model)` after `model = [...]; model += [...]`
                appended = (container_elements(value, index, init.node) if init is not None else []) or _appended(
                    holder, expr.attr.value)
                chosen = _pick(appended, position)
                return self.instance_class(chosen, init, index, depth + 1) if chosen is not None else None
            function = None
        elif isinstance(expr, cst.Name):
            bound = _function_binding(function.node, expr.value) if function is not None else None
            value = bound[1] if bound is not None and bound[0] == "value" else module_binding(index, expr.value)
        elif isinstance(expr, cst.Call) and position is not None:
            return self._returned_element_class(expr, function, index, depth, position)
        elements = container_elements(value, index)
        if not elements and isinstance(expr, cst.Attribute) and value is not None:
            # `self.block = nn.ModuleList()` then `self.block.append(Block(...))` in a loop
            owner = (function.receiver or function.owner) if function is not None else None
            elements = _appended(owner, expr.attr.value) if owner is not None else []
            function = self.bind(self.method_of(owner, "__init__"), None) if owner is not None else None
        chosen = _pick(elements, position)
        return self.instance_class(chosen, function, index, depth + 1) if chosen is not None else None

    def element_classes(self, expr: cst.BaseExpression, function: FunctionInfo | None,
                        index: ModuleIndex) -> list[ClassInfo]:
        """Every class among a container's elements, for a loop over it (`for layer in
        self.layers: x = layer(x)` runs each element's forward): `self.layers` built in
        `__init__`, or a local name bound to a container."""
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
            owner = (function.receiver or function.owner) if function is not None else None
            holder = owner if _class_attribute(owner, expr.attr.value) is not None else (
                function.owner if function is not None else None)
            value = _class_attribute(holder, expr.attr.value)
            if holder is None or value is None:
                return []
            init = self.method_of(holder, "__init__")
            scope = self.bind(init, owner) if init is not None else None
            elements = (container_elements(value, holder.index, init.node if init is not None else None)
                        or _appended(holder, expr.attr.value))
            index = holder.index
        elif isinstance(expr, cst.Name) and function is not None:
            bound = _function_binding(function.node, expr.value)
            if bound is None or bound[0] != "value":
                return []
            elements, scope = container_elements(bound[1], index, function.node), function
        else:
            return []
        out: list[ClassInfo] = []
        for element in elements:
            cls = self.instance_class(element, scope, index, 2)
            if cls is not None and cls not in out:
                out.append(cls)
        return out

    def attribute_classes(self, owner: ClassInfo | None, attr: str) -> list[ClassInfo]:
        """Every class the methods of `owner` assign to `self.<attr>` (`self.mlp = Sparse(...)`
        in one branch, `Dense(...)` in the other): a call on the attribute may run any."""
        if owner is None or owner.index is None:
            return []
        key = (id(owner), attr)
        if key in self._attributes_in_progress:  # assigned from itself, through other attributes:
            return []  # each pass restarted at depth 2, until Python's recursion limit
        self._attributes_in_progress.add(key)
        try:
            return self._attribute_classes(owner, attr)
        finally:
            self._attributes_in_progress.discard(key)

    def _attribute_classes(self, owner: ClassInfo, attr: str) -> list[ClassInfo]:
        out = []
        for holder in self._mro(owner):
            init = self.bind(self.method_of(holder, "__init__"), owner if owner is not holder else None)
            for value in _assignments(holder, attr):
                for branch in ([value.body, value.orelse] if isinstance(value, cst.IfExp) else [value]):
                    # `self.attn = ATTENTION_CLASSES[config.impl](config)`: any of the table's
                    classes = self.table_classes(branch, holder.index) or [self.instance_class(branch, init, holder.index, 2)]
                    out.extend(c for c in classes if c is not None and c not in out)
            if out:
                break
        return out

    def field_kind(self, node: cst.Attribute, function: FunctionInfo | None, index: ModuleIndex):
        """`n.distances` where `n` is an instance of a class whose body annotates `distances`
        (a NamedTuple, a dataclass, a typed record; torchani's `Neighbors`): the Kind that
        annotation promises (tcl.dataflow.field_annotation_kind), or None."""
        cls = self.instance_class(node.value, function, index)
        if cls is None:
            return None
        for owner in self._mro(cls):
            annotation = field_annotations(owner).get(node.attr.value)
            if annotation is not None:
                return field_annotation_kind(annotation)
        return None

    def _mro(self, cls: ClassInfo | None) -> list[ClassInfo]:
        """`cls` and the bases the analysis can read, nearest first (breadth-first, bounded)."""
        out, queue = [], [cls]
        while queue and len(out) < 16:
            current = queue.pop(0)
            if current is None or current in out:
                continue
            out.append(current)
            queue.extend(self.class_named(base, current.index) for base in current.bases if base)
        return out

    def container_classes(self, expr: cst.BaseExpression, function: FunctionInfo | None,
                          index: ModuleIndex) -> list[ClassInfo]:
        """Every element class of `nn.Sequential(A(), B())` bound to `self.x` (calling it runs
        each element's forward)."""
        if not (isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self"
                and function is not None):
            return []
        owner = function.receiver or function.owner
        value = _class_attribute(owner, expr.attr.value) or _class_attribute(function.owner, expr.attr.value)
        if not (isinstance(value, cst.Call) and (index.qualify(value.func) or "").endswith(".Sequential")):
            return []
        out = []
        for element in container_elements(value, (owner or function.owner).index):
            cls = self.instance_class(element, None, (owner or function.owner).index, 1)
            if cls is not None and cls not in out:
                out.append(cls)
        return out

    def _call_class(self, call: cst.Call, function, index: ModuleIndex, depth: int) -> ClassInfo | None:
        func = call.func
        qualname = index.qualify(func) or ""
        if qualname in COMPILE_CALLS or qualname in MODULE_WRAPPERS:  # `torch.compile(model)`, `DDP(model)`
            return self.instance_class(call.args[0].value, function, index, depth + 1) if call.args else None
        cls = self._class_of_name(func, index, function)
        if cls is not None:
            return cls
        table = self.table_classes(call, index)
        if table:  # `SOLVERS[method](...)`: the first; candidate_classes gives them all
            return table[0]
        if isinstance(func, cst.Attribute):
            owner_class = self._class_of_name(func.value, index, function)
            if owner_class is not None:  # `Model.from_pretrained(...)`, a classmethod factory
                method = self.method_of(owner_class, func.attr.value)
                if func.attr.value.startswith("from_") or (method is not None and _is_classmethod(method)):
                    return owner_class
                return None
            if func.attr.value in RETURNS_SELF:
                receiver = self.instance_class(func.value, function, index, depth + 1)
                if receiver is not None and receiver.is_module:
                    return receiver
        callee = self.instance_call_target(call, function, index, depth + 1)
        if callee is None and isinstance(func, cst.Name):
            callee = self.function_value(func, function, index, depth + 1)
        busy = self._calls_in_progress
        if callee is None and function is not None and id(call) not in busy:
            busy.add(id(call))  # `a = b(); b = a()` must not loop through _resolve
            try:
                callee = self._resolve(call, function)
            finally:
                busy.discard(id(call))
        return self.return_class(callee, depth + 1) if callee is not None else None

    def _returned_element_class(self, call: cst.Call, function, index: ModuleIndex, depth: int,
                                position: int) -> ClassInfo | None:
        """`load()[1]`, as `tokenizer, model = load()` unpacks it: the class of element
        `position` of the tuple displays every `return` of the called function gives, when
        they agree."""
        callee = self.function_value(call.func, function, index, depth + 1)
        if callee is None or callee.node is None:
            return None
        classes = set()
        found = None
        for returned in returned_values(callee.node):
            if not isinstance(returned, (cst.Tuple, cst.List)) or len(returned.elements) <= position:
                return None
            element = returned.elements[position]
            if isinstance(element, cst.StarredElement):
                return None
            found = self.instance_class(element.value, callee, callee.index, depth + 1)
            classes.add(id(found))
        return found if len(classes) == 1 else None

    def _class_of_name(self, expr: cst.BaseExpression, index: ModuleIndex,
                       function: FunctionInfo | None = None) -> ClassInfo | None:
        if isinstance(expr, cst.Name) and expr.value in index.classes:
            return index.classes[expr.value]
        if not isinstance(expr, (cst.Name, cst.Attribute)):
            return None
        qualname = qualify_in(expr, function, index)
        return self.class_named(qualname, index) if qualname else None

    def return_class(self, function: FunctionInfo, depth: int = 0) -> ClassInfo | None:
        """`-> C`, or every `return` of `function` builds the same class `C`."""
        if depth > MAX_DEPTH or function.index is None:
            return None
        memo = self._return_classes
        key = id(function.node)
        if key in memo:
            return memo[key]
        memo[key] = None  # a recursive function cannot loop here
        found = None
        returns = function.node.returns
        if returns is not None:
            annotation = returns.annotation
            if isinstance(annotation, cst.SimpleString):
                try:
                    annotation = cst.parse_expression(annotation.evaluated_value)
                except Exception:  # noqa: BLE001 -- a forward reference tcl cannot read
                    annotation = None
            if annotation is not None:
                found = self._class_of_name(annotation, function.index)
        if found is None:
            classes = {id(c): c for c in (self.instance_class(value, function, function.index, depth + 1)
                                          for value in returned_values(function.node))}
            if len(classes) == 1 and None not in classes.values():
                found = next(iter(classes.values()))
        memo[key] = found
        return found

    def instance_call_target(self, call: cst.Call, function: FunctionInfo | None, index: ModuleIndex,
                             depth: int = 0) -> FunctionInfo | None:
        """What a call on an object runs: `obj(x)` its forward / `__call__`, `obj.m(x)` and
        `make().m(x)` the method `m` of the object's class."""
        func = call.func
        if isinstance(func, cst.Attribute):
            receiver = func.value
            if isinstance(receiver, cst.Name) and (receiver.value == "self" or receiver.value in index.classes):
                return None  # resolved by CallResolver itself
            cls = self.instance_class(receiver, function, index, depth)
            if cls is None:
                return None
            method = self.method_of(cls, func.attr.value)
            return None if method is None or method.is_property else self.bind(method, cls)
        if isinstance(func, (cst.Name, cst.Call, cst.Subscript)):
            cls = self.instance_class(func, function, index, depth)
            return self.call_method_of(cls) if cls is not None else None
        return None

    def table_classes(self, expr: cst.BaseExpression, index: ModuleIndex) -> list[ClassInfo]:
        """The classes a registry call may build: `TABLE[key](...)` or `TABLE.get(key)(...)`
        where TABLE is a module-level dict whose values name classes (`SOLVERS = {"euler":
        Euler, "rk4": RK4}`, transformers' `*_ATTENTION_CLASSES`). The key is rarely static, so
        every class counts; a table with any value that is not a class gives none."""
        if not isinstance(expr, cst.Call):
            return []
        func = expr.func
        if isinstance(func, cst.Subscript):
            table = func.value
        elif (isinstance(func, cst.Call) and isinstance(func.func, cst.Attribute)
              and func.func.attr.value == "get"):
            table = func.func.value
        else:
            return []
        if not isinstance(table, cst.Name):
            return []
        owner, entries = self.table_entries(table, index)
        classes: list[ClassInfo] = []
        for _, value in entries:
            cls = self._class_of_name(value, owner)
            if cls is None:
                return []
            if cls not in classes:
                classes.append(cls)
        return classes

    def table_entries(self, table: cst.Name, index: ModuleIndex) -> tuple[ModuleIndex | None, list]:
        """(the index defining the module-level dict `table` names, its (key, value expression)
        entries, ModuleIndex.dispatch_tables): this file's, else the one it imports the name
        from; (None, []) when neither has one."""
        values = index.dispatch_tables.get(table.value)
        if values is not None:
            return index, values
        module, _, name = (index.qualify(table) or "").rpartition(".")
        owner = self.project.index_of(module) if module else None
        found = owner.dispatch_tables.get(name) if owner is not None else None
        return (owner, found) if found is not None else (None, [])

    def call_method_of(self, cls: ClassInfo) -> FunctionInfo | None:
        """What calling an instance runs: a `__call__` the class (or a base the analysis can
        read) defines, else an nn.Module's forward."""
        method = self.method_of(cls, "__call__")
        if method is not None:
            return self.bind(method, cls)
        return self.bind(self.method_of(cls, "forward"), cls) if cls.is_module else None

    # -- scopes --------------------------------------------------------------------------------
    def _binding(self, name: str, function: FunctionInfo | None, index: ModuleIndex, depth: int = 0):
        """(value, function whose scope it is evaluated in, index) of the innermost binding
        of `name`: an assignment or annotation in `function`, the functions enclosing it, or
        the module's top level. A ClassInfo stands for an annotation naming a class."""
        scope = function
        while scope is not None:
            bound = _function_binding(scope.node, name)
            if bound is None and self._recorded_bindings:
                recorded = self.recorded_classes(scope, name)
                if recorded:  # a recorded entry's free variable: the class it held at run time
                    return recorded[0], scope, scope.index
            if bound is not None:
                kind, value = bound
                if kind == "annotation":
                    cls = self._class_of_name(value, scope.index)
                    return (cls, scope, scope.index) if cls is not None else None
                if kind == "param":
                    return self._argument_binding(scope, name, depth)
                if kind == "element":
                    cls = self.element_class(value, scope, scope.index, depth + 1)
                    return (cls, scope, scope.index) if cls is not None else None
                return value, scope, scope.index
            scope = scope.enclosing
        value = module_binding(index, name)
        return (value, None, index) if value is not None else None

    def _declared_class(self, name: str, where: FunctionInfo | None, index: ModuleIndex) -> ClassInfo | None:
        """`model: Net = torch.load(path)`: the class the annotation of the assignment that
        binds `name` names, for a value (a loader, a factory) whose class is unknown."""
        annotations = _annotations(where.node) if where is not None else _module_bindings(index)[1]
        annotation = annotations.get(name)
        return self._class_of_name(annotation, index) if annotation is not None else None


    def _argument_binding(self, function: FunctionInfo, name: str, depth: int):
        """A parameter of a module-level function, bound to what the file's own calls of it
        pass (`_nll(flow)` after `flow = NSF(...)`), or of a class's `__init__`, bound to what
        the file's constructor calls pass (`ImageLoss(matcher=matcher)` after `matcher =
        HungarianMatcher(...)`: `self.matcher(...)` then runs HungarianMatcher.forward): the
        first argument there that is an instance of a class the analysis can read."""
        constructor = function.owner is not None and function.node.name.value == "__init__"
        if (function.owner is not None and not constructor) or function.enclosing is not None \
                or function.index is None:
            return None
        busy = self._arguments_in_progress
        key = (id(function.node), name)
        if key in busy or depth > MAX_DEPTH:  # `walk(v, n - 1)` inside walk: no new evidence
            return None
        busy.add(key)
        try:
            return self._first_argument(function, name, depth)
        finally:
            busy.discard(key)

    def _first_argument(self, function: FunctionInfo, name: str, depth: int):
        index = function.index
        params = [p.name.value for p in [*function.node.params.posonly_params, *function.node.params.params]]
        called = function.name
        if function.owner is not None:  # `Class(...)` calls its __init__ without `self`
            params, called = params[1:], function.owner.name
        position = params.index(name) if name in params else None
        for call, caller in _calls_by_name(index).get(called, ()):
            argument = None
            for i, arg in enumerate(call.args):
                if arg.star:
                    break
                if (arg.keyword is not None and arg.keyword.value == name) or (arg.keyword is None and i == position):
                    argument = arg.value
                    break
            if argument is not None and (self.instance_class(argument, caller, index, depth + 1) is not None
                                         or self.function_value(argument, caller, index, depth + 1) is not None):
                return argument, caller, index
        return None

    def arguments_of(self, function: FunctionInfo, name: str) -> list[tuple]:
        """(argument, calling function, index) at every call of a module-level `function` in
        its file that passes parameter `name`."""
        if function.owner is not None or function.enclosing is not None or function.index is None:
            return []
        params = [p.name.value for p in [*function.node.params.posonly_params, *function.node.params.params]]
        position = params.index(name) if name in params else None
        out = []
        for call, caller in _calls_by_name(function.index).get(function.name, ()):
            for i, arg in enumerate(call.args):
                if arg.star:
                    break
                if (arg.keyword is not None and arg.keyword.value == name) or (arg.keyword is None and i == position):
                    out.append((arg.value, caller, function.index))
                    break
        return out

    # -- function values -----------------------------------------------------------------------
    def function_value(self, expr: cst.BaseExpression, function: FunctionInfo | None, index: ModuleIndex,
                       depth: int = 0) -> FunctionInfo | None:
        """The function an expression evaluates to: a def of the scope or the module, an
        imported function, a name bound to one (a parameter: what the file's calls pass, as
        `_with_miner(_triplet, _ms_miner)`), or a call of a factory that returns a nested def."""
        if depth > MAX_DEPTH:
            return None
        if isinstance(expr, cst.Name):
            scope = function
            while scope is not None:
                nested = self.nested_def(scope, expr.value)
                if nested is not None:
                    return nested
                bound = _function_binding(scope.node, expr.value)
                if bound is not None:
                    kind, value = bound
                    if kind == "param":
                        found = self._argument_binding(scope, expr.value, depth)
                        return self.function_value(found[0], found[1], found[2], depth + 1) if found else None
                    return self.function_value(value, scope, scope.index, depth + 1) if kind == "value" else None
                scope = scope.enclosing
            local = index.functions.get(expr.value)
            if local is not None:
                return local
            value = module_binding(index, expr.value)
            if value is not None:
                return self.function_value(value, None, index, depth + 1)
        if (isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self"
                and function is not None and function.owner is not None):
            # a bound method passed on: `default(decay, self.get_current_decay)` calls it there
            method = self.method_of(function.receiver or function.owner, expr.attr.value)
            if method is not None and not method.is_property:
                return self.bind(method, function.receiver)
        if isinstance(expr, (cst.Name, cst.Attribute)):
            qualname = qualify_in(expr, function, index)
            found = self.project.find(qualname) if qualname and not qualname.startswith(("torch.", "builtins.")) else None
            return found if isinstance(found, FunctionInfo) else None
        if isinstance(expr, cst.Call):
            factory = self.function_value(expr.func, function, index, depth + 1)
            returned = [v for v in returned_values(factory.node) if isinstance(v, cst.Name)] if factory else []
            if returned:
                return self.nested_def(factory, returned[0].value)
        return None

    def nested_def(self, function: FunctionInfo, name: str) -> FunctionInfo | None:
        """nested_function, one FunctionInfo per def (the analysis keys functions by identity)."""
        cache = self._nested_defs
        key = (id(function.node), id(function.receiver), name)
        if key not in cache:
            nested = self.made_once(function, ("nested", id(function), name), (function, function.node),
                                    lambda: nested_function(function, name))
            cache[key] = (function.node, nested)
        return cache[key][1]

    def made_once(self, source: FunctionInfo, key: tuple, made_from: tuple, make):
        """`make()`: a FunctionInfo built from `source` (bound to a subclass, a nested def). In
        an editor's re-check of `source`'s file, last check's object while it is built from the
        same objects (EditMemo.derived), so the walks kept for it are found again."""
        memo = self.analyzer.memo if source.index is self.index else None
        return memo.derived(key, made_from, make) if memo is not None else make()

    def candidate_classes(self, expr: cst.BaseExpression, function: FunctionInfo | None,
                          index: ModuleIndex) -> list[ClassInfo]:
        """Every class a name may hold when it comes from a parameter that the file's calls
        fill differently (`_nll(flow)` called with three flows; `miner = make_miner()` with
        `make_miner` one of several factories): instance_class gives the first, this all."""
        if not isinstance(expr, cst.Name) or function is None:
            return []
        scope = function
        while scope is not None:
            bound = _function_binding(scope.node, expr.value)
            if bound is not None:
                break
            if self._recorded_bindings:
                recorded = self.recorded_classes(scope, expr.value)
                if recorded:  # every class a recorded entry's free variable held
                    return recorded
            scope = scope.enclosing
        if scope is None:
            return []
        kind, value = bound
        out: list[ClassInfo] = []
        if kind == "element":  # a loop variable: any element of what the loop runs over
            return self.element_classes(value, scope, scope.index)
        if kind == "value" and isinstance(value, cst.BaseExpression):
            out = self.table_classes(value, scope.index)
            if out:  # `solver = SOLVERS[method](...)`; `solver.integrate(t)` runs any one's
                return out
            # `stop = Deferred(...)` in one branch, `stop = StopCheck(...)` in the other
            # (transformers' decoding loop): `stop(...)` runs whichever the program picked.
            for alternative in rebound_values(scope.node, expr.value):
                cls = self.instance_class(alternative, scope, scope.index, 2)
                if cls is not None and cls not in out:
                    out.append(cls)
            if len(out) > 1:
                return out
            out = []
        if kind == "param":
            for argument, caller, where in self.arguments_of(scope, expr.value)[:16]:
                cls = self.instance_class(argument, caller, where, 2)
                if cls is not None and cls not in out:
                    out.append(cls)
        elif kind == "value" and isinstance(value, cst.Call) and isinstance(value.func, cst.Name):
            holder = scope
            while holder is not None and _function_binding(holder.node, value.func.value) is None:
                holder = holder.enclosing
            if holder is not None and _function_binding(holder.node, value.func.value)[0] == "param":
                for argument, caller, where in self.arguments_of(holder, value.func.value)[:16]:
                    factory = self.function_value(argument, caller, where, 2)
                    cls = self.return_class(factory, 2) if factory is not None else None
                    if cls is not None and cls not in out:
                        out.append(cls)
        return out
