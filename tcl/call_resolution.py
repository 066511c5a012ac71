"""Which functions a call in traced code runs: the call-resolution half of FileAnalysis.

`resolve_call` answers for a direct call: a module-level helper, `self.method()` through base
classes, `super().m()`, `Class.m()`, a submodule's forward (`self.block(x)` with `self.block =
Block(...)`), a module built in traced code (its `__init__`), a helper of another checked file.
Two more questions cover indirect calls: `dispatch_targets` (a call through a module-level
dict of functions, or a property returning `TABLE[key]`: every entry may run) and
`override_targets` (`self.m()` in a base class runs the overrides of its subclasses across the
tree, found by name in the project scan and loaded only where a subclass defines `m`; and
`self.attr(...)` where `__init__` bound the attribute to `self.method`; and `fn(...)` where the
def binds `fn` to different functions in different branches: `rebound_function_values`). Two kinds of call
choose their target at run time and are answered with every target that fits: `F.apply(...)` of
a torch.autograd.Function runs its forward (`resolve_call`, `ctx` left out of the arguments) and
its backward (`override_targets`), both of which Dynamo traces; `getattr(self, "{}_reduction".
format(kind))(...)`, directly or through a helper returning it, runs every method whose name fits
the constant parts (`named_method_values`; one argument list fits them all, so argument kinds
hold). FileAnalysis inherits this class; it provides `index`, `project`, `resolved`, `tables`,
`overrides` and `foreign_indexes()`.
"""

from __future__ import annotations

import dataclasses
import re

import libcst as cst

from . import syntax_walk
from .bindings import _bindings, _function_binding, assigned_values, module_binding, rebound_values, returned_values
from .instances import InstanceResolver
from .module_index import ClassInfo, FunctionInfo, ModuleIndex
from .narrowing import narrowed_calls
from .node_memo import per_node
from .project import module_name_of


class CallResolver(InstanceResolver):
    def _lookup(self, dotted_name: str) -> FunctionInfo | None:
        head, _, rest = dotted_name.partition(".")
        if not rest:
            return self.index.functions.get(head)
        cls = self.index.classes.get(head)
        if cls is not None:
            return self.method_of(cls, rest)
        return None

    def class_named(self, name: str, index: ModuleIndex) -> ClassInfo | None:
        """A class by the name `index` knows it under: local, or imported from the tree."""
        local = index.classes.get(name)
        if local is not None:
            return local
        found = self.project.find(name)
        return found if isinstance(found, ClassInfo) else None

    def method_of(self, cls: ClassInfo | None, name: str) -> FunctionInfo | None:
        """Method lookup through base classes, in this file and in other checked files."""
        seen = set()
        queue = [cls]
        while queue:
            cls = queue.pop(0)
            if cls is None or id(cls) in seen:
                continue
            seen.add(id(cls))
            if name in cls.methods:
                return cls.methods[name]
            queue.extend(self.class_named(base, cls.index) for base in cls.bases)
        return None

    def resolve_call(self, call: cst.Call, caller: FunctionInfo) -> FunctionInfo | None:
        key = (id(call), id(caller))
        if key not in self.resolved:  # rules and the walker ask about the same call
            self.resolved[key] = self._resolve_uncached(call, caller)
        return self.resolved[key]

    def resolve_property(self, node: cst.Attribute, caller: FunctionInfo) -> FunctionInfo | None:
        if caller.owner is None:
            return None
        getter = self.method_of(caller.owner, node.attr.value)
        return getter if getter is not None and getter.is_property else None

    def dispatch_targets(self, call: cst.Call, caller: FunctionInfo) -> list[FunctionInfo]:
        """The functions a call through a dispatch table may run: `TABLE[key](...)`, or
        `self.prop(...)` where the property getter returns `TABLE[key]` / `TABLE.get(key)`.
        Every entry counts (the key is rarely static), except where the key is an attribute the
        getter's class sets from the object's class name (`class_named_attributes`): then the entry
        whose key that name holds (`_entry_named_in`), as transformers' `self.loss_function`
        picks `ForCausalLM` for LlamaForCausalLM, or the getter's fallback key; every entry
        where neither is in the table."""
        func = call.func
        # (table, the index naming it, (the caller's class name, the getter's fallback key)
        # where the key is named after the class)
        tables: list[tuple[cst.BaseExpression, ModuleIndex, tuple[str, str | None] | None]] = []
        if isinstance(func, cst.Subscript):
            tables.append((func.value, caller.index, None))
        elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
            getter = self.resolve_property(func, caller)
            if getter is not None:
                receiver = caller.receiver or caller.owner
                for table, key in _returned_tables(getter):
                    attr, fallback = _key_read(key, getter)
                    named = (receiver is not None and getter.owner is not None and attr is not None
                             and attr in class_named_attributes(getter.owner))
                    tables.append((table, getter.index, (receiver.name, fallback) if named else None))
        targets: list[FunctionInfo] = []
        # `self.layers(x)` with `self.layers = nn.Sequential(A(...), B(...))`: each forward runs
        for cls in self.container_classes(func, caller, caller.index):
            method = self.call_method_of(cls)
            if method is not None and method not in targets:
                targets.append(method)
        for table, index, named in tables:
            items = self._table_items(table, index)
            chosen = _entry_named_in(named[0], items, named[1]) if named else None
            for key, function in ([chosen] if chosen is not None else items):
                if function not in targets and not function.is_disabled:
                    targets.append(function)
        return targets

    def rebound_function_values(self, name: cst.Name, caller: FunctionInfo) -> list[FunctionInfo]:
        """Every function a local name may hold when the def binds it more than once or
        through a conditional expression: `spline_fn = rational_quadratic_spline` in one branch,
        `spline_fn = unconstrained_rational_quadratic_spline` in another (nflows). resolve_call
        answers with the first binding only; the option picks the other at run time."""
        kind, _ = _bindings(caller.node).get(name.value, (None, None))
        if kind != "value":
            return []
        found: list[FunctionInfo] = []
        for value in rebound_values(caller.node, name.value):
            if not isinstance(value, (cst.Name, cst.Attribute)):
                continue
            function = self.function_value(value, caller, caller.index)
            if function is not None and function not in found:
                found.append(function)
        return found if len(found) > 1 else []

    MAX_OVERRIDES = 64

    def override_targets(self, call: cst.Call, caller: FunctionInfo) -> list[FunctionInfo]:
        """`self.compute_loss(...)` in a method of class B: the overrides of `compute_loss` in B's
        subclasses across the checked tree. A base class's forward is compiled for each
        subclass, so the call runs whichever override that subclass has (pytorch-metric-
        learning's losses: one forward in the base, the loss in each subclass)."""
        func = call.func
        owner = caller.owner
        if isinstance(func, cst.Attribute) and func.attr.value == "apply":
            # Dynamo traces an autograd.Function's backward with its forward (measured on 2.13:
            # a data-dependent branch in backward breaks the graph at the `apply` call's frame).
            function_class = self.autograd_function_class(func.value, caller)
            if function_class is not None:
                backward = self.method_of(function_class, "backward")
                return [backward] if backward is not None else []
        others = self._candidate_targets(call, caller)
        if others is not None:
            if isinstance(func, cst.Name):  # `spline_fn(...)`, bound to one of several functions
                first = self.resolve_call(call, caller)
                others = others + [f for f in self.rebound_function_values(func, caller)
                                   if f is not first and f not in others and not f.is_disabled]
            return others
        if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)
                and func.value.value == "self" and owner is not None and owner.index is not None):
            return []
        key = (id(owner), id(caller.receiver), func.attr.value)
        found = self.overrides.get(key)
        if found is not None:
            return found
        self.overrides[key] = []
        name, targets = func.attr.value, []
        if caller.receiver is not None:
            # The compiled object's class is known: `self.m()` is its m (resolve_call); only
            # a submodule attribute assigned different classes may run any of their forwards.
            if self.method_of(caller.receiver, name) is None:
                for method_name in self._bound_method_names(caller.receiver, name):
                    method = self.bind(self.method_of(caller.receiver, method_name), caller.receiver)
                    if method is not None and method not in targets and not method.is_property:
                        targets.append(method)
                for cls in self.attribute_classes(caller.receiver, name) + self.attribute_classes(owner, name):
                    method = self.call_method_of(cls)
                    if method is not None and method not in targets:
                        targets.append(method)
            self.overrides[key] = targets
            return targets
        if self.method_of(owner, name) is None:
            for cls in self.attribute_classes(owner, name):
                method = self.call_method_of(cls)
                if method is not None and method not in targets and (
                        method.index is owner.index or (method.index is not None and method.index.installed)):
                    targets.append(method)
            # `self.loss_method(...)` after `self.loss_method = self.mat_based_loss if mat else
            # self.pair_based_loss` in __init__: a bound method kept in an attribute
            for method_name in self._bound_method_names(owner, name):
                method = self.method_of(owner, method_name)
                if method is not None and method not in targets and not method.is_property:
                    targets.append(method)
        # Walk the subclass tree by name (the project scan), loading only the classes whose
        # own body defines the method: parsing every subclass file would cost more than the rest.
        self._add_subclass_overrides(owner, lambda method_name: method_name == name, targets)
        self.overrides[key] = targets
        return targets

    def _add_subclass_overrides(self, owner: ClassInfo, wanted, targets: list[FunctionInfo]) -> None:
        """Append to `targets` the methods whose name `wanted` accepts that `owner`'s subclasses
        across the tree define. Walks the subclass tree by name (the project scan), loading
        only the classes whose own body defines such a method: parsing every subclass file
        would cost more than the rest."""
        queue, seen = self._subclass_names(owner), set()
        local = [c for c in owner.index.classes.values() if owner.name in c.bases and c is not owner]
        for cls in local:
            for name, method in cls.methods.items():
                if wanted(name) and self._overrides_ok(method, cls, name) and method not in targets:
                    targets.append(method)
        while queue and len(targets) < self.MAX_OVERRIDES:
            qualname = queue.pop(0)
            if qualname in seen:
                continue
            seen.add(qualname)
            queue.extend(self.project.subclasses.get(qualname, ()))
            names = [n for n in self.project.class_methods.get(qualname, ()) if wanted(n)]
            if not names:
                continue
            module, _, class_name = qualname.rpartition(".")
            cls = self._class_here(module, class_name) or self.project.find(qualname)
            for name in names:
                method = cls.methods.get(name) if cls is not None and hasattr(cls, "methods") else None
                if method is not None and self._overrides_ok(method, cls, name) and method not in targets:
                    targets.append(method)

    def named_method_targets(self, expr: cst.BaseExpression, caller: FunctionInfo) -> list[FunctionInfo]:
        """The methods `getattr(self, <name>)` may fetch when the name is built from constant
        parts (`"{}_reduction".format(kind)`, `f"assert_sizes_{kind}"`, `"_" + mode`): every
        method of the object's class, its bases and (when the compiled class is not known)
        its subclasses whose name fits. A name with no constant part fetches nothing known."""
        pattern = getattr_self_pattern(expr, caller.index)
        owner = caller.owner
        if pattern is None or owner is None:
            return []
        lookup = caller.receiver or owner
        wanted = pattern.fullmatch
        names: list[str] = []
        for cls in self._mro(lookup):
            names.extend(n for n in cls.methods if wanted(n) and n not in names)
        targets: list[FunctionInfo] = []
        for name in names:
            method = self.method_of(lookup, name)
            if method is not None and not method.is_property and not method.is_disabled:
                method = self.bind(method, caller.receiver)
                if method not in targets:
                    targets.append(method)
        if caller.receiver is None:
            self._add_subclass_overrides(owner, wanted, targets)
        return targets

    def named_method_values(self, func: cst.BaseExpression, caller: FunctionInfo) -> list[FunctionInfo]:
        """`getattr(self, pattern)(...)`, or a name bound in the caller to that or to
        `self.m(...)` whose every `return` is one (pytorch-metric-learning's
        `reduction_func = self.get_reduction_func(kind)`)."""
        if isinstance(func, cst.Call):
            return self.named_method_targets(func, caller)
        if not isinstance(func, cst.Name) or caller.node is None:
            return []
        bound = _function_binding(caller.node, func.value)
        if bound is None or bound[0] != "value":
            return []
        values = rebound_values(caller.node, func.value)
        if values:
            # `decoding_method = custom_generate` in one branch, `getattr(type(self),
            # MODES[mode])` in the other (transformers' generate): what the fetches may call
            targets: list[FunctionInfo] = []
            for value in values:
                targets.extend(f for f in self.named_method_targets(value, caller) if f not in targets)
            return targets
        if not isinstance(bound[1], cst.Call):
            return []
        value = bound[1]
        found = self.named_method_targets(value, caller)
        if found or not (isinstance(value.func, cst.Attribute) and isinstance(value.func.value, cst.Name)
                         and value.func.value.value == "self"):
            return found
        getter = self.resolve_call(value, caller)
        if getter is None or getter.owner is None:
            return []
        returns = returned_values(getter.node)
        targets: list[FunctionInfo] = []
        for returned in returns:
            fetched = self.named_method_targets(returned, getter)
            if not fetched:
                return []
            targets.extend(f for f in fetched if f not in targets)
        return targets

    def autograd_function_class(self, expr: cst.BaseExpression, caller: FunctionInfo) -> ClassInfo | None:
        """The torch.autograd.Function subclass `expr` names (`F` in `F.apply(...)`), or None."""
        if not isinstance(expr, (cst.Name, cst.Attribute)):
            return None
        cls = self._class_of_name(expr, caller.index, caller)
        return cls if cls is not None and cls.is_autograd_function else None

    def _candidate_targets(self, call: cst.Call, caller: FunctionInfo) -> list[FunctionInfo] | None:
        """`miner(x)` / `flow.log_prob(x)` on a name a factory parameter fills with different
        classes at the file's call sites: what each of those classes runs (None: not such a
        call)."""
        func = call.func
        name = func if isinstance(func, cst.Name) else func.value if isinstance(func, cst.Attribute) else None
        if not isinstance(name, cst.Name) or name.value == "self":
            return None
        key = (id(call), id(caller))
        cache = self._candidates
        if key not in cache:
            targets = []
            for cls in self.candidate_classes(name, caller, caller.index):
                method = (self.call_method_of(cls) if isinstance(func, cst.Name)
                          else self.bind(self.method_of(cls, func.attr.value), cls))
                if method is not None and method not in targets and not method.is_property:
                    targets.append(method)
            if not targets:  # `r.pop_term()` under `isinstance(r, Regularizer)` (tcl/narrowing.py)
                for cls in self.narrowed_classes(call, name, caller):
                    method = (self.call_method_of(cls) if isinstance(func, cst.Name)
                              else self.bind(self.method_of(cls, func.attr.value), cls))
                    if method is not None and method not in targets and not method.is_property:
                        targets.append(method)
            if not targets and isinstance(func, cst.Attribute) and self._unknown_module_element(name, caller):
                targets = self._recorded_submodule_methods(func.attr.value)
            cache[key] = targets
        return cache[key]

    def narrowed_classes(self, call: cst.Call, name: cst.Name, caller: FunctionInfo) -> list[ClassInfo]:
        """The classes an isinstance() test in front of `call` proves `name` holds."""
        if caller.node is None:
            return []
        memo = self._narrowed
        if id(caller.node) not in memo:
            memo[id(caller.node)] = (caller.node, narrowed_calls(caller.node))
        classes = []
        for expr in memo[id(caller.node)][1].get(id(call), {}).get(name.value, []):
            cls = self._class_of_name(expr, caller.index, caller)
            if cls is not None and cls not in classes:
                classes.append(cls)
        return classes

    def _unknown_module_element(self, name: cst.Name, caller: FunctionInfo) -> bool:
        """`layer` in `for layer in self.layers:` where nothing in the checked code says what
        `self.layers` holds (`nn.ModuleList(layers)`, the list a constructor argument)."""
        bound = _function_binding(caller.node, name.value) if caller.node is not None else None
        if bound is None or bound[0] != "element":
            return False
        container = bound[1]
        return (isinstance(container, cst.Attribute) and isinstance(container.value, cst.Name)
                and container.value.value == "self" and not self.element_classes(container, caller, caller.index))

    def _recorded_submodule_methods(self, name: str) -> list[FunctionInfo]:
        """`layer.reset_cache()` on such an element: the method of every submodule class a
        recorded entry's module held (EntrySpec.submodule_of, `pytest --tcl-record`) that
        defines it. Forwards are left out: each recorded submodule's forward is an entry."""
        if name in ("forward", "__call__") or name.startswith("__"):
            return []
        targets = []
        for spec in getattr(self.analyzer, "entry_specs", ()):
            if not spec.submodule_of:
                continue
            cls = self.project.find(f"{spec.module}.{spec.qualname}")
            if not isinstance(cls, ClassInfo):
                continue
            method = self.bind(self.method_of(cls, name), cls)
            if method is not None and method not in targets and not method.is_property and not method.is_disabled:
                targets.append(method)
        return targets

    def _bound_method_names(self, owner, attr: str) -> list[str]:
        """Method names `self.<attr>` is assigned from (`self.m`, `self.a if c else self.b`),
        in the class or its bases."""
        value, cls, seen = None, owner, set()
        while cls is not None and id(cls) not in seen and value is None:
            seen.add(id(cls))
            value = cls.attributes.get(attr)
            cls = next((self.class_named(b, cls.index) for b in cls.bases if self.class_named(b, cls.index)), None)
        names, stack = [], [value] if value is not None else []
        while stack:
            node = stack.pop()
            if isinstance(node, cst.IfExp):
                stack.extend([node.body, node.orelse])
            elif isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
                names.append(node.attr.value)
        return names

    def _class_here(self, module: str, name: str):
        """A class of a file already indexed in this analysis (its own index, not a second copy)."""
        for index in [self.index, *self.foreign_indexes()]:
            if (index.name or (module_name_of(index.path) if index.path else "")) == module:
                return index.classes.get(name)
        return None

    def _subclass_names(self, cls) -> list[str]:
        index = cls.index
        module = index.name or (module_name_of(index.path) if index.path else "")
        names = list(self.project.subclasses.get(f"{module}.{cls.name}", ()))
        for local in index.classes.values():  # local subclasses' own subclasses elsewhere
            if cls.name in local.bases and local is not cls:
                names.extend(self.project.subclasses.get(f"{module}.{local.name}", ()))
        return names

    @staticmethod
    def _overrides_ok(method, cls, name: str) -> bool:
        return (not method.is_property and not method.is_disabled and not method.is_compiled
                and not (name == "forward" and cls.is_module))

    def _table_items(self, table: cst.BaseExpression, index: ModuleIndex) -> list[tuple[str | None, FunctionInfo]]:
        """(string key or None, function) of each entry of the module-level table `table` that
        names a function the analysis can read, in the table's order."""
        if not isinstance(table, cst.Name):
            return []
        key = (id(index), table.value)
        if key in self.tables:
            return self.tables[key]
        self.tables[key] = []  # a table naming itself cannot loop
        owner, entries = self.table_entries(table, index)
        items = []
        for name, value in entries:
            function = owner.functions.get(value.value) if isinstance(value, cst.Name) else None
            function = function or self._function(owner.qualify(value))
            if function is not None:
                items.append((name, function))
        self.tables[key] = items
        return items

    def _resolve_uncached(self, call: cst.Call, caller: FunctionInfo) -> FunctionInfo | None:
        callee = self._resolve(call, caller)
        if callee is None or callee.index is caller.index or callee.index is self.index:
            return callee
        if callee.index is not None and callee.index.installed:
            return callee  # an installed package is never checked itself: followed from here
        # Another checked file's entry point (a submodule's forward, a compiled function) is
        # analysed when that file is checked; only its plain helpers are followed from here,
        # and the entries of project files this run does not check (EntryPoints).
        if callee.is_disabled:
            return callee
        return None if self._entry_of_other_file(callee) else callee

    def _resolve(self, call: cst.Call, caller: FunctionInfo) -> FunctionInfo | None:
        index = caller.index
        func = call.func
        if isinstance(func, cst.Name):
            local = index.functions.get(func.value)
            if local is not None:
                return local
            return (self._function(index.qualify(func)) or self._module_init(func, index)
                    or self.instance_call_target(call, caller, index) or self.function_value(func, caller, index))
        if not isinstance(func, cst.Attribute):
            return self.instance_call_target(call, caller, index)
        attr = func.attr.value
        receiver = func.value
        owner = caller.owner
        if attr == "apply":  # `F.apply(x, k)`: an autograd.Function's forward(ctx, x, k)
            function_class = self.autograd_function_class(func.value, caller)
            if function_class is not None:
                return self.method_of(function_class, "forward")
        if isinstance(receiver, cst.Name):
            if receiver.value == "self" and owner is not None:
                lookup = caller.receiver or owner
                method = self.method_of(lookup, attr)
                if method is not None:
                    # `self.prop(...)` calls what the getter returns, not the getter.
                    return None if method.is_property else self.bind(method, caller.receiver)
                found = ((self._submodule_forward(caller.receiver, attr) if caller.receiver is not None else None)
                         or self._submodule_forward(owner, attr))
                if found is None:  # `self.reducer(x)` with `self.reducer = r if r else self.default()`
                    cls = self.instance_class(func, caller, index)
                    found = self.call_method_of(cls) if cls is not None else None
                return found
            cls = index.classes.get(receiver.value)
            if cls is not None:
                return self.method_of(cls, attr)
        elif (isinstance(receiver, cst.Attribute) and isinstance(receiver.value, cst.Name)
              and receiver.value.value == "self" and owner is not None):
            # `self.encoder.encode(x)` with `self.encoder = Encoder(...)`
            return self.instance_call_target(call, caller, index)
        if (
            isinstance(receiver, cst.Call)
            and isinstance(receiver.func, cst.Name)
            and receiver.func.value == "super"
            and owner is not None
        ):
            for base in owner.bases:
                method = self.method_of(self.class_named(base, owner.index), attr)
                if method is not None:
                    return self.bind(method, caller.receiver)
            if attr == "__call__" and owner.is_module:
                # `super().__call__(...)` reaching torch's Module.__call__ runs forward
                return self.bind(self.method_of(caller.receiver or owner, "forward"), caller.receiver)
            return None
        return self._function(index.qualify(func)) or self.instance_call_target(call, caller, index)

    def _module_init(self, func: cst.Name, index: ModuleIndex) -> FunctionInfo | None:
        """`criterion = ImageLoss(...)` in traced code: Dynamo traces the module's __init__."""
        cls = index.classes.get(func.value) or self.class_named(index.qualify(func) or "", index)
        if cls is None or not cls.is_module:
            return None
        return self.method_of(cls, "__init__")

    def _function(self, qualname: str | None) -> FunctionInfo | None:
        if not qualname or qualname.startswith(("torch.", "builtins.")):
            return None
        found = self.project.find(qualname)
        if isinstance(found, FunctionInfo):
            return found
        return None

    def bind(self, method: FunctionInfo | None, receiver: ClassInfo | None) -> FunctionInfo | None:
        """`method` as run on an instance of exactly `receiver` (its owner or a subclass): one
        copy per (method, receiver), so the walk looks `self.*` up in the receiver first and
        no other subclass's override is taken for `self.m()`."""
        if method is None or receiver is None or method.owner is None or method.receiver is receiver:
            return method
        copies = self._bound_methods
        key = (id(method.node), id(receiver))
        if key not in copies:
            copies[key] = self.made_once(method, ("bound", id(method), id(receiver.node)), (method, receiver.node),
                                         lambda: dataclasses.replace(method, receiver=receiver))
        return copies[key]

    def _submodule_forward(self, owner: ClassInfo, attr: str) -> FunctionInfo | None:
        value = owner.attributes.get(attr)
        if isinstance(value, cst.Call):
            cls = self.class_named(owner.index.qualify(value.func) or "", owner.index)
            if cls is not None and cls.is_module:
                # A `__call__` a base overrides (pyro's PyroModule) runs first, as Dynamo traces it
                called = self.method_of(cls, "__call__")
                return self.bind(called, cls) if called is not None else self.method_of(cls, "forward")
        return None


def getattr_self_pattern(expr: cst.BaseExpression, index=None) -> "re.Pattern[str] | None":
    """`getattr(self, NAME)` (or of `type(self)` / `self.__class__`) -> a regex of the
    attribute names NAME may spell: a string literal exactly, `"a_{}".format(x)` / `f"a_{x}"` /
    `"a_" + x` with every unknown part an identifier fragment, or with `index` (the caller's
    module) one of the string values of a module-level dict display it looks up
    (`getattr(type(self), GENERATION_MODES_MAPPING[mode])`); None when NAME has no constant
    part or the call is not getattr on self."""
    if not (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "getattr"
            and len(expr.args) == 2 and _is_self_or_its_class(expr.args[0].value)):
        return None
    name = expr.args[1].value
    if index is not None:
        values = _table_strings(name, index)
        if values:
            return re.compile("|".join(re.escape(v) for v in sorted(values)))
    parts = _name_parts(name)
    if parts is None or not any(p for p in parts if p is not None):
        return None
    return re.compile("".join(r"\w+" if p is None else re.escape(p) for p in parts))


def _is_self_or_its_class(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.Name):
        return node.value == "self"
    if (isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "type"
            and len(node.args) == 1):
        return _is_self_or_its_class(node.args[0].value)
    return (isinstance(node, cst.Attribute) and node.attr.value == "__class__"
            and isinstance(node.value, cst.Name) and node.value.value == "self")


def _table_strings(node: cst.BaseExpression, index) -> set[str]:
    """`TABLE[key]` / `TABLE.get(key)` of a module-level dict display: the identifiers among
    its string values (a value that is not a string literal: nothing is known)."""
    if isinstance(node, cst.Subscript) and len(node.slice) == 1:
        table = node.value
    elif (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "get"
          and len(node.args) == 1):
        table = node.func.value
    else:
        return set()
    if not isinstance(table, cst.Name):
        return set()
    display = module_binding(index, table.value)
    if not isinstance(display, cst.Dict):
        return set()
    found = set()
    for element in display.elements:
        value = element.value if isinstance(element, cst.DictElement) else None
        text = value.evaluated_value if isinstance(value, cst.SimpleString) else None
        if not isinstance(text, str):
            return set()
        if text.isidentifier():
            found.add(text)
    return found


def _name_parts(node: cst.BaseExpression) -> list[str | None] | None:
    """The constant pieces of a string expression, None for each unknown piece."""
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return [value] if isinstance(value, str) else None
    if isinstance(node, cst.FormattedString):
        parts: list[str | None] = []
        for part in node.parts:
            parts.append(part.value if isinstance(part, cst.FormattedStringText) else None)
        return parts
    if (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "format"
            and isinstance(node.func.value, cst.SimpleString)):
        template = node.func.value.evaluated_value
        if not isinstance(template, str):
            return None
        pieces = re.split(r"\{[^{}]*\}", template)
        parts = []
        for i, piece in enumerate(pieces):
            if i:
                parts.append(None)
            parts.append(piece)
        return parts
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
        left, right = _name_parts(node.left), _name_parts(node.right)
        return (left or [None]) + (right or [None])
    return [None]


def _returned_tables(getter: FunctionInfo) -> list[tuple[cst.BaseExpression, cst.BaseExpression | None]]:
    """`return TABLE[key]` / `return TABLE.get(key)` in a property getter: (TABLE, key)."""
    tables = []
    for value in returned_values(getter.node):  # not those of nested functions
        if isinstance(value, cst.Subscript):
            index = value.slice[0].slice if len(value.slice) == 1 else None
            tables.append((value.value, index.value if isinstance(index, cst.Index) else None))
        elif (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
              and value.func.attr.value == "get"):
            tables.append((value.func.value, value.args[0].value if value.args else None))
    return tables


def _key_read(key: cst.BaseExpression | None, getter: FunctionInfo) -> tuple[str | None, str | None]:
    """(the attribute of `self` the table key reads, the one string the getter falls back to):
    `self.loss_type`, or a local the getter binds only to it or `getattr(self, "loss_type",
    ...)` and to string constants (`loss_type = "ForCausalLM"` when the attribute is None or not
    a key). (None, None) when the key is anything else."""
    def read(expr) -> str | None:
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
            return expr.attr.value
        if (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "getattr"
                and len(expr.args) >= 2 and isinstance(expr.args[0].value, cst.Name)
                and expr.args[0].value.value == "self" and isinstance(expr.args[1].value, cst.SimpleString)):
            return expr.args[1].value.evaluated_value
        return None

    if not isinstance(key, cst.Name):
        return read(key), None
    attrs, constants = set(), set()
    for value in assigned_values(getter.node, key.value):
        attr = read(value)
        if attr is not None:
            attrs.add(attr)
        elif isinstance(value, cst.SimpleString):
            constants.add(value.evaluated_value)
        elif not isinstance(value, cst.Name):
            return None, None
    return (attrs.pop() if len(attrs) == 1 else None), (constants.pop() if len(constants) == 1 else None)


_CLASS_NAMED: dict[int, tuple] = {}  # class node -> its class-named attributes (node_memo.per_node)


def class_named_attributes(owner: ClassInfo) -> frozenset[str]:
    """The `self` attributes a method of `owner` assigns while reading the object's class name
    (`self.__class__.__name__`, `type(self).__name__`): transformers' PreTrainedModel sets
    `self.loss_type` from the part of the class name LOSS_MAPPING knows. Once per class node."""

    class Reads(cst.CSTVisitor):
        def __init__(self) -> None:
            self.names_class = False
            self.assigned: set[str] = set()

        def visit_Attribute(self, node: cst.Attribute) -> None:
            if node.attr.value == "__name__":
                inner = node.value
                if (isinstance(inner, cst.Attribute) and inner.attr.value == "__class__") or (
                        isinstance(inner, cst.Call) and isinstance(inner.func, cst.Name) and inner.func.value == "type"):
                    self.names_class = True

        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            target = node.target
            if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self":
                self.assigned.add(target.attr.value)

    def compute() -> frozenset[str]:
        found: set[str] = set()
        for method in owner.methods.values():
            reads = Reads()
            syntax_walk.run(reads, method.node)
            if reads.names_class:
                found |= reads.assigned
        return frozenset(found)

    return per_node(_CLASS_NAMED, owner.node, compute)


def _entry_named_in(class_name: str, items: list[tuple[str | None, FunctionInfo]], fallback: str | None = None):
    """The table entry a key taken from `class_name` selects: the key equal to the name, else the
    key found first in it (leftmost; in table order at one place, as `re.findall` over the keys
    does), else the getter's `fallback` key; None when none of those is in the table."""
    best = None
    for order, (key, function) in enumerate(items):
        if not key:
            continue
        if key == class_name:
            return key, function
        where = class_name.find(key)
        if where >= 0 and (best is None or (where, order) < best[0]):
            best = ((where, order), (key, function))
    if best is not None:
        return best[1]
    return next(((key, function) for key, function in items if fallback is not None and key == fallback), None)
