"""Python int counters that compiled code moves on every call (TCL501): every call recompiles.

Dynamo guards on the value of a Python int it reads from an nn.Module attribute, a module-level
dict, a global, a class attribute, or a plain object a module or a global holds; `+= 1` in the
compiled code makes the next call fail the guard. What each of those does on each release is
measured in the rule's rationale and examples (tests/test_rule_examples.py counts compilations
per call); where the counter lives is read from the file (which names hold int literals, where a
class is built), never from running it.
"""

from __future__ import annotations

from typing import NamedTuple

import libcst as cst

from ..dataflow import Kind, is_tensor
from ..frame_skips import ancestors, parent_map
from ..node_memo import per_node
from ..python_nodes import nodes_of
from .base import Example, Rule
from .recompiles import live_nodes

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
    for node in nodes_of(tree, ast.Assign):
        for target, value in pairs(node):
            if not is_int(value):
                continue
            if isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant) \
                    and isinstance(target.slice.value, str):
                keys.add(target.slice.value)
            elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                    and target.value.id == "self":
                attrs.add(target.attr)
    for node in nodes_of(tree, ast.Call):
        if isinstance(node.func, ast.Name) and node.func.id == "dict":
            keys.update(k.arg for k in node.keywords if k.arg and is_int(k.value))
    for node in nodes_of(tree, ast.Dict):
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
    for node in nodes_of(tree, ast.Call):
        if isinstance(node.func, ast.Name):
            calls[node.func.id] = calls.get(node.func.id, 0) + 1
    classes = nodes_of(tree, ast.ClassDef)
    top_level = {id(node) for node in tree.body}
    for node in nodes_of(tree, ast.Assign):
        if len(node.targets) == 1 and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name):
            target = node.targets[0]
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                holder = _innermost_class(node, classes)
                if holder is not None:
                    stateful.setdefault(node.value.func.id, []).append(holder)
            elif isinstance(target, ast.Name) and id(node) in top_level:
                stateful.setdefault(node.value.func.id, []).append(GLOBAL_HOLDER)
    return {name: frozenset(where) for name, where in stateful.items() if calls.get(name) == len(where)}


def _innermost_class(statement, classes) -> str | None:
    """The name of the innermost class whose body holds `statement`: of the classes whose lines
    hold it, the one that starts last (a nested class starts inside its outer one; classes that
    are not nested do not overlap)."""
    inner = None
    for cls in classes:
        if cls.lineno <= statement.lineno <= cls.end_lineno and statement is not cls \
                and (inner is None or cls.lineno > inner.lineno):
            inner = cls
    return inner.name if inner is not None else None


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


def _code(node: cst.CSTNode) -> str:
    """The node's source, made once per node: a counter is compared by its text with every
    expression of its type in the function, at each update the rule looks at."""
    return per_node(_CODES, node, lambda: cst.Module([]).code_for_node(node))


_CODES: dict[int, tuple] = {}


def _reads(node: cst.BaseExpression, target: cst.BaseExpression) -> bool:
    """Whether `node` is integer arithmetic on `target` (`(self.i + n) % m`): an update that
    changes the value every call; a call around it (`max(self.w, n)`) may settle, so no."""
    code = _code
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
        code = _code
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
