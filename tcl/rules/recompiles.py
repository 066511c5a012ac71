"""Python values that torch.compile guards on and that change between calls: recompiles (TCL502-TCL504).

TCL501, the counters compiled code moves on every call, is tcl/rules/counters.py."""

from __future__ import annotations

import libcst as cst

from .. import syntax_walk
from ..dataflow import Kind, is_tensor
from ..evidence import SCOPE_TYPES
from ..module_index import COMPILE_NAMES, is_false
from ..names import dotted
from .base import Example, Rule


class RangeOverIntArgument(Rule):
    code = "TCL502"
    name = "loop-over-int-argument"
    message = (
        "Python loop over range({arg}) with the int argument {arg}: each new value of {arg} "
        "compiles a new unrolled graph"
    )
    fix = "vectorise the loop, pass a fixed (padded) count, or make the count part of a tensor's shape"
    gb = (((2, 0), "GB0039"),)
    category = "recompile"
    on_guessed_entries = False  # demucs' svd_penalty(niters=2): a setting, not a per-call value
    rationale = (
        "Dynamo unrolls Python loops and guards on the trip count, so an int argument that "
        "varies between calls recompiles every time (it never becomes dynamic, unlike an int "
        "used only in arithmetic). Not reported in a public function tcl only guesses users "
        "compile (api-entries): there an int argument is a setting the caller keeps."
    )
    VALID = [Example('''
import torch

@torch.compile
def fn(x):
    for _ in range(3):  # a constant count (a loop over a varying size: TCL505)
        x = x * 0.5
    return x
''', calls="[(torch.randn(4, 4),), (torch.randn(4, 4),), (torch.randn(4, 4),)]")]
    INVALID = [Example('''
import torch

@torch.compile
def fn(x, steps: int):
    for _ in range(steps):  # BREAK
        x = x * 0.5
    return x
''', calls="[(torch.randn(4, 4), 1), (torch.randn(4, 4), 2), (torch.randn(4, 4), 3)]")]

    def visit_For(self, node: cst.For, ctx) -> None:
        iterable = node.iter
        if not (isinstance(iterable, cst.Call) and ctx.qualname(iterable.func) == "builtins.range"):
            return
        if not ctx.is_entry:
            return
        for arg in iterable.args:
            value = arg.value
            if isinstance(value, cst.Name) and ctx.is_parameter(value.value) and ctx.kind(value) == Kind.META:
                if ctx.literal(value) is not None:
                    continue  # every call passes the same literal (tcl/entry_calls.py): no new value
                ctx.report(self, iterable, self.message.format(arg=value.value))
                return


# -- shared by TCL503/TCL504: one look over an explicitly compiled function's body ----------
# Both rules judge the function as a whole (its arguments, how it was compiled), so they run
# once, at the body, where the walker has no loop or `with` open: a recompile is not a graph
# break and must not inherit the "inside a for loop" severity of a use deep in the body.

def _at_body(node: cst.CSTNode, ctx) -> bool:
    return node is ctx.function.node.body and ctx.is_entry


def _explicitly_compiled(ctx) -> bool:
    """`@torch.compile` or the target of a `torch.compile(f)` call, not an nn.Module.forward
    (a submodule's forward gets its arguments from the parent's traced code: no guards)."""
    function = ctx.function
    return function.is_compiled or function.qualname in ctx.index.compile_targets


def _parameters(ctx) -> list[cst.Param]:
    params = ctx.function.node.params
    positional = list(params.posonly_params) + list(params.params)
    if ctx.function.owner is not None and not ctx.function.is_staticmethod and positional:
        if positional[0].name.value in ("self", "cls"):
            positional = positional[1:]
    return positional + list(params.kwonly_params)


def live_nodes(body: cst.CSTNode, index):
    """Nodes of the body Dynamo traces, in source order: not nested functions, lambdas or
    classes (their own scopes), not branches decided false under torch.compile."""
    from ..known_values import static_truth

    stack = [body]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, cst.If):
            truth = static_truth(node.test, index)
            if truth is not None:
                live = node.body if truth else node.orelse
                if live is not None:
                    stack.append(live)
                continue
        # Declared field order (what live_nodes has always walked: its callers take the first
        # of several matches), without whitespace and punctuation, which no caller looks for.
        children = syntax_walk.field_nodes(node, syntax_walk.declared_fields(type(node)))
        stack.extend(child for child in reversed(children) if type(child) not in SCOPE_TYPES)


def _bound_names(nodes) -> set[str]:
    """Names the body assigns: a rebound parameter no longer holds the caller's argument."""
    names: set[str] = set()

    def add(target) -> None:
        if isinstance(target, cst.Name):
            names.add(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                add(element.value)
        elif isinstance(target, cst.StarredElement):
            add(target.value)

    for node in nodes:
        if isinstance(node, cst.Assign):
            for target in node.targets:
                add(target.target)
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign, cst.NamedExpr)):
            add(node.target)
        elif isinstance(node, cst.For):
            add(node.target)
        elif isinstance(node, cst.AsName):
            add(node.name)
        elif isinstance(node, cst.Del):
            add(node.target)
    return names


class DynamicFalseShapeReads(Rule):
    code = "TCL503"
    consequence_after = ": every call"
    name = "dynamic-false-with-varying-shapes"
    message = (
        "{fn} is compiled with dynamic=False and reads the size of its argument {arg} ({expr}): "
        "every call with a new shape compiles again (no automatic dynamic shapes), up to the "
        "recompile limit (8), then {fn} runs eagerly"
    )
    fix = (
        "drop dynamic=False: the default dynamic=None makes a size dynamic after it first changes "
        "(one recompile); or keep it and call torch._dynamo.mark_dynamic(x, dim) on the varying "
        "dimension before the call; or pad inputs to a few fixed-size buckets"
    )
    gb = (((2, 0), "GB0039"),)
    category = "recompile"
    rationale = (
        "dynamic=False turns off automatic dynamic shapes: Dynamo guards on every input size "
        "and compiles a new graph for each new one. Measured on torch 2.13: 3 input shapes -> "
        "3 compiles with dynamic=False, 2 with the default dynamic=None, 1 with "
        "torch._dynamo.mark_dynamic on the varying dimension (even with dynamic=False); 12 "
        "shapes -> 8 compiles, then the recompile limit and eager. Reading an argument's size "
        "(x.shape, x.size(), len(x), x.numel()), in the function or in a helper it passes the "
        "argument to, is the static sign that the function is meant for more than one shape; a "
        "dynamic=False function that never reads a size is not reported (it recompiles all the "
        "same if its callers vary the shapes), nor one in a file that calls mark_dynamic."
    )
    VALID = [
        Example('''
import torch

@torch.compile(dynamic=False)
def fn(x):
    return torch.nn.functional.gelu(x) * 2
''', calls="[(torch.randn(4, 4),), (torch.randn(4, 4),), (torch.randn(4, 4),)]"),
        Example('''
import torch

@torch.compile(dynamic=False)
def fn(x):
    b = x.shape[0]
    return x.reshape(b, -1).sum(1)

def batch(n):
    x = torch.randn(n, 4)
    torch._dynamo.mark_dynamic(x, 0)
    return x
''', calls="[(torch._dynamo.mark_dynamic(x, 0) or x,) for x in (torch.randn(n, 4) for n in (4, 5, 6))]"),
    ]
    INVALID = [
        Example('''
import torch

@torch.compile(dynamic=False)  # BREAK
def fn(x):
    b = x.shape[0]
    return x.reshape(b, -1).sum(1)
''', calls="[(torch.randn(n, 4),) for n in (4, 5, 6)]"),
        Example('''
import torch

def pool(hidden, lengths):  # BREAK
    width = min(hidden.size(1), 16)
    return hidden[:, :width].mean(1) * lengths

pool_static = torch.compile(pool, dynamic=False)
''', entry="pool", calls="[(torch.randn(2, n, 4), torch.ones(2, 1)) for n in (8, 12, 16)]"),
        Example('''
import torch

def scaled(x):
    return x / x.shape[-1]

@torch.compile(dynamic=False)  # BREAK
def fn(x):
    return scaled(x).sum(-1)
''', calls="[(torch.randn(2, n),) for n in (4, 5, 6)]"),
    ]

    def visit_IndentedBlock(self, node: cst.IndentedBlock, ctx) -> None:
        self._check(node, ctx)

    def visit_SimpleStatementSuite(self, node: cst.SimpleStatementSuite, ctx) -> None:
        self._check(node, ctx)

    def _check(self, node, ctx) -> None:
        if not _at_body(node, ctx):
            return
        where = self._dynamic_false(ctx)
        if where is None or "mark_dynamic" in (ctx.index.source or ""):
            return  # the file marks the varying dimensions itself
        nodes = list(live_nodes(node, ctx.index))
        rebound = _bound_names(nodes)
        # The parameter's own name node: kinds are memoised by node identity, so no temporaries.
        tensors = {
            p.name.value for p in _parameters(ctx)
            if p.name.value not in rebound and is_tensor(ctx.kind(p.name))
        }
        read = self._first_size_read(ctx.function, nodes, {name: name for name in tensors}, ctx.function)
        if read is None:
            # One call deep: `gradient_penalty(critic, real, fake)` reading `real.size(0)`.
            for inner in nodes:
                if isinstance(inner, cst.Call):
                    callee = ctx.resolve_call(inner)
                    passed = self._passed(inner, callee, tensors)
                    if passed:
                        helper_nodes = list(live_nodes(callee.node.body, callee.index))
                        read = self._first_size_read(callee, helper_nodes, passed, ctx.function)
                        if read is not None:
                            break
        if read is not None:
            arg, expr = read
            fn = ctx.function.qualname
            ctx.report(self, where, self.message.format(fn=fn, arg=arg, expr=expr))

    @classmethod
    def _first_size_read(cls, function, nodes, names: dict[str, str], entry) -> tuple[str, str] | None:
        """(argument, code) of the first size read in `nodes` of a name in `names` (local name
        -> the compiled function's argument), or None."""
        names = {k: v for k, v in names.items() if k not in _bound_names(nodes)}
        for inner in nodes:
            arg = cls._size_read(inner, function.index)
            if arg is not None and arg.value in names:
                expr = _snippet(inner, function.index, quote=False)
                if function is not entry:
                    expr += f" in {function.qualname}"
                return names[arg.value], expr
        return None

    @staticmethod
    def _passed(call: cst.Call, callee, tensors: set[str]) -> dict[str, str]:
        """Helper parameter -> compiled function's argument, for tensor arguments passed by name."""
        if callee is None or callee.is_disabled:
            return {}
        params = list(callee.node.params.posonly_params) + list(callee.node.params.params)
        if callee.owner is not None and not callee.is_staticmethod and params and params[0].name.value in ("self", "cls"):
            params = params[1:]
        passed = {}
        positional = [a.value for a in call.args if a.keyword is None and not a.star]
        for param, value in zip(params, positional):
            if isinstance(value, cst.Name) and value.value in tensors:
                passed[param.name.value] = value.value
        for a in call.args:
            if a.keyword is not None and isinstance(a.value, cst.Name) and a.value.value in tensors:
                passed[a.keyword.value] = a.value.value
        return passed

    @staticmethod
    def _dynamic_false(ctx) -> cst.CSTNode | None:
        """Where dynamic=False is visible in the function: its decorator, else its name (the
        `torch.compile(f, dynamic=False)` call may be anywhere in the file)."""
        for decorator in ctx.function.node.decorators:
            call = decorator.decorator
            if (
                isinstance(call, cst.Call)
                and ctx.qualname(call.func) in COMPILE_NAMES
                and any(a.keyword is not None and a.keyword.value == "dynamic" and is_false(a.value) for a in call.args)
            ):
                return call
        if ctx.function.qualname in ctx.index.dynamic_false_targets:
            return ctx.function.node.name
        return None

    @staticmethod
    def _size_read(node: cst.CSTNode, index) -> cst.Name | None:
        """`x.shape`, `x.size(...)`, `x.numel()`, `len(x)`: the argument whose size is read."""
        if isinstance(node, cst.Attribute) and node.attr.value == "shape" and isinstance(node.value, cst.Name):
            return node.value
        if isinstance(node, cst.Call):
            func = node.func
            if (
                isinstance(func, cst.Attribute)
                and func.attr.value in ("size", "numel")
                and isinstance(func.value, cst.Name)
            ):
                return func.value
            if (
                index.qualify(func) in ("builtins.len", "torch.numel")
                and len(node.args) == 1
                and isinstance(node.args[0].value, cst.Name)
            ):
                return node.args[0].value
        return None


SEQUENCE_ANNOTATIONS = frozenset({"list", "List", "Sequence", "MutableSequence", "tuple", "Tuple"})
MAPPING_ANNOTATIONS = frozenset({
    "dict", "Dict", "Mapping", "MutableMapping", "OrderedDict", "DefaultDict", "defaultdict",
})
# Builtins that iterate their argument (unrolled by Dynamo): `enumerate(xs)`, `zip(xs, ys)`, ...
ITERATING_BUILTINS = frozenset({
    "builtins.enumerate", "builtins.zip", "builtins.reversed", "builtins.sorted", "builtins.list",
    "builtins.tuple", "builtins.iter", "builtins.map", "builtins.set", "builtins.dict",
})
# ... and these when given one argument: `sum(xs)`, `max(xs)` (`max(a, b)` iterates nothing).
REDUCING_BUILTINS = frozenset({"builtins.sum", "builtins.min", "builtins.max", "builtins.any", "builtins.all"})
DICT_VIEWS = frozenset({"items", "keys", "values"})


def _container_kind(annotation: cst.Annotation | None) -> str | None:
    """"sequence" / "mapping" for a list/tuple/dict annotation (through Optional and `| None`),
    "fixed" for a fixed-arity tuple (`tuple[Tensor, Tensor]`: its length is the contract), None
    otherwise."""
    if annotation is None:
        return None

    def kind(node: cst.BaseExpression) -> str | None:
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.BitOr):
            return kind(node.left) or kind(node.right)
        head, args = node, []
        if isinstance(node, cst.Subscript):
            head = node.value
            args = [el.slice.value for el in node.slice if isinstance(el.slice, cst.Index)]
        name = (dotted(head) or "").rsplit(".", 1)[-1]
        if name in ("Optional", "Union"):
            return next((k for k in map(kind, args) if k), None)
        if name in ("tuple", "Tuple") and args and not any(isinstance(a, cst.Ellipsis) for a in args):
            return "fixed"
        if name in SEQUENCE_ANNOTATIONS:
            return "sequence"
        if name in MAPPING_ANNOTATIONS:
            return "mapping"
        return None

    return kind(annotation.annotation)


class VaryingLengthArgument(Rule):
    code = "TCL504"
    consequence_after = ": every call"
    name = "varying-length-container-argument"
    message = (
        "{use} makes Dynamo guard on the length of the argument {arg} ({what}): every call "
        "with a new length compiles again, up to the recompile limit (8), then {fn} runs eagerly"
    )
    fix = (
        "pass one tensor instead of a Python list (torch.stack, or pad to a few fixed-size "
        "buckets with a mask) and mark its varying dimension with torch._dynamo.mark_dynamic "
        "(or leave dynamic=None); keep the number of list elements / dict keys fixed; vectorise "
        "a Python loop over a tensor's rows"
    )
    gb = (((2, 0), "GB0039"),)
    category = "recompile"
    rationale = (
        "Dynamo unrolls Python iteration and guards on the length of list, tuple and dict "
        "arguments (and on the first dimension of a tensor it iterates); unlike a tensor size, "
        "a length never becomes dynamic. Measured on torch 2.13: list lengths 1, 2, 3 -> 3 "
        "compiles whether the list is iterated, len()-ed, indexed or given to torch.cat/stack "
        "(lengths 1..12 -> 8, then the recompile limit); the same with tuples and *args; dict "
        "key sets of growing size -> 3 compiles when iterated (items/keys/values) or len()-ed, "
        "1 when only read by key; iterating a tensor's rows with 3 batch sizes -> 3 compiles "
        "(len(x) alone: 2, automatic dynamic); an unused list argument: 1. Reported in functions "
        "compiled with @torch.compile or torch.compile(f), once per argument: iterating any "
        "argument, and len(), indexing, torch.cat/stack or * unpacking of one annotated "
        "list/tuple/dict or of *args. Not reported: fixed-arity tuple annotations, "
        "nn.Module.forward (a submodule's arguments come from its parent's traced code)."
    )
    VALID = [
        # the function asserts the length: any other one fails eagerly, so it cannot vary
        Example('''
import torch

@torch.compile
def fn(x, levels: list):
    assert len(levels) == 1, "single scale only"
    return x * levels[0]
''', calls="[(torch.randn(4, 4), [torch.randn(4, 4)]) for _ in range(3)]"),
        Example('''
import torch

@torch.compile
def fn(x):
    out = x
    for w in (x, x * 2, x * 3):
        out = out + w
    return out
''', calls="[(torch.randn(4, 4),), (torch.randn(4, 4),), (torch.randn(4, 4),)]"),
        Example('''
import torch

@torch.compile
def fn(x, feats: dict[str, torch.Tensor]):
    return x + feats["a"]
''', calls=(
            "[(torch.randn(4, 4), {k: torch.randn(4, 4) for k in keys})"
            " for keys in (['a'], ['a', 'b'], ['a', 'b', 'c'])]"
        )),
    ]
    INVALID = [
        Example('''
import torch

@torch.compile
def fn(x, xs: list[torch.Tensor]):
    for t in xs:  # BREAK
        x = x + t
    return x
''', calls="[(torch.randn(4, 4), [torch.randn(4, 4)] * n) for n in (1, 2, 3)]"),
        Example('''
import torch

def total(chunks):
    return torch.stack([c.sum() for c in chunks]).sum()  # BREAK

compiled_total = torch.compile(total)
''', entry="total", calls="[([torch.randn(3)] * n,) for n in (2, 3, 4)]"),
        Example('''
import torch

@torch.compile
def fn(x, feats: dict[str, torch.Tensor]):
    for name, f in feats.items():  # BREAK
        x = x + f
    return x
''', calls=(
            "[(torch.randn(4, 4), {k: torch.randn(4, 4) for k in keys})"
            " for keys in (['a'], ['a', 'b'], ['a', 'b', 'c'])]"
        )),
        Example('''
import torch

@torch.compile
def fn(x, *scales):
    return x * len(scales)  # BREAK
''', calls="[(torch.randn(4, 4),) + (1.0,) * n for n in (1, 2, 3)]"),
    ]

    def visit_IndentedBlock(self, node: cst.IndentedBlock, ctx) -> None:
        self._check(node, ctx)

    def visit_SimpleStatementSuite(self, node: cst.SimpleStatementSuite, ctx) -> None:
        self._check(node, ctx)

    def _check(self, node, ctx) -> None:
        if not (_at_body(node, ctx) and _explicitly_compiled(ctx)):
            return
        containers = {p.name.value: _container_kind(p.annotation) for p in _parameters(ctx)}
        star = ctx.function.node.params.star_arg
        if isinstance(star, cst.Param):
            containers[star.name.value] = "*args"
        nodes = list(live_nodes(node, ctx.index))
        fixed = {n for n, kind in containers.items() if kind == "fixed"} | _asserted_lengths(nodes)
        for name in _bound_names(nodes) | fixed:
            containers.pop(name, None)
        reported: set[str] = set()
        for inner in nodes:
            for where, arg, use, kind in self._uses(inner, containers, ctx):
                if arg.value in reported:
                    continue
                reported.add(arg.value)
                what = {
                    "sequence": "a list/tuple", "mapping": "a dict", "*args": "the *args tuple",
                }.get(kind or containers[arg.value], "a list's length or a tensor's first dimension")
                ctx.report(self, where, self.message.format(
                    use=_snippet(use, ctx.index), arg=arg.value, what=what, fn=ctx.function.qualname,
                ))

    def _uses(self, node: cst.CSTNode, containers: dict, ctx):
        """(node to report, argument, code to quote, what the use shows the argument is, if
        anything) for each use of an argument that guards on its length."""
        if isinstance(node, (cst.For, cst.CompFor)):
            for arg, kind in self._iterated(node.iter, containers, ctx):
                target, iterable = (_snippet(n, ctx.index, quote=False) for n in (node.target, node.iter))
                yield node.iter, arg, f"for {target} in {iterable}", kind
        elif isinstance(node, cst.Call):
            name = ctx.qualname(node.func)
            args = [a.value for a in node.args if a.keyword is None and not a.star]
            if name == "builtins.len" and len(args) == 1:
                arg = args[0]
                if isinstance(arg, cst.Name) and containers.get(arg.value):
                    yield node, arg, node, None
            elif (name or "").startswith("torch."):
                for arg in args:  # torch.cat(xs), torch.stack(xs)
                    if isinstance(arg, cst.Name) and containers.get(arg.value) in ("sequence", "*args"):
                        yield node, arg, node, None
            for a in node.args:
                # `f(*args)` in a wrapper forwards a call's own arguments: its arity is the call
                # site's, not a collection that grows. `torch.einsum(expr, *Q)` unpacks one.
                if a.star == "*" and isinstance(a.value, cst.Name) and a.value.value in containers:
                    kind = containers[a.value.value]
                    if kind in ("sequence", "mapping") or (kind is None and self._tensor_argument(a.value, ctx)):
                        yield node, a.value, node, None
        elif isinstance(node, cst.Subscript) and isinstance(node.value, cst.Name):
            if containers.get(node.value.value) in ("sequence", "*args"):
                yield node, node.value, node, None

    def _iterated(self, iterable: cst.BaseExpression, containers: dict, ctx):
        """(argument, what the use shows it is) for each argument an iterable expression runs
        over: `xs`, `d.items()`, `enumerate(xs)`, ..."""
        if isinstance(iterable, cst.Name):
            if iterable.value in containers and (
                containers[iterable.value] or self._tensor_argument(iterable, ctx)
            ):
                yield iterable, None
        elif isinstance(iterable, cst.Call):
            func = iterable.func
            args = [a.value for a in iterable.args if a.keyword is None and not a.star]
            if isinstance(func, cst.Attribute) and func.attr.value in DICT_VIEWS and not args:
                # `d.items()` says d is a mapping even where no annotation does.
                if isinstance(func.value, cst.Name) and containers.get(func.value.value, "") in ("mapping", None):
                    yield func.value, "mapping"
                return
            name = ctx.qualname(func)
            if name in ITERATING_BUILTINS or (name in REDUCING_BUILTINS and len(args) == 1):
                for arg in args:
                    yield from self._iterated(arg, containers, ctx)

    @staticmethod
    def _tensor_argument(name: cst.Name, ctx) -> bool:
        # Unannotated: a list or a tensor (the entry default), both unrolled by their length.
        # Not flags, ints or cache objects, whose kinds say they are something else.
        return is_tensor(ctx.kind(name))



def _asserted_lengths(nodes) -> set[str]:
    """Arguments whose length the function asserts to be one constant (`assert len(levels) ==
    1, "single scale only"`): any other length fails eagerly, so the length cannot vary."""
    names = set()
    for node in nodes:
        test = node.test if isinstance(node, cst.Assert) else None
        if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1
                and isinstance(test.comparisons[0].operator, cst.Equal)):
            continue
        for side, other in ((test.left, test.comparisons[0].comparator), (test.comparisons[0].comparator, test.left)):
            if (isinstance(other, cst.Integer) and isinstance(side, cst.Call) and isinstance(side.func, cst.Name)
                    and side.func.value == "len" and len(side.args) == 1 and isinstance(side.args[0].value, cst.Name)):
                names.add(side.args[0].value.value)
    return names


def _snippet(node: cst.CSTNode | str, index, quote: bool = True) -> str:
    """Source of a node on one line, shortened, for a message."""
    if isinstance(node, str):
        text = node
    else:
        text = index.module.code_for_node(node) if index.module is not None else ""
    text = " ".join(text.split())
    if len(text) > 48:
        text = text[:45] + "..."
    return f"`{text}`" if quote else text
