"""Python values that torch.compile guards on and that change on every call: recompiles."""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import libcst as cst

from ..dataflow import Kind, is_tensor
from ..frame_skips import ancestors, parent_map
from ..module_index import COMPILE_NAMES, is_false
from ..names import dotted
from .base import Example, Rule


def _int_initialised(tree) -> tuple[frozenset[str], frozenset[str]]:
    """(string keys, self attributes) this file sets to an int literal: `state["step"] = 0`,
    `dict(k=0)`, `{"counter": 0}`, `self.queue_idx = 0`, `self.sum, self.count = 0.0, 0`. The
    evidence that a counter holds a Python int (a tensor counter -- `state["step"] =
    torch.zeros(())` -- does not recompile)."""
    import ast

    def is_int(node) -> bool:
        return isinstance(node, ast.Constant) and type(node.value) is int

    def pairs(node: ast.Assign):
        for target in node.targets:
            if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple) \
                    and len(target.elts) == len(node.value.elts):
                yield from zip(target.elts, node.value.elts)
            else:
                yield target, node.value

    keys, attrs = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target, value in pairs(node):
                if not is_int(value):
                    continue
                if isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant) \
                        and isinstance(target.slice.value, str):
                    keys.add(target.slice.value)
                elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                        and target.value.id == "self":
                    attrs.add(target.attr)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
            keys.update(k.arg for k in node.keywords if k.arg and is_int(k.value))
        elif isinstance(node, ast.Dict):
            keys.update(k.value for k, v in zip(node.keys, node.values)
                        if isinstance(k, ast.Constant) and isinstance(k.value, str) and is_int(v))
    return frozenset(keys), frozenset(attrs)


def _state_instances(tree) -> dict[str, frozenset[str]]:
    """Classes this file instantiates only as long-lived state -> where: the names of the classes
    whose methods hold them (`self.meter = Meter()`) and/or "<global>" (`METER = Meter()` at
    module level), when every `C(...)` call is one of those. Dynamo reaches such an object
    through a module or a global and guards on its ints' values on every call. Built anywhere
    else (a local, an argument, a container), the object may reach the compiled call as an
    input, whose ints turn symbolic after their first change (measured: 2 compilations over 6
    calls): not here."""
    import ast

    calls: dict[str, int] = {}
    stateful: dict[str, list[str]] = {}
    holders = {id(node): cls.name for cls in ast.walk(tree) if isinstance(cls, ast.ClassDef)
               for node in ast.walk(cls)}  # innermost last: a nested class overwrites its outer one
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            calls[node.func.id] = calls.get(node.func.id, 0) + 1
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.value, ast.Call) \
                and isinstance(node.value.func, ast.Name):
            target = node.targets[0]
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self" \
                    and id(node) in holders:
                stateful.setdefault(node.value.func.id, []).append(holders[id(node)])
            elif isinstance(target, ast.Name) and node in tree.body:
                stateful.setdefault(node.value.func.id, []).append(GLOBAL_HOLDER)
    return {name: frozenset(where) for name, where in stateful.items() if calls.get(name) == len(where)}


GLOBAL_HOLDER = "<global>"


def _module_ints(tree) -> frozenset[str]:
    """Names the module's top level binds to an int literal (`STEP = 0`)."""
    import ast

    return frozenset(
        node.targets[0].id for node in tree.body
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Constant) and type(node.value.value) is int)


class Counter(NamedTuple):
    name: str  # the text to report: `self.step`, `state["step"]`, `STEP`, `Stats.calls`
    removed_by: frozenset | None  # None: the rule's (allow_unspec_int_on_nn_module)


NO_SETTING = frozenset()  # no Dynamo setting makes this counter symbolic (measured)


def _declared_global(name: str, function: cst.FunctionDef) -> bool:
    return any(isinstance(small, cst.Global) and any(n.name.value == name for n in small.names)
               for statement in function.body.body if isinstance(statement, cst.SimpleStatementLine)
               for small in statement.body)


def _class_int(cls, attr: str) -> bool:
    """Whether the class body binds `attr` to an int literal (`calls = 0`)."""
    for statement in cls.node.body.body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Assign) and len(small.targets) == 1 \
                        and isinstance(small.targets[0].target, cst.Name) and small.targets[0].target.value == attr \
                        and isinstance(small.value, cst.Integer):
                    return True
    return False


def _counter(target: cst.BaseExpression, ctx) -> Counter | None:
    """The int counter `target` names, when the file shows it holds a Python int that Dynamo
    guards on by value on every call; None otherwise."""
    index = ctx.function.index
    keys, attrs = (index.file_fact("int-initialised", _int_initialised) if index else None) or ((), ())
    if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self":
        owner = ctx.function.owner
        if owner is None:
            return None
        if owner.is_module:
            if ctx.kind(target) == Kind.META or (target.attr.value in attrs and not is_tensor(ctx.kind(target))):
                return Counter(f"self.{target.attr.value}", None)
            return None
        # A plain object (a meter) the file keeps only as an attribute or a global: measured on
        # 2.11, 2.13 and 2.14, its int attribute recompiles every call; held by a module, the
        # module setting makes it symbolic (2 compilations over 6 calls), as a global it does not.
        holders = ((index.file_fact("state-instances", _state_instances) if index else None) or {}).get(owner.name)
        if holders and target.attr.value in attrs and not is_tensor(ctx.kind(target)):
            by_modules = all(h in index.classes and index.classes[h].is_module for h in holders)
            return Counter(f"self.{target.attr.value}", None if by_modules else NO_SETTING)
        return None
    if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and index is not None:
        # `Stats.calls += 1` on a class attribute: every call on 2.13 and 2.14, once on 2.11.
        cls = index.classes.get(target.value.value)
        if cls is not None and ctx.version >= (2, 13) and _class_int(cls, target.attr.value) \
                and target.value.value not in ctx.assigned and target.value.value not in ctx.parameters:
            return Counter(f"{target.value.value}.{target.attr.value}", NO_SETTING)
        return None
    if isinstance(target, cst.Name) and index is not None:
        # `global STEP; STEP += 1`: every call on 2.11 and 2.13; once on 2.14, which no longer
        # guards on a global the frame itself writes.
        ints = index.file_fact("module-ints", _module_ints) or ()
        if target.value in ints and ctx.version < (2, 14) and _declared_global(target.value, ctx.function.node):
            return Counter(target.value, NO_SETTING)
        return None
    if isinstance(target, cst.Subscript) and len(target.slice) == 1 and isinstance(target.slice[0].slice, cst.Index):
        key = target.slice[0].slice.value
        container = target.value
        # Measured on 2.13: an int in a module-level dict is specialised on every call; one in
        # a dict an object holds (`state = self.state[p]`) turns symbolic after its first change
        # and recompiles again only where Python needs its value (math.pow: TCL506).
        if (isinstance(container, cst.Name) and container.value not in ctx.assigned
                and container.value not in ctx.parameters and isinstance(key, cst.SimpleString)
                and key.evaluated_value in keys and not is_tensor(ctx.kind(container))):
            return Counter(cst.Module([]).code_for_node(target), NO_SETTING)
    return None


def _reads(node: cst.BaseExpression, target: cst.BaseExpression) -> bool:
    """Whether `node` is integer arithmetic on `target` (`(self.i + n) % m`): an update that
    changes the value every call; a call around it (`max(self.w, n)`) may settle, so no."""
    code = cst.Module([]).code_for_node
    wanted = code(target)
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, (cst.Attribute, cst.Subscript, cst.Name)) and code(current) == wanted:
            return True
        if isinstance(current, cst.BinaryOperation):
            stack.extend([current.left, current.right])
        elif isinstance(current, cst.UnaryOperation):
            stack.append(current.expression)
    return False


def _reached_with(read: cst.CSTNode, update_ancestors: set[int], parents: dict[int, cst.CSTNode]) -> bool:
    """Whether every call that runs the update also runs `read` first: each block `read` sits
    in only on some paths (an `if` branch, a loop body, the right of `and`/`or`, a handler) holds
    the update too. (`raise ValueError(f"... {self.step}")` under a data test is not where the
    guard is added.)"""
    node = read
    while id(node) not in update_ancestors:
        parent = parents.get(id(node))
        if parent is None:
            return True
        conditional = (
            isinstance(parent, (cst.If, cst.IfExp, cst.While)) and node is not parent.test
            or isinstance(parent, cst.For) and node is not parent.iter
            or isinstance(parent, cst.BooleanOperation) and node is parent.right
            or isinstance(parent, (cst.ExceptHandler, cst.Else, cst.Finally, cst.CompFor, cst.ListComp,
                                   cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.Lambda))
        )
        if conditional:
            return False
        node = parent
    return True


class ModuleIntCounter(Rule):
    code = "TCL501"
    consequence_after = ": every call"
    name = "int-counter-mutated-in-forward"
    message = (
        "Python int {target} changes inside compiled code: every call recompiles "
        "(guard {target} == N) until the recompile limit, then the frame runs eagerly"
    )
    message_read = (
        "Python int {target} changes inside compiled code (`{update}` below) and is first read "
        "here: every call recompiles (guard {target} == N, added here) until the recompile limit, "
        "then the frame runs eagerly"
    )
    fix = (
        "keep the counter in a tensor (register_buffer('step', torch.zeros((), dtype=torch.long)) "
        "and step.add_(1); state['step'] = torch.zeros(()) as torch.optim does), or set "
        "torch._dynamo.config.allow_unspec_int_on_nn_module = True for module attributes (and "
        "plain objects a module holds); a global or class-level counter: a tensor, or update it "
        "outside the compiled function"
    )
    gb = (((2, 0), "GB0039"),)
    category = "recompile"
    persistent = True  # every call changes the int: automatic dynamic shapes never absorbs it
    # `tcl verify`: the function recompiles on every call, identical inputs included, whichever
    # value of the object the failing guard names.
    predicts_state = True
    # Module attributes only: a module-level dict's int is reported whatever the setting.
    removed_by = frozenset({"allow_unspec_int_on_nn_module"})
    rationale = (
        "Dynamo specialises on Python ints it reads from nn.Module attributes and module-level "
        "dicts. `self.step += 1` in forward, or `COUNTS['step'] += 1`, makes each call see a new "
        "value, fail the guard and compile again; after torch._dynamo.config.recompile_limit (8) "
        "compilations it gives up and runs eagerly; the failing guard names the counter's first "
        "read in the frame, which is where it is reported. Measured on torch 2.13: a recompile on every "
        "call for a module's int attribute, `self.i = (self.i + n) % size` and an int in a "
        "module-level dict; one compilation for a tensor counter; two for an int in a dict an "
        "object holds (optimizer state: symbolic after its first change). With "
        "torch._dynamo.config.allow_unspec_int_on_nn_module = True a module's int attribute is traced "
        "as a symbolic int: over 6 calls `self.step += 1` compiles 2 graphs, `if self.calls % 4 == 0` "
        "3 (one per outcome) instead of 6; the module-level dict is not affected. Measured on "
        "torch 2.11, 2.13 and 2.14 over 6 calls: a plain object's int counter (a meter's "
        "`self.count += n`) compiles 6 times when the object is a module's attribute (2 with the "
        "setting) or a global (6 with it), and is reported where the file builds the class only "
        "as such; passed in as an argument it compiles twice (symbolic after its first change), "
        "so a class the file also builds anywhere else is not reported. `global STEP; STEP += 1` "
        "compiles 6 times on 2.11 and 2.13 and once on 2.14; a class attribute `Stats.calls += 1` "
        "6 times on 2.13 and 2.14 and once on 2.11: each is reported for the releases where it "
        "recompiles. Not reported, measured twice at most: a closure's nonlocal counter, float "
        "attributes (`self.total += 1.0`, a learning rate the caller changes between calls)."
    )
    VALID = [Example('''
import torch
from torch import nn

class Ema(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("step", torch.zeros((), dtype=torch.long))

    def forward(self, x):
        self.step.add_(1)
        return x * 2
''', entry="Ema"), Example('''
import torch

state = {"step": torch.zeros(())}

@torch.compile
def fn(x):
    state["step"] += 1
    return x * state["step"]
'''), Example('''
import torch

STEP = 0

@torch.compile
def fn(x):
    global STEP
    STEP += 1
    return x * 2
''', versions=">=2.14"), Example('''
import torch

class Meter:
    def __init__(self):
        self.count = 0

    def update(self, n=1):
        self.count += n

def evaluate(fn, batches):
    meter = Meter()  # a local the caller may pass in: its int turns symbolic after one change
    for x in batches:
        fn(x, meter)

@torch.compile
def fn(x, meter):
    meter.update()
    return x * 2
''', calls="[(torch.randn(4, 4), Meter())] * 3")]
    INVALID = [Example('''
import torch
from torch import nn

class Ema(nn.Module):
    def __init__(self):
        super().__init__()
        self.step = 0

    def forward(self, x):
        self.step += 1  # BREAK
        return x * 2
''', entry="Ema"), Example('''
import torch

COUNTS = {"step": 0}

@torch.compile
def fn(x):
    COUNTS["step"] += 1  # BREAK
    return x * COUNTS["step"]
''', removed_by=()), Example('''
import torch
from torch import nn

class Queue(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("memory", torch.zeros(16, 4))
        self.index = 0

    def forward(self, x):
        self.memory[self.index] = x.sum(0)  # BREAK (the first read: the guard names this line)
        self.index = (self.index + 1) % 16
        return self.memory.sum()
''', entry="Queue"), Example('''
import torch
from torch import nn

class EveryFourth(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        if self.calls % 4 == 0:  # BREAK
            x = x * 2
        self.calls += 1
        return x + 1
''', entry="EveryFourth"), Example('''
import torch
from torch import nn

class Meter:
    def __init__(self):
        self.total, self.count = 0.0, 0

    def update(self, value, n=1):
        self.total += value * n
        self.count += n  # BREAK

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.meter = Meter()

    def forward(self, x):
        self.meter.update(2.0, n=x.shape[0])
        return x * 2
''', entry="Model"), Example('''
import torch

class Meter:
    def __init__(self):
        self.count = 0

    def update(self, n=1):
        self.count += n  # BREAK

METER = Meter()

@torch.compile
def fn(x):
    METER.update()
    return x * 2
''', removed_by=()), Example('''
import torch

STEP = 0

@torch.compile
def fn(x):
    global STEP
    STEP += 1  # BREAK
    return x * 2
''', versions="<2.14", removed_by=()), Example('''
import torch

class Stats:
    calls = 0

@torch.compile
def fn(x):
    Stats.calls += 1  # BREAK
    return x * 2
''', versions=">=2.13", removed_by=())]

    def visit_AugAssign(self, node: cst.AugAssign, ctx) -> None:
        counter = _counter(node.target, ctx)
        if counter is not None and not is_tensor(ctx.kind(node.value)):
            self._report(node, node.target, counter, ctx)

    def visit_Assign(self, node: cst.Assign, ctx) -> None:
        if len(node.targets) != 1 or is_tensor(ctx.kind(node.value)):
            return
        target = node.targets[0].target
        if not isinstance(target, (cst.Attribute, cst.Subscript, cst.Name)):
            return
        if _reads(node.value, target):  # `self.i = (self.i + n) % size`: an update, not a reset
            counter = _counter(target, ctx)
            if counter is not None:
                self._report(node, target, counter, ctx)

    def _report(self, update: cst.CSTNode, target: cst.BaseExpression, counter: Counter, ctx) -> None:
        """At the counter's first read in the frame: Dynamo guards on the value there, and the
        recompile names that line (`if self.calls % self.rate == 0:` before `self.calls += 1`;
        measured on 2.13, tests/test_guard_facts.py). Once per counter and function: a later
        update adds no guard of its own."""
        code = cst.Module([]).code_for_node
        wanted = code(target)
        first = None
        parents = parent_map(ctx.function.node.body)
        before_update = ancestors(update, parents)
        for node in live_nodes(ctx.function.node.body, ctx.index):
            if node is update:
                break
            if isinstance(node, cst.AugAssign) and code(node.target) == wanted or (
                    isinstance(node, cst.Assign) and len(node.targets) == 1
                    and code(node.targets[0].target) == wanted and _reads(node.value, node.targets[0].target)):
                return  # an earlier update of the same counter reported it (a reset, `= 0`, is no update)
            if first is None and isinstance(node, type(target)) and code(node) == wanted \
                    and not isinstance(parents.get(id(node)), cst.NameItem) \
                    and _reached_with(node, before_update, parents):  # (`global STEP` declares, reads nothing)
                first = node
        name, removed_by = counter
        if first is None:
            ctx.report(self, update, self.message.format(target=name), removed_by=removed_by)
            return
        update_text = code(update).strip().splitlines()[0]
        ctx.report(self, first, self.message_read.format(target=name, update=update_text), removed_by=removed_by)


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
    from ..walker import static_truth

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
        children = []
        for field in dataclasses.fields(node):
            value = getattr(node, field.name)
            if isinstance(value, cst.CSTNode):
                children.append(value)
            elif isinstance(value, (tuple, list)):
                children.extend(v for v in value if isinstance(v, cst.CSTNode))
        stack.extend(
            child for child in reversed(children)
            if not isinstance(child, (cst.FunctionDef, cst.ClassDef, cst.Lambda))
        )


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
