"""Which graph breaks make Dynamo skip the whole frame, and what such a break hides.

Measured on torch 2.13 (tests/test_guard_facts.py compiles each case): a default-mode break in a
`for`/`while` body, in a `try` body, or in the header or block of a `with` whose context manager
Dynamo cannot re-enter makes Dynamo give up on the frame and run it eagerly -- also when the break
is inside a helper the block calls. Nothing after it in the frame is traced, so a later `.item()`
logs no break and nothing in the frame recompiles. A break inside `torch.no_grad()`, `autocast`,
`nullcontext`, `sdpa_kernel`, `record_function` and their kin resumes after it instead. A break
Dynamo cannot resume after wherever it stands (`Rule.resumes`: an LSTM attribute, a formatted
tensor, a hook handle's `remove`) compiles the graph before it and runs the rest eagerly: it
hides what follows in its block, and only the recompile hazards after it. The
walker (tcl/walker.py) asks `skip_scope` at every default-mode break: whether it skips the frame,
and the innermost block that holds it on a plain path (only such blocks and `if` tests between),
within which every later point comes after it. The engine then drops the later breaks of that
block (reported with `--show-hidden`) and the block's recompile hazards.
"""

from __future__ import annotations

from typing import Callable, Sequence

import libcst as cst

from . import syntax_walk

# Context managers Dynamo resumes a break inside (it knows how to re-enter them); each measured on
# 2.13. A break in `with torch.device(...)` skips the frame.
RESUMABLE_CONTEXTS = frozenset({
    "torch.no_grad", "torch.enable_grad", "torch.set_grad_enabled", "torch.inference_mode",
    "torch.autocast", "torch.amp.autocast", "torch.cuda.amp.autocast", "torch.cpu.amp.autocast",
    "contextlib.nullcontext", "torch.nn.attention.sdpa_kernel", "torch.profiler.record_function",
    "torch.autograd.profiler.record_function",
})
# Blocks that some calls of a function do not run (a loop's body runs on every pass).
CONDITIONAL = (
    cst.While, cst.Try, cst.With, cst.FunctionDef, cst.Lambda, cst.CompFor, cst.ListComp,
    cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.Match,
)


def skip_scope(stack: Sequence[cst.CSTNode], resumable: Callable[[cst.With], bool]):
    """For a break at the top of `stack` (the walk's ancestors, the function body first): whether
    it makes Dynamo skip the frame (never in a nested function: another frame), and the
    innermost block that holds it on a plain path (None: the function body)."""
    in_block, scope = False, None
    for i in range(len(stack) - 2, -1, -1):
        ancestor, child = stack[i], stack[i + 1]
        if isinstance(ancestor, (cst.FunctionDef, cst.Lambda)):
            return False, None
        if isinstance(ancestor, (cst.For, cst.While, cst.Try)) and child is ancestor.body:
            in_block, plain = True, True
        elif isinstance(ancestor, cst.With):
            # Its block, or its header: entering a context manager Dynamo cannot trace breaks
            # there and skips the frame too (a threading lock, cudnn.flags, fork_rng,
            # detect_anomaly; nothing after the `with` is traced).
            in_block, plain = in_block or not resumable(ancestor), True
        elif isinstance(ancestor, cst.For):
            plain = child is ancestor.iter  # the else: clause runs only sometimes
        elif isinstance(ancestor, (cst.While, cst.If, cst.IfExp)):
            plain = child is ancestor.test
        elif isinstance(ancestor, cst.CompFor):
            # A comprehension's outermost iterable is evaluated once, in the enclosing frame,
            # whether or not it yields anything; the rest runs per element.
            plain = child is ancestor.iter and i > 0 and getattr(stack[i - 1], "for_in", None) is ancestor
        elif isinstance(ancestor, (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)):
            plain = child is ancestor.for_in
        elif isinstance(ancestor, cst.BooleanOperation):
            plain = child is not ancestor.right
        else:
            plain = not isinstance(ancestor, CONDITIONAL)
        if not plain and scope is None:
            scope = child
    return in_block, scope


def parent_map(root: cst.CSTNode) -> dict[int, cst.CSTNode]:
    """id of each node under `root` -> its parent (whitespace and punctuation left out: no
    expression or statement sits under them; libcst's `node.children` visits, which rebuilds)."""
    parents, stack = {}, [root]
    while stack:
        node = stack.pop()
        for child in syntax_walk.children(node):
            parents[id(child)] = node
            stack.append(child)
    return parents


def ancestors(node: cst.CSTNode, parents: dict[int, cst.CSTNode]) -> set[int]:
    """The ids of `node` and of every node above it (`parents`: parent_map of a root above it)."""
    within = set()
    while node is not None:
        within.add(id(node))
        node = parents.get(id(node))
    return within


def ancestor_ids(root: cst.CSTNode, nodes: Sequence[cst.CSTNode]) -> list[set[int]]:
    """For each of `nodes` (under `root`): the ids of it and of every node above it."""
    parents = parent_map(root)
    return [ancestors(node, parents) for node in nodes]
