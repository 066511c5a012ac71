"""What torch.compile traces in one file: its entry points, and where a library finding lands.

The entry points of a file's analysis are the forwards of its nn.Module classes, the `step`
of its optimizers, its `@torch.compile` functions and methods, the targets of its
`torch.compile(...)` calls — `torch.compile(f)`, `torch.compile(self.m)`, and, resolved through
the bindings of the scope the call is in (tcl/instances.py), `torch.compile(model.generate)`,
`torch.compile(model)`, `step = torch.compile(step)` for a nested def, `model.compile()` of an
nn.Module — and the entries the
user declared or recorded for this file (tcl/entries.py). The wrappers that decorators of the
checked tree put around an entry are traced too. `anchor_of` answers the reverse question for
--follow-imports: through which call of the checked code traced code first enters the
installed package that holds a function, so a finding there is reported at the user's line;
`call_path` adds the calls inside installed code from there down to the function (a finding's
`trail`).
FileAnalysis inherits this class; it provides `index`, `analyzer`, `functions`, `callers`,
`call_nodes` and `compile_anchors`, and the call resolution of tcl/call_resolution.py.
"""

from __future__ import annotations

import os
from functools import lru_cache

import libcst as cst

from . import entries as entries_module
from .dataflow import Kind
from .entry_calls import compiled_call_literals
from .bindings import constant_index, container_elements, returned_values
from .module_index import FunctionInfo
from .params import entry_param_kinds


SEQUENTIAL = frozenset({"torch.nn.Sequential", "torch.nn.modules.container.Sequential"})
MAX_ORIGIN_STEPS = 8


def installed_package_of(qualname: str, analyzer) -> str | None:
    """The installed package `qualname` lives in, when tcl would follow it with --follow-imports
    and it is not one of the project's own modules: not torch, numpy, the packages Dynamo skips."""
    from .installed import hierarchy
    from .rules.side_effects import skipped_modules

    top = qualname.split(".")[0]
    if not top or top in skipped_modules(analyzer.version) or analyzer.project.paths.get(top) is not None:
        return None
    return top if hierarchy().find(top) is not None else None


class EntryPoints:
    def anchor_of(self, function: FunctionInfo):
        """(function of the checked code, its call node) through which traced code first enters
        the installed package that holds `function`; None when nothing checked calls it."""
        return self.call_path(function)[0]

    def call_path(self, function: FunctionInfo):
        """(anchor_of's answer, the calls inside installed code from there down to `function`):
        each a (caller FunctionInfo, call node), outermost first. Without an anchor (an
        installed function named as an entry itself) the calls start at that entry. One
        shortest path, breadth first, callers in a fixed order."""
        parent: dict[int, int] = {}  # caller -> the callee it was reached from, toward `function`
        seen, queue = {id(function)}, [id(function)]
        top = id(function)

        def hops(key: int) -> list:
            out = []
            while key != id(function):
                callee = parent[key]
                node = self.call_nodes.get((callee, key))
                if node is not None:
                    out.append((self.functions[key], node))
                key = callee
            return out

        while queue:
            key = queue.pop(0)
            if key in self.compile_anchors:  # `torch.compile(lib_obj.method)` in the checked code
                return self.compile_anchors[key], hops(key)
            callers = self.callers.get(key, ())
            if not callers and top == id(function):
                top = key  # the first entry met, where the path starts when no checked code calls in
            for caller in sorted(callers, key=lambda c: (self.functions[c].index.path if self.functions[c].index else "",
                                                         self.functions[c].qualname)):
                if caller in seen:
                    continue
                seen.add(caller)
                parent[caller] = key
                caller_info = self.functions[caller]
                if caller_info.index is not None and not caller_info.index.installed:
                    node = self.call_nodes.get((key, caller))
                    if node is not None:
                        return (caller_info.index, node, caller_info), hops(key)
                queue.append(caller)
        return None, hops(top)

    # -- what torch.compile traces ---------------------------------------------------------
    def entry_points(self) -> list[FunctionInfo]:
        index = self.index
        entries: list[FunctionInfo] = []
        declared = self.analyzer.entries_for(index.path, index.name)
        if os.path.realpath(index.path) in self.analyzer.entry_only_files:
            index.installed = True
            for spec in declared:
                found = entries_module.functions_named(self, index, spec.qualname)
                entries.extend(found if isinstance(found, list) else ())
                self.record_bindings(spec, found)
            return list(dict.fromkeys(entries))
        for cls in index.classes.values():
            if cls.is_module and "forward" in cls.methods:
                entries.append(cls.methods["forward"])
            if cls.is_optimizer and "step" in cls.methods:  # torch.compile(opt.step)
                entries.append(cls.methods["step"])
            entries.extend(m for m in cls.methods.values() if m.is_compiled and m.name != "forward")
        entries.extend(f for f in index.functions.values() if f.is_compiled)
        # entries whatever the compile calls here do with them (a forward, `@torch.compile`)
        others = {id(f) for f in entries}
        for target in index.compile_targets:
            function = self._lookup(target)
            if function is not None:
                entries.append(function)
        compiled = [(self._compiled_object(target, scope), call, top, scope, False)
                    for target, scope, call, top in index.compile_sites]
        compiled += [(self._module_compiled(target, scope), call, top, scope, True)
                     for target, scope, call, top in index.module_compile_sites]
        # `torch.compile(nn.Sequential(Encoder(), Head()))`: the container runs each element
        compiled += [(element, call, top, None, False)
                     for target, scope, call, top in index.compile_sites + index.module_compile_sites
                     for element in self._sequential_elements(target, scope)]
        for function, call, top, scope, module_compile in compiled:
            if function is None or id(function) in others or self._entry_of_other_file(function):
                continue
            if function not in entries:
                entries.append(function)
                self.compile_anchors.setdefault(id(function), (index, call, top))
            self._note_entry_calls(function, call, scope, module_compile)
        if self.analyzer.installed is None:  # installed code is not read: say so where it is compiled
            resolved = {id(call) for function, call, *_ in compiled if function is not None}
            for target, scope, call, top in index.compile_sites + index.module_compile_sites:
                if id(call) not in resolved:
                    origin = self._installed_origin(target, scope)
                    if origin is not None:
                        self.unfollowed_compiles.append((call, top, origin))
        for spec in declared:
            found = entries_module.functions_named(self, index, spec.qualname)
            if isinstance(found, list):
                entries.extend(f for f in found if not self._entry_of_other_file(f))
                for function in found:
                    self.entry_calls[id(function)] = None  # declared: called we know not how
            self.record_bindings(spec, found)
        return [f for f in dict.fromkeys(entries) if not f.is_disabled]

    def _note_entry_calls(self, function: FunctionInfo, call: cst.Call, scope, module_compile: bool) -> None:
        """Add what the calls of one compile call's result pass (tcl/entry_calls.py) to what
        `function`'s other compile calls pass; None for good once one of them cannot be read."""
        key = id(function)
        if key in self.entry_calls and self.entry_calls[key] is None:
            return
        calls, node = None, None
        if scope == ():
            node = self.index.module
        elif scope is not None:
            holder = self._scope_function(scope)  # the innermost def, not a class body
            node = holder.node if holder is not None and holder.name == scope[-1] else None
        if node is not None:
            calls = compiled_call_literals(node, call, module_compile)
        self.entry_calls[key] = None if calls is None else self.entry_calls.get(key, []) + calls

    def _compiled_object(self, target: cst.BaseExpression, scope: tuple[str, ...]) -> FunctionInfo | None:
        """`torch.compile(model.generate)` / `torch.compile(model)` / `torch.compile(step)` for
        a nested `def step`: what the call traces, through the bindings of its scope."""
        function = self._scope_function(scope)
        index = self.index
        if isinstance(target, cst.Attribute):
            if isinstance(target.value, cst.Name) and (target.value.value == "self" or target.value.value in index.classes):
                if (target.value.value == "self" and function is not None and function.owner is not None
                        and self.method_of(function.owner, target.attr.value) is None):
                    # `self.compiled = torch.compile(self.model)` after `self.model = Net()`
                    cls = self.instance_class(target, function, index)
                    return self.call_method_of(cls) if cls is not None else None
                return None  # compile_targets holds these
            cls = self.instance_class(target.value, function, index)
            method = self.bind(self.method_of(cls, target.attr.value), cls) if cls is not None else None
            if method is None and cls is None:  # `torch.compile(somelib.step)`
                return self._function(index.qualify(target))
            return method if method is not None and not method.is_property else None
        if isinstance(target, cst.Name):
            if target.value in index.functions:
                return index.functions[target.value]  # in compile_targets too
            if function is not None:
                nested = self.nested_def(function, target.value)
                if nested is not None:
                    return nested
            cls = self.instance_class(target, function, index)
            if cls is None:  # `from losses import detection_loss; torch.compile(detection_loss)`
                return self._function(index.qualify(target))
            return self.call_method_of(cls)
        if isinstance(target, cst.Call):  # torch.compile(Model(...))
            cls = self.instance_class(target, function, index)
            return self.call_method_of(cls) if cls is not None else None
        return None

    def _module_compiled(self, target: cst.BaseExpression, scope: tuple[str, ...]) -> FunctionInfo | None:
        """`model.compile()`: what nn.Module.compile traces, where `model` is a known module."""
        cls = self.instance_class(target, self._scope_function(scope), self.index)
        return self.call_method_of(cls) if cls is not None and cls.is_module else None

    def _sequential_elements(self, target: cst.BaseExpression, scope: tuple[str, ...]) -> list[FunctionInfo]:
        """The forwards of the elements of an `nn.Sequential(...)` that a compile call compiles,
        directly or through a name bound to it: Sequential.forward calls each in turn."""
        function = self._scope_function(scope)
        value, where, index = target, function, self.index
        if isinstance(target, cst.Name):
            bound = self._binding(target.value, function, index)
            if bound is None or not isinstance(bound[0], cst.Call):
                return []
            value, where, index = bound
        if not (isinstance(value, cst.Call) and index.qualify(value.func) in SEQUENTIAL):
            return []
        out = []
        for element in container_elements(value, index):
            cls = self.instance_class(element, where, index, 1)
            forward = self.call_method_of(cls) if cls is not None and cls.is_module else None
            if forward is not None and forward not in out:
                out.append(forward)
        return out

    def _installed_origin(self, target: cst.BaseExpression, scope: tuple[str, ...]) -> str | None:
        """The dotted name in an installed package that a compiled object comes from, through
        the bindings of the compile call's scope: `torch.compile(lm.generate)` after `lm =
        GPT2LMHeadModel.from_pretrained(...)` -> transformers.GPT2LMHeadModel.from_pretrained;
        None for the project's own code, torch, and what cannot be told."""
        function, index, expr = self._scope_function(scope), self.index, target
        position = None  # `tokenizer, model = load()`: the element of what `load` returns
        for _ in range(MAX_ORIGIN_STEPS):
            if isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Call):
                position, expr = constant_index(expr), expr.value
                if position is not None and position < 0:
                    position = None
            if isinstance(expr, cst.Call):
                expr = expr.func
            if isinstance(expr, (cst.Name, cst.Attribute)):
                head = expr
                while isinstance(head, cst.Attribute):
                    head = head.value
                if isinstance(head, cst.Call):  # `Model.from_pretrained(...).eval()`
                    expr = head
                    continue
                if not isinstance(head, cst.Name):
                    return None
                if head.value in index.imports.aliases:
                    qualname = index.qualify(expr) or ""
                    return qualname if installed_package_of(qualname, self.analyzer) else None
                if head is not expr:  # `lm.generate`: where `lm` comes from
                    expr = head
                    continue
                bound = self._binding(head.value, function, index)
                if bound is None:  # `model = load()`: what the file's own `load` returns
                    helper = self.function_value(head, function, index)
                    returned = _returned_at(helper, position) if helper is not None and helper.index is index else None
                    if returned is None:
                        return None
                    expr, function, position = returned, helper, None
                    continue
                if not isinstance(bound[0], cst.BaseExpression):
                    return None
                expr, function, index = bound
                continue
            return None
        return None

    def _scope_function(self, scope: tuple[str, ...]) -> FunctionInfo | None:
        """The function (method, nested def) that the names `scope` lead to, if any."""
        current: FunctionInfo | None = None
        owner = None
        for name in scope:
            if current is not None:
                nested = self.nested_def(current, name)
                if nested is None:
                    return current
                current = nested
            elif owner is not None:
                current = owner.methods.get(name)
                if current is None:
                    return None
            elif name in self.index.classes:
                owner = self.index.classes[name]
            else:
                current = self.index.functions.get(name)
                if current is None:
                    return None
        return current


    def _entry_of_other_file(self, function: FunctionInfo) -> bool:
        """A forward or compiled function of another checked file is that file's own entry:
        analysed when that file is checked, not again from here. One of a project file this
        run does not check (`tcl check train.py` compiling a model of `models/`) is traced
        from here, and its findings are reported where they are, as a whole-tree run would."""
        if function.index is self.index or function.index is None or function.index.installed:
            return False
        if not (function.is_compiled or (function.name == "forward" and function.owner is not None
                                         and function.owner.is_module)):
            return False
        checked = self.analyzer.checked
        path = _real_path(function.index.path)
        own = checked is None or path in checked
        self.other_entries[path] = not own  # the cache asks whether that still holds
        return own

    def decorator_wrappers(self, function: FunctionInfo) -> list[tuple[FunctionInfo, str]]:
        """The wrapper functions that decorators from the checked tree put around `function`
        (`@capture_outputs def forward`): torch.compile traces the wrapper, which calls it."""
        wrappers = []
        for name in function.decorators:
            if not name or name.startswith(("torch.", "builtins.", "functools.", "typing.")):
                continue
            decorator = function.index.functions.get(name) or self._function(name)
            if decorator is None:
                continue
            for node, wrapped in _returned_wrappers(decorator.node):
                wrappers.append((self.analyzer.wrapper_info(decorator, node), wrapped))
        return wrappers


def _returned_at(helper: FunctionInfo, position: int | None) -> cst.BaseExpression | None:
    """The first value `helper` returns (element `position` of a returned tuple display)."""
    for value in returned_values(helper.node):
        if position is None:
            return value
        if isinstance(value, (cst.Tuple, cst.List)) and position < len(value.elements) \
                and not isinstance(value.elements[position], cst.StarredElement):
            return value.elements[position].value
    return None


@lru_cache(maxsize=4096)
def _real_path(path: str) -> str:
    """os.path.realpath, once per path: call resolution asks for each call into another file."""
    return os.path.realpath(path)


def _returned_wrappers(decorator: cst.FunctionDef, depth: int = 0) -> list[tuple[cst.FunctionDef, str]]:
    """(wrapper, name of the decorated function inside it): nested functions a decorator
    returns that call the decorated function (its first parameter); a decorator factory's
    inner decorator is searched one level down."""
    params = list(decorator.params.posonly_params) + list(decorator.params.params)
    nested = {s.name.value: s for s in decorator.body.body if isinstance(s, cst.FunctionDef)}
    if not params or not nested or depth > 2:
        return []
    returned = set()

    class Returns(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is decorator

        def visit_Return(self, node: cst.Return) -> None:
            value = node.value.func if isinstance(node.value, cst.Call) else node.value
            if isinstance(value, cst.Name) and value.value in nested:
                returned.add(value.value)

    decorator.visit(Returns())
    func_name = params[0].name.value
    wrappers = []
    for name in sorted(returned):
        inner = nested[name]
        if _calls_name(inner, func_name):
            wrappers.append((inner, func_name))
        else:
            wrappers.extend(_returned_wrappers(inner, depth + 1))
    return wrappers


def _calls_name(function: cst.FunctionDef, name: str) -> bool:
    found = []

    class Calls(cst.CSTVisitor):
        # A call inside a nested def belongs to that def: `capture_outputs(func=None)` returns
        # `wrapped_fn(func)`, whose nested `wrapper` is the one that calls func.
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False

        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Name) and node.func.value == name:
                found.append(node)

    function.body.visit(Calls())
    return bool(found)


def wrapper_param_kinds(wrapper: FunctionInfo, wrapped: str, is_method: bool) -> dict[str, Kind]:
    """`def wrapper(self, *args, **kwargs)`: self is the module when it wraps a method; what
    passes through *args/**kwargs is unknown; the decorated function (a closure variable)
    returns what forward returns, tensor data, like calling a module."""
    kinds = entry_param_kinds(wrapper)
    kinds[wrapped] = Kind.MODULE
    params = list(wrapper.node.params.posonly_params) + list(wrapper.node.params.params)
    if is_method and params:
        kinds[params[0].name.value] = Kind.MODULE
    return kinds
