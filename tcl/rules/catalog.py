"""The rest of the graph-break catalog: RNG state, hooks, sorting by tensors, ContextVars and
torch._check messages. Every construct here was measured on torch 2.13 (tcl.oracle) before it
became a rule; look-alikes the compiler traces are the VALID examples.
"""

from __future__ import annotations

import libcst as cst

from .. import syntax_walk
from ..dataflow import META_ATTRIBUTES, META_METHODS, TORCH_META_FUNCTIONS, Kind, constant_kind, is_tensor
from ..names import dotted
from .base import Example, Rule

# -- where a name's value comes from ----------------------------------------------------------
# Receivers such as a module-level `GEN = torch.Generator()` are only recognisable by the value
# assigned to them; these scans answer that without the walker's help.

_CACHE_LIMIT = 8  # the file being checked, and a few it calls into: trees are large


class _BoundedCache:
    """id(node) -> (node, value): the node is kept so a recycled id cannot return stale data."""

    def __init__(self) -> None:
        self._items: dict[int, tuple[object, object]] = {}

    def get(self, node, build):
        hit = self._items.get(id(node))
        if hit is not None and hit[0] is node:
            return hit[1]
        value = build(node)
        if len(self._items) >= _CACHE_LIMIT:
            self._items.pop(next(iter(self._items)))
        self._items[id(node)] = (node, value)
        return value


def _assignments(body: cst.CSTNode, top_level_only: bool) -> dict[str, list[cst.BaseExpression]]:
    """name -> every value assigned to it with `name = value`."""
    found: dict[str, list[cst.BaseExpression]] = {}

    def record(small) -> None:
        if isinstance(small, cst.Assign):
            targets = [t.target for t in small.targets]
        elif isinstance(small, cst.AnnAssign) and small.value is not None:
            targets = [small.target]
        else:
            return
        for target in targets:
            if isinstance(target, cst.Name):
                found.setdefault(target.value, []).append(small.value)

    if top_level_only:
        for stmt in getattr(body, "body", ()):
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    record(small)
        return found

    class Collector(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            record(node)

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            record(node)

    syntax_walk.run(Collector(), body)
    return found


_MODULE_ASSIGNMENTS = _BoundedCache()
_LOCAL_ASSIGNMENTS = _BoundedCache()


def _values_of(node: cst.BaseExpression, ctx) -> list[cst.BaseExpression]:
    """What a receiver may hold: the values assigned to a local or module-level name, or to
    `self.<attr>` in the class. Empty when unknown (parameters, imports, anything else)."""
    if isinstance(node, cst.Name):
        name = node.value
        if ctx.is_parameter(name):
            return []
        function = ctx.function
        if ctx.is_intermediate(name):
            local = _LOCAL_ASSIGNMENTS.get(function.node, lambda n: _assignments(n.body, False))
            return local.get(name, [])
        module = function.index.module if function.index is not None else None
        if module is None:
            return []
        return _MODULE_ASSIGNMENTS.get(module, lambda m: _assignments(m, True)).get(name, [])
    if (
        isinstance(node, cst.Attribute)
        and isinstance(node.value, cst.Name)
        and node.value.value == "self"
        and ctx.function.owner is not None
    ):
        value = ctx.function.owner.attributes.get(node.attr.value)
        return [value] if value is not None else []
    return []


def holds(node: cst.BaseExpression, ctx, is_value) -> bool:
    values = _values_of(node, ctx)
    return bool(values) and all(is_value(value, ctx) for value in values)


def _is_imported(node: cst.BaseExpression, ctx) -> bool:
    """`torch.cuda.manual_seed` and friends: the receiver is a module, not an object."""
    name = dotted(node)
    index = ctx.function.index
    return name is not None and index is not None and name.split(".")[0] in index.imports.aliases


def _is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


# -- TCL412 ------------------------------------------------------------------------------------

GENERATOR_METHODS = frozenset({"manual_seed", "seed", "initial_seed", "get_state", "set_state"})
RNG_STATE_FUNCTIONS = frozenset({
    "torch.get_rng_state", "torch.set_rng_state", "torch.random.get_rng_state",
    "torch.random.set_rng_state", "torch.random.manual_seed",
})
INITIAL_SEED_FUNCTIONS = frozenset({"torch.initial_seed", "torch.random.initial_seed"})


def _is_generator_ctor(value: cst.BaseExpression, ctx) -> bool:
    """`torch.Generator(...)`, also seeded in the same expression: `.manual_seed(0)` returns it."""
    if not isinstance(value, cst.Call):
        return False
    func = value.func
    if isinstance(func, cst.Attribute) and func.attr.value == "manual_seed":
        return _is_generator_ctor(func.value, ctx)
    return ctx.qualname(func) == "torch.Generator"


def _is_generator(node: cst.BaseExpression, ctx) -> bool:
    if ctx.qualname(node) == "torch.default_generator":
        return True
    return holds(node, ctx, _is_generator_ctor)


class RngStateInCompiledRegion(Rule):
    code = "TCL412"
    name = "rng-state-in-compiled-region"
    message = "{what} inside a compiled region breaks the graph"
    fix = (
        "create and seed torch.Generator objects, and save/restore RNG state, outside the "
        "compiled region; inside it draw from the global RNG without generator= "
        "(torch.manual_seed(s) before the compiled call), or pass pre-drawn noise in as an argument"
    )
    gb = (((2, 0), "GB7650"),)
    alt_gb = ("GB0363", "GB0055", "GB0007", "GB0208")
    rationale = (
        "Generator objects are opaque to Dynamo, measured on torch 2.13: creating one ends the "
        "graph (GB0363), each of its methods (manual_seed, seed, initial_seed, get_state, "
        "set_state) is a stateful RNG operation it refuses to trace (GB7650), and passing one "
        "as `generator=` to a random op breaks at that op (GB0055). torch.get_rng_state/"
        "set_rng_state are skipped functions (GB0007) and torch.initial_seed() returns a "
        "Python int from a torch op (GB0208). Random ops without a generator "
        "(torch.rand_like, torch.randn(..., generator=None)) are traced."
    )
    VALID = [Example('''
import torch

class Schedule:
    def __init__(self):
        self.step = 3

    def get_state(self):
        return self.step

SCHEDULE = Schedule()

@torch.compile
def fn(x):
    noise = torch.randn(4, 4, generator=None)
    return x * SCHEDULE.get_state() + noise * 0
''')]
    INVALID = [
        Example('''
import torch

@torch.compile
def fn(x):
    g = torch.Generator()  # BREAK
    g.manual_seed(0)  # BREAK
    return x + torch.randn(4, 4, generator=g)  # BREAK
'''),
        Example('''
import torch
from torch import nn

class Noisy(nn.Module):
    def __init__(self):
        super().__init__()
        self.gen = torch.Generator()

    def forward(self, x):
        self.gen.manual_seed(1)  # BREAK
        return x + torch.rand(4, 4, generator=self.gen)  # BREAK
''', entry="Noisy"),
        Example('''
import torch

@torch.compile
def fn(x):
    state = torch.get_rng_state()  # BREAK
    y = x + torch.rand_like(x)
    torch.set_rng_state(state)  # BREAK
    return y
'''),
        Example('''
import torch

GEN = torch.Generator().manual_seed(0)

@torch.compile
def fn(x):
    y = x * 2
    state = GEN.get_state()  # BREAK
    seed = torch.initial_seed()  # BREAK
    return y + seed, state
'''),
    ]

    def visit_Call(self, node: cst.Call, ctx) -> None:
        name = ctx.qualname(node.func) or ""
        if name == "torch.Generator":
            ctx.report(self, node, self.message.format(what="creating a torch.Generator"), gb="GB0363")
            return
        if name in RNG_STATE_FUNCTIONS:
            ctx.report(self, node, self.message.format(what=f"{name}()"), gb="GB0007")
            return
        if name in INITIAL_SEED_FUNCTIONS:
            ctx.report(self, node, self.message.format(what=f"{name}()"), gb="GB0208")
            return
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in GENERATOR_METHODS:
            receiver = func.value
            if _is_generator_ctor(receiver, ctx):
                return  # the constructor is reported, and on the same line
            method = func.attr.value
            if _is_generator(receiver, ctx) or (method == "manual_seed" and self._other_seedable(receiver, ctx)):
                ctx.report(self, node, self.message.format(what=f"torch.Generator.{method}()"))
                return
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value == "generator" and self._random_op(node, ctx):
                value = arg.value
                if _is_generator_ctor(value, ctx) or _is_generator(value, ctx):
                    ctx.report(self, node, self.message.format(what="a random op with generator="), gb="GB0055")

    @staticmethod
    def _other_seedable(receiver: cst.BaseExpression, ctx) -> bool:
        """`.manual_seed()` exists on torch.Generator only (modules' functions are TCL106's):
        an object receiver of unknown origin is a generator in practice."""
        if _is_imported(receiver, ctx):
            return False
        kind = ctx.kind(receiver)
        return not is_tensor(kind) and kind not in (Kind.META, Kind.MODULE)

    @staticmethod
    def _random_op(node: cst.Call, ctx) -> bool:
        func = node.func
        if (ctx.qualname(func) or "").startswith("torch."):
            return True
        return isinstance(func, cst.Attribute) and is_tensor(ctx.kind(func.value))


# -- TCL413 ------------------------------------------------------------------------------------

MODULE_HOOK_METHODS = frozenset({
    "register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook",
    "register_full_backward_pre_hook", "register_backward_hook", "register_state_dict_pre_hook",
    "register_state_dict_post_hook", "register_load_state_dict_pre_hook",
    "register_load_state_dict_post_hook", "_register_state_dict_hook",
    "_register_load_state_dict_pre_hook",
})
GLOBAL_HOOK_PREFIXES = ("torch.nn.modules.module.register_module_", "torch.nn.modules.register_module_")


class HookRegisteredInCompiledRegion(Rule):
    code = "TCL413"
    name = "hook-registered-in-compiled-region"
    message = "{what} inside a compiled region breaks the graph"
    fix = (
        "register module hooks once, outside the compiled region (in __init__ or before "
        "torch.compile), and switch them with a Python flag; instead of retain_grad(), return "
        "the intermediate from the compiled function or use t.register_hook(...), which is traced"
    )
    gb = (((2, 0), "GB0467"),)
    alt_gb = ("GB0013", "GB0108")
    rationale = (
        "Measured on torch 2.13: registering an nn.Module hook (forward, forward-pre, backward, "
        "state-dict; also the global register_module_*_hook functions) creates a "
        "RemovableHandle Dynamo cannot build (GB0467, every mode), and removing it again breaks "
        "too (GB0013; Dynamo then runs the rest of the function eagerly). A backward hook also "
        "breaks where the module is called (GB0083). Tensor.retain_grad() does not work with "
        "AOTDispatcher (GB0108) and sends the whole function to eager. Tensor.register_hook and "
        "register_post_accumulate_grad_hook are traced."
    )
    VALID = [Example('''
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.lin.register_forward_hook(lambda m, i, o: o * 2)

    def forward(self, x):
        y = self.lin(x)
        y.register_hook(lambda g: g * 0.5)
        return y
''', entry="Net")]
    INVALID = [
        Example('''
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        y = x * 2
        self.lin.register_forward_hook(lambda m, i, o: o * 2)  # BREAK
        return self.lin(y)
''', entry="Net"),
        Example('''
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        y = x * 2
        handle = self.lin.register_forward_hook(lambda m, i, o: o * 2)  # BREAK
        out = self.lin(y)
        handle.remove()  # BREAK
        return out
''', entry="Net"),
        Example('''
import torch

@torch.compile
def fn(x):
    y = x * 2
    y.retain_grad()  # BREAK
    return y.sum()
''', args="torch.randn(4, 4, requires_grad=True)"),
    ]

    def visit_Call(self, node: cst.Call, ctx) -> None:
        name = ctx.qualname(node.func) or ""
        if name.startswith(GLOBAL_HOOK_PREFIXES) and name.endswith("hook"):
            ctx.report(self, node, self.message.format(what=f"{name}()"))
            return
        func = node.func
        if not isinstance(func, cst.Attribute):
            return
        method = func.attr.value
        kind = ctx.kind(func.value)
        if method in MODULE_HOOK_METHODS and not is_tensor(kind) and kind != Kind.META and not _is_imported(func.value, ctx):
            ctx.report(self, node, self.message.format(what=f"Module.{method}()"))
        elif method == "retain_grad" and not node.args and is_tensor(kind):
            # Measured on 2.13: these two cannot resume (the rest of the frame runs eagerly);
            # registering a hook resumes after it.
            ctx.report(self, node, self.message.format(what="Tensor.retain_grad()"), gb="GB0108", resumes=False)
        elif method == "remove" and not node.args and holds(func.value, ctx, _is_module_hook_registration):
            ctx.report(self, node, self.message.format(what="removing a module hook"), gb="GB0013", resumes=False)


def _is_module_hook_registration(value: cst.BaseExpression, ctx) -> bool:
    if not isinstance(value, cst.Call):
        return False
    func = value.func
    if isinstance(func, cst.Attribute) and func.attr.value in MODULE_HOOK_METHODS:
        return True
    name = ctx.qualname(func) or ""
    return name.startswith(GLOBAL_HOOK_PREFIXES) and name.endswith("hook")


# -- TCL414 ------------------------------------------------------------------------------------

# Tensor methods that give tensor data, by name: what a sort key computes from its argument.
TENSOR_KEY_METHODS = frozenset({
    "sum", "mean", "norm", "max", "min", "amax", "amin", "abs", "prod", "std", "var", "argmax",
    "argmin", "logsumexp", "median", "nansum", "square", "pow", "exp", "log", "sigmoid",
    "count_nonzero", "float", "double", "long", "int", "to",
})
SPLIT_METHODS = frozenset({"unbind", "split", "chunk", "tensor_split", "hsplit", "vsplit"})
# Lambda-parameter value of unknown type (the element being sorted), and a Python number read
# out of tensor data.
_PARAM, _NUMBER = "param", "number"


class SortByTensor(Rule):
    code = "TCL414"
    name = "sort-by-tensor-values"
    message = "{what} breaks the graph: Dynamo sorts and compares only Python constants"
    fix = (
        "sort on the tensor side: stack the values and use torch.sort/argsort/topk/argmax "
        "(order = torch.stack([t.sum() for t in parts]).argsort()); to choose by metadata, "
        "leave key= out of min()/max(): sizes = [t.shape[0] for t in parts]; "
        "longest = parts[sizes.index(max(sizes))]"
    )
    gb = (((2, 0), "GB0207"),)
    alt_gb = ("GB0193", "GB0059", "GB0124")
    rationale = (
        "Measured on torch 2.13: sorted()/list.sort() of tensors, or with a key that returns "
        "tensor data, breaks with GB0207 (in default mode GB0124 when the key turns tensor data "
        "into a Python number with float()/int(); GB0059 for sorted() of a tensor itself); "
        "min()/max() with key= or default= breaks with GB0193 as soon as the items or the "
        "key's closure hold tensors, even when the key reads only shapes. Plain max(a, b) of "
        "tensors, max(t, 0), sorted() by shapes and min()/max() with key= over Python "
        "constants are traced."
    )
    VALID = [Example('''
import torch

@torch.compile
def fn(x, y):
    parts = [x, y[:2]]
    ordered = sorted(parts, key=lambda t: t.shape[0])
    sizes = [t.shape[0] for t in parts]
    longest = parts[sizes.index(max(sizes))]
    n = max(x.shape[0], y.shape[1], 2)
    m = max(x.sum(), y.sum())
    return ordered[0] * n + longest.sum() + max(m, 0)
''')]
    INVALID = [
        Example('''
import torch

@torch.compile
def fn(x):
    parts = [x[0], x[1], x[2]]
    ordered = sorted(parts, key=lambda t: t.sum())  # BREAK
    return torch.stack(ordered)
'''),
        Example('''
import torch

@torch.compile
def fn(x):
    ordered = sorted(x.sum(1).unbind(0))  # BREAK  # noqa: TCL506 (the batch's rows: TCL506's)
    return torch.stack(ordered)
'''),
        Example('''
import torch

@torch.compile
def fn(x):
    scores = x.sum(1)
    best = max(range(4), key=lambda i: scores[i])  # BREAK
    return x[best]
'''),
        Example('''
import torch

@torch.compile
def fn(x, y):
    parts = [x, y[:2]]
    longest = max(parts, key=lambda t: t.shape[0])  # BREAK
    i = min(range(len(parts)), key=lambda i: parts[i].shape[0])  # BREAK
    return longest * 2 + parts[i].sum()
'''),
        Example('''
import torch

@torch.compile
def fn(x):
    parts = list(x.unbind(0))  # noqa: TCL506 (the batch's rows: TCL506's)
    ordered = sorted(parts, key=lambda t: float(t.sum()))  # BREAK
    return torch.stack(ordered)
'''),
    ]

    def visit_Call(self, node: cst.Call, ctx) -> None:
        name = ctx.qualname(node.func) or ""
        func = node.func
        keywords = {arg.keyword.value: arg.value for arg in node.args if arg.keyword is not None}
        positional = [arg.value for arg in node.args if arg.keyword is None and not arg.star]
        if name == "builtins.sorted" and positional:
            self._check_sort(node, "sorted()", positional[0], keywords.get("key"), ctx)
        elif isinstance(func, cst.Attribute) and func.attr.value == "sort" and not positional:
            receiver = func.value
            if not is_tensor(ctx.kind(receiver)) and not _is_imported(receiver, ctx):
                self._check_sort(node, "list.sort()", receiver, keywords.get("key"), ctx)
        elif name in ("builtins.min", "builtins.max") and positional and ("key" in keywords or "default" in keywords):
            items = positional[0] if len(positional) == 1 else None
            tensor_items = (
                self._items(items, ctx) is not None if items is not None
                else any(is_tensor(ctx.kind(arg)) for arg in positional)
            )
            key = keywords.get("key")
            if tensor_items or (key is not None and (
                self._key(key, ctx) == Kind.TENSOR or self._closes_over_tensors(key, ctx)
            )):
                keyword = "key=" if "key" in keywords else "default="
                what = f"{name[9:]}(..., {keyword}...) with tensors in its items or its key"
                ctx.report(self, node, self.message.format(what=what), gb="GB0193")

    def _check_sort(self, node, what, items, key, ctx) -> None:
        if key is not None:
            key_kind = self._key(key, ctx)
            if key_kind == Kind.TENSOR:
                ctx.report(self, node, self.message.format(what=f"{what} with a key that returns tensor data"))
                return
            if key_kind == Kind.SCALAR:
                ctx.report(
                    self, node, self.message.format(what=f"{what} with a key that turns tensor data into a number"),
                    gb="GB0124",
                )
                return
            return  # a key of metadata sorts fine whatever the items are; an unknown key may too
        found = self._items(items, ctx)
        if found == "tensor":
            ctx.report(self, node, self.message.format(what=f"{what} of a tensor's elements"), gb="GB0059")
        elif found == "tensors":
            ctx.report(self, node, self.message.format(what=f"{what} of tensors"))

    def _items(self, items, ctx, depth: int = 0) -> str | None:
        """"tensors" (a sequence of tensors), "tensor" (iterating one tensor), or None."""
        if items is None or depth > 2:
            return None
        if isinstance(items, (cst.List, cst.Tuple)):
            elements = [el.value for el in items.elements if not isinstance(el, cst.StarredElement)]
            return "tensors" if any(is_tensor(ctx.kind(el)) for el in elements) else None
        if isinstance(items, cst.Call):
            name = ctx.qualname(items.func) or ""
            if name in ("builtins.list", "builtins.tuple") and items.args:
                return "tensors" if self._items(items.args[0].value, ctx, depth + 1) else None
            func = items.func
            split = (isinstance(func, cst.Attribute) and func.attr.value in SPLIT_METHODS
                     and is_tensor(ctx.kind(func.value)))
            if split or name in ("torch.unbind", "torch.split", "torch.chunk", "torch.tensor_split"):
                return "tensors"
        if isinstance(items, cst.Name):
            values = _values_of(items, ctx)
            if values and all(isinstance(v, (cst.List, cst.Tuple, cst.Call)) for v in values):
                if any(self._items(v, ctx, depth + 1) == "tensors" for v in values):
                    return "tensors"
        if is_tensor(ctx.kind(items)):
            return "tensor"
        return None

    def _closes_over_tensors(self, key: cst.BaseExpression, ctx) -> bool:
        """A key lambda reading tensors from the enclosing function (`lambda i: parts[i]...`)."""
        if not isinstance(key, cst.Lambda):
            return False
        return any(
            is_tensor(ctx.kind(name)) or self._items(name, ctx) == "tensors"
            for name in _free_names(key)
        )

    def _key(self, key: cst.BaseExpression, ctx) -> Kind:
        """What the key returns for one element: TENSOR, SCALAR (read out of a tensor), META."""
        if isinstance(key, cst.Lambda):
            params = key.params
            if len(params.params) != 1 or params.posonly_params or params.kwonly_params or params.star_kwarg:
                return Kind.UNKNOWN
            if isinstance(params.star_arg, cst.Param):
                return Kind.UNKNOWN
            kind = self._key_body(key.body, params.params[0].name.value, ctx)
            return {_PARAM: Kind.UNKNOWN, _NUMBER: Kind.SCALAR}.get(kind, kind)
        name = ctx.qualname(key) or ""
        if name.startswith("torch.") and name not in TORCH_META_FUNCTIONS and not name.rsplit(".", 1)[-1][:1].isupper():
            return Kind.TENSOR  # key=torch.norm
        return Kind.UNKNOWN

    def _key_body(self, expr, param: str, ctx):
        """The kind of a key lambda's body, its parameter being the element (maybe a tensor)."""
        if isinstance(expr, cst.Name):
            return _PARAM if expr.value == param else ctx.kind(expr)
        if isinstance(expr, cst.Attribute):
            base = self._key_body(expr.value, param, ctx)
            if base in (_PARAM, Kind.TENSOR, Kind.BOOL_TENSOR):
                if expr.attr.value in META_ATTRIBUTES:
                    return Kind.META
                return Kind.TENSOR if base != _PARAM else Kind.UNKNOWN
            return Kind.META if base == Kind.META else Kind.UNKNOWN
        if isinstance(expr, cst.Subscript):
            base = self._key_body(expr.value, param, ctx)
            if is_tensor(base):
                return Kind.TENSOR
            return Kind.META if base == Kind.META else Kind.UNKNOWN
        if isinstance(expr, cst.Call):
            func = expr.func
            if isinstance(func, cst.Attribute) and not _is_imported(func, ctx):
                base = self._key_body(func.value, param, ctx)
                method = func.attr.value
                if base in (_PARAM, Kind.TENSOR, Kind.BOOL_TENSOR):
                    if method in META_METHODS:
                        return Kind.META
                    if method in ("item", "tolist"):
                        return Kind.UNKNOWN  # TCL203/TCL205 report these calls themselves
                    if is_tensor(base) or method in TENSOR_KEY_METHODS:
                        return Kind.TENSOR
                return Kind.UNKNOWN
            name = ctx.qualname(func) or ""
            args = [self._key_body(arg.value, param, ctx) for arg in expr.args]
            if name in ("builtins.float", "builtins.int", "builtins.bool") and args and is_tensor(args[0]):
                return _NUMBER
            if name.startswith("torch.") and name not in TORCH_META_FUNCTIONS and any(
                a == _PARAM or is_tensor(a) for a in args
            ):
                return Kind.TENSOR
            return Kind.UNKNOWN
        if isinstance(expr, (cst.BinaryOperation, cst.Comparison)):
            sides = (
                [expr.left, expr.right] if isinstance(expr, cst.BinaryOperation)
                else [expr.left] + [c.comparator for c in expr.comparisons]
            )
            kinds = [self._key_body(side, param, ctx) for side in sides]
            if any(is_tensor(k) for k in kinds):
                return Kind.TENSOR
            if _NUMBER in kinds:
                return _NUMBER
            return Kind.META if all(k == Kind.META for k in kinds) else Kind.UNKNOWN
        if isinstance(expr, cst.UnaryOperation):
            return self._key_body(expr.expression, param, ctx)
        if constant_kind(expr):
            return Kind.META
        return Kind.UNKNOWN


# -- TCL415 ------------------------------------------------------------------------------------

CONTEXTVAR_METHODS = frozenset({"get", "set", "reset"})


def _is_contextvar_ctor(value: cst.BaseExpression, ctx) -> bool:
    return isinstance(value, cst.Call) and ctx.qualname(value.func) == "contextvars.ContextVar"


class ContextVarInCompiledRegion(Rule):
    code = "TCL415"
    name = "contextvar-in-compiled-region"
    message = "{what} inside a compiled region breaks the graph"
    fix = (
        "read the ContextVar outside the compiled region and pass the value in as an argument "
        "(fn(x, scale=SCALE.get())); set/reset it around the compiled call, not inside"
    )
    gb = (((2, 0), "GB0156"), ((2, 14), "GB6815"))
    alt_gb = ("GB0007", "GB6066")
    rationale = (
        "Measured on torch 2.13: every ContextVar method (get, set, reset) is an unsupported "
        "method call (GB0156) and contextvars.copy_context() is skipped (GB0007). Torch 2.14's "
        "graph-break registry lists ContextVar.set/reset as GB6815 and get() with a "
        "non-constant default as GB6066 (get() with a constant default is traced there); those "
        "2.14 ids come from the registry, not from a measurement."
    )
    VALID = [Example('''
import contextvars
import torch

SCALE = contextvars.ContextVar("scale", default=2.0)
SETTINGS = {"scale": 2.0}

def run(x):
    return fn(x, SCALE.get())

@torch.compile
def fn(x, scale: float = 1.0):
    return x * scale * SETTINGS.get("scale", 1.0)
''')]
    INVALID = [
        Example('''
import contextvars
import torch

SCALE = contextvars.ContextVar("scale", default=2.0)

@torch.compile
def fn(x):
    y = x * 2
    return y * SCALE.get()  # BREAK
''', versions="<2.14"),
        Example('''
import torch
from contextvars import ContextVar

MODE = ContextVar("mode", default="train")

@torch.compile
def fn(x):
    y = x * 2
    token = MODE.set("eval")  # BREAK
    MODE.reset(token)  # BREAK
    return y + 1
'''),
    ]

    def visit_Call(self, node: cst.Call, ctx) -> None:
        if ctx.qualname(node.func) == "contextvars.copy_context":
            ctx.report(self, node, self.message.format(what="contextvars.copy_context()"), gb="GB0007")
            return
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value in CONTEXTVAR_METHODS):
            return
        if not (_is_contextvar_ctor(func.value, ctx) or holds(func.value, ctx, _is_contextvar_ctor)):
            return
        method = func.attr.value
        what = self.message.format(what=f"ContextVar.{method}()")
        if method != "get" or ctx.version < (2, 14):
            ctx.report(self, node, what)
        elif node.args and not constant_kind(node.args[0].value):
            ctx.report(self, node, what, gb="GB6066")


# -- TCL416 ------------------------------------------------------------------------------------

# torch._check-style functions -> position of the message argument.
CHECK_MESSAGE_POSITION = {
    "torch._check": 1, "torch._check_index": 1, "torch._check_value": 1, "torch._check_type": 1,
    "torch._check_not_implemented": 1, "torch._check_with": 2,
}


class TorchCheckMessage(Rule):
    code = "TCL416"
    name = "torch-check-message"
    message = "torch._check(..., message) breaks the graph: {why}"
    fix = (
        "pass the message as a lambda written in the call that closes over Python values only: "
        "n = x.shape[0]; torch._check(n > 2, lambda: f\"need more than 2 rows, got {n}\"), "
        "or drop the message"
    )
    gb = (((2, 0), "GB9840"),)
    alt_gb = ("GB9158",)
    rationale = (
        "Measured on torch 2.13: Dynamo accepts a torch._check*() message only as a function "
        "defined inside the compiled region whose closure holds Python constants. A string, an "
        "f-string, None or a module-level function breaks (GB9840), and so does a lambda that "
        "closes over a tensor or a module, even to read only its shape (GB9158). "
        "torch._check(cond) without a message is traced."
    )
    VALID = [Example('''
import torch

@torch.compile
def fn(x):
    n = x.shape[0]
    torch._check(n > 2, lambda: f"need more than 2 rows, got {n}")
    torch._check(x.shape[1] == 4)
    return x * 2
''')]
    INVALID = [
        Example('''
import torch

@torch.compile
def fn(x):
    y = x * 2
    torch._check(x.shape[0] > 2, "need more than 2 rows")  # BREAK
    return y + 1
'''),
        Example('''
import torch

@torch.compile
def fn(x):
    y = x * 2
    torch._check(x.shape[0] > 2, lambda: f"bad input shape {x.shape}")  # BREAK
    return y + 1
'''),
        Example('''
import torch

def too_small():
    return "need more than 2 rows"

@torch.compile
def fn(x):
    y = x * 2
    torch._check_value(x.shape[0] > 2, too_small)  # BREAK
    return y + 1
'''),
    ]

    def visit_Call(self, node: cst.Call, ctx) -> None:
        position = CHECK_MESSAGE_POSITION.get(ctx.qualname(node.func) or "")
        if position is None:
            return
        message = next((a.value for a in node.args if a.keyword is not None and a.keyword.value == "message"), None)
        positional = [a.value for a in node.args if a.keyword is None and not a.star]
        if message is None and len(positional) > position:
            message = positional[position]
        if message is None:
            return
        if isinstance(message, cst.Lambda):
            captured = self._captured_object(message, ctx)
            if captured is not None:
                why = f"the message lambda closes over `{captured}`, which is not a Python constant"
                ctx.report(self, node, self.message.format(why=why), gb="GB9158")
        elif _is_none(message) or constant_kind(message) or isinstance(message, cst.FormattedString):
            what = "None" if _is_none(message) else "a string" if _is_string(message) else "a constant"
            why = f"the message must be a function written in the compiled region, not {what}"
            ctx.report(self, node, self.message.format(why=why))
        elif isinstance(message, cst.Name) and self._module_function(message.value, ctx):
            why = f"the message must be a function written in the compiled region, not module-level `{message.value}`"
            ctx.report(self, node, self.message.format(why=why))

    @staticmethod
    def _captured_object(message: cst.Lambda, ctx) -> str | None:
        """A free name of the lambda that holds a tensor or a module."""
        for name in _free_names(message):
            kind = ctx.kind(name)
            if is_tensor(kind) or kind == Kind.MODULE:
                return name.value
        return None

    @staticmethod
    def _module_function(name: str, ctx) -> bool:
        index = ctx.function.index
        return (
            index is not None and name in index.functions
            and not ctx.is_parameter(name) and not ctx.is_intermediate(name)
        )


def _free_names(function: cst.Lambda) -> list[cst.Name]:
    """Names a lambda reads from the enclosing scope (its closure, or globals)."""
    bound = {p.name.value for p in function.params.params}
    names: list[cst.Name] = []

    class Names(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            names.append(name)

        def visit_Attribute(self, attribute: cst.Attribute) -> bool:
            syntax_walk.run(self, attribute.value)  # `.shape` is an attribute name, not a variable
            return False

        def visit_Lambda(self, inner: cst.Lambda) -> bool:
            return False

        def visit_CompFor(self, comp: cst.CompFor) -> None:
            bound.update(n.value for n in _target_names(comp.target))

    syntax_walk.run(Names(), function.body)
    return [name for name in names if name.value not in bound]


def _is_string(node: cst.BaseExpression) -> bool:
    return isinstance(node, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString))


def _target_names(target: cst.BaseExpression) -> list[cst.Name]:
    if isinstance(target, cst.Name):
        return [target]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for el in target.elements for n in _target_names(el.value)]
    return []


# -- TCL417 ------------------------------------------------------------------------------------


class CompiledGenerator(Rule):
    code = "TCL417"
    name = "compiled-generator"
    message = (
        "torch.compile of a generator function: default mode runs {name}() eagerly without a "
        "word, fullgraph=True raises"
    )
    fix = (
        "compile the function that consumes the generator (Dynamo inlines generators it calls), "
        "or return a list or a stacked tensor instead of yielding"
    )
    gb = (((2, 0), "GB0003"),)
    rationale = (
        "Measured on torch 2.13: Dynamo does not trace a generator frame. Under fullgraph=True "
        "that is GB0003 at the function's first line (its first decorator); in default mode no graph break is logged at all, the "
        "whole function simply runs eagerly, so the slowdown never shows in TORCH_LOGS. Calling "
        "the same generator from a compiled function is traced."
    )
    VALID = [Example('''
import torch

def scaled(x):
    for i in range(3):
        yield x * i

@torch.compile
def fn(x):
    return sum(scaled(x))
''')]
    INVALID = [Example('''
import torch

@torch.compile  # BREAK
def fn(x):
    for i in range(3):
        yield x * i
''', default_breaks=False), Example('''
import torch

def chunks(x):  # BREAK
    for part in x.chunk(2):
        yield part.sum()

compiled_chunks = torch.compile(chunks)
''', entry="chunks", default_breaks=False)]

    def visit_Yield(self, node: cst.Yield, ctx) -> None:
        function = ctx.function
        compiled = function.is_compiled or function.qualname in ctx.index.compile_targets
        # One finding per walk of the function (a re-walk reports it again).
        if compiled and not ctx.inside_nested_function() and ctx is not getattr(self, "_reported_in", None):
            self._reported_in = ctx
            # Where the compiler reports it: the code object's first line, the first decorator.
            decorators = function.node.decorators
            where = decorators[0].decorator if decorators else function.node.name
            ctx.report(self, where, self.message.format(name=function.qualname))
