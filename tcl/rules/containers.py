"""Python containers that compiled code grows: a recompile on every call (TCL507).

Dynamo guards on the length of a list, dict or deque it reads from an object's attribute or a
module global. Code that appends to one inside the compiled region (`self.captured.append(out)`
in a hook, `CACHE.append(x)`) changes that length on every call, so the next call fails the guard.
Only containers the file creates empty (`self.captured = []`, `SEEN = {}`, `deque(maxlen=N)`) are
reported, on an nn.Module or any other object whose method compiled code runs (not on an object
the compiled call itself built, `solver = Solver(y0); solver.integrate(t)`, whose containers start
empty every call), and not when the function rebuilds the container before growing it.
"""

from __future__ import annotations

import libcst as cst

from .base import Example, Rule


GROWING_METHODS = frozenset({"append", "extend", "insert", "appendleft", "extendleft"})


def _containers_initialised(tree) -> tuple[frozenset[str], frozenset[str]]:
    """(self attributes, module-level names) this file sets to an empty list/dict/deque."""
    import ast

    from ..python_nodes import nodes_of

    def empty(node) -> bool:
        if isinstance(node, (ast.List, ast.Dict)) and not getattr(node, "elts", getattr(node, "keys", None)):
            return True
        if not (isinstance(node, ast.Call) and not node.args and isinstance(node.func, (ast.Name, ast.Attribute))):
            return False
        name = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
        # `deque(maxlen=1000)` starts empty too: its length grows with every call until maxlen
        keywords = {k.arg for k in node.keywords}
        return name in ("list", "dict", "deque") and (not keywords or (name == "deque" and keywords == {"maxlen"}))

    attrs, names = set(), set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and empty(node.value):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    # `self.q_record: collections.deque = collections.deque(maxlen=1000)` too
    for node in [*nodes_of(tree, ast.Assign), *nodes_of(tree, ast.AnnAssign)]:
        if node.value is not None and empty(node.value):
            for target in getattr(node, "targets", None) or [node.target]:
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                    attrs.add(target.attr)
    return frozenset(attrs), frozenset(names)


class GrowingContainer(Rule):
    code = "TCL507"
    consequence_after = ": every call"
    name = "container-grows-in-compiled-code"
    message = (
        "{target} grows inside compiled code: Dynamo guards on its length, so every call "
        "recompiles (guard len({target}) == N) until the recompile limit, then the frame runs eagerly"
    )
    fix = (
        "keep what you collect outside the compiled region (return it, or collect in a "
        "torch.compiler.disable'd helper), or store it in a preallocated tensor buffer indexed "
        "by a tensor counter; clear the list at the start of each call if only this call's items "
        "are needed"
    )
    gb = (((2, 0), "GB0039"),)
    category = "recompile"
    persistent = True
    rationale = (
        "Dynamo guards on the length of a list, dict or deque it reads from a module, any other "
        "object or a global. "
        "Appending to `self.cache` (or a module-level list) inside compiled code changes that "
        "length on every call, so the next call fails the guard and compiles again. Measured "
        "on torch 2.13, six calls: 6 compilations (one per call) for `self.cache.append(...)`, "
        "a module-level `G.append(...)` and `self.seen[len(self.seen)] = ...`; 1 when the list "
        "is rebuilt at the start of each call. The same for a `collections.deque(maxlen=N)` on "
        "a plain object whose bound method is compiled (an RL agent's loss recording its Q "
        "values): a recompile on every call until the deque is full or the recompile limit."
    )
    VALID = [Example('''
import torch
from torch import nn

class Capture(nn.Module):
    def __init__(self):
        super().__init__()
        self.captured = []

    def forward(self, x):
        self.captured = []
        self.captured.append(x.sum())
        return x * 2
''', entry="Capture"), Example('''
import collections
import torch

class Solver:
    def __init__(self, y0):
        self.y0 = y0
        self.history = collections.deque(maxlen=4)

    def integrate(self, t):
        y = self.y0
        for _ in range(3):
            y = self.step(y, t)
        return y

    def step(self, y, t):
        self.history.appendleft(y)  # an object built in the compiled call: empty every call
        return y + t

@torch.compile
def fn(y0, t):
    solver = Solver(y0)
    return solver.integrate(t)
''', args="(torch.randn(4), torch.randn(4))", calls="[(torch.randn(4), torch.randn(4)) for _ in range(4)]")]
    INVALID = [Example('''
import torch
from torch import nn

class Capture(nn.Module):
    def __init__(self):
        super().__init__()
        self.captured = []

    def forward(self, x):
        self.captured.append(x.sum())  # BREAK
        return x * 2
''', entry="Capture"), Example('''
import torch

SEEN = []

@torch.compile
def fn(x):
    SEEN.append(x.shape)  # BREAK
    return x * 2
'''), Example('''
import collections
import torch

class Agent:
    def __init__(self):
        self.q_record: collections.deque = collections.deque(maxlen=1000)

    def compute_loss(self, q_values):
        self.q_record.extend(q_values.detach().cpu().numpy().ravel())  # BREAK
        return q_values.mean()

agent = Agent()
loss = torch.compile(agent.compute_loss)
''', entry="loss")]

    def visit_Assign(self, node: cst.Assign, ctx) -> None:
        _note_rebinding(node, ctx)

    def visit_Call(self, node: cst.Call, ctx) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value in GROWING_METHODS):
            return
        receiver = func.value
        index = ctx.function.index
        attrs, names = (index.file_fact("empty-containers", _containers_initialised) if index else None) or ((), ())
        if isinstance(receiver, cst.Attribute) and isinstance(receiver.value, cst.Name) \
                and receiver.value.value == "self":
            # An nn.Module or any other object whose method compiled code runs (measured on 2.13:
            # an agent's `self.q_record.extend(...)` in its compiled loss recompiles every call)
            owner = ctx.function.owner
            if owner is None or receiver.attr.value not in attrs:
                return
            if not owner.is_module and ctx.fresh_object:
                return  # an object the compiled call built: its container starts empty every call
            if _rebound_before(ctx, receiver):
                return
            target = f"self.{receiver.attr.value}"
        elif isinstance(receiver, cst.Name) and receiver.value in names:
            if receiver.value in ctx.assigned or receiver.value in ctx.parameters:
                return
            target = receiver.value
        else:
            return
        # A plain object's container outlives the call only if the object does: where the
        # method is reached only from a public function tcl guesses users compile, who builds
        # the object (once, or per call) is a second guess (transformers' candidate generators
        # are built inside each generate() call). An nn.Module is built once and kept.
        plain = isinstance(receiver, cst.Attribute) and not ctx.function.owner.is_module
        ctx.report(self, node, self.message.format(target=target), on_guessed_entries=False if plain else None)


def _rebound_before(ctx, receiver: cst.Attribute) -> bool:
    """`self.captured = []` earlier in the same function: the list starts empty every call."""
    memo = ctx.memo.setdefault("growing.rebound", set())
    return receiver.attr.value in memo


def _note_rebinding(node: cst.Assign, ctx) -> None:
    for target in node.targets:
        t = target.target
        if isinstance(t, cst.Attribute) and isinstance(t.value, cst.Name) and t.value.value == "self":
            ctx.memo.setdefault("growing.rebound", set()).add(t.attr.value)

