"""What a branch tells the walker under compile: which names a test proves are no tensors in
each branch (`isinstance(x, torch.Tensor)` false), which names a branch binds, and whether an
`if` whose test is decided under compile leaves the block (`if torch.compiler.is_compiling():
return` makes the rest of the function dead code for Dynamo, which never traces it).
"""

from __future__ import annotations

from typing import Callable

import libcst as cst

from . import syntax_walk
from .module_index import ModuleIndex
from .names import source_text
from .node_memo import per_node

TENSOR_TYPES = frozenset({
    "torch.Tensor", "torch.nn.Parameter", "torch.nn.parameter.Parameter", "torch.FloatTensor",
    "torch.LongTensor", "torch.BoolTensor",
})


def not_tensors_when(test: cst.BaseExpression, outcome: bool, index: ModuleIndex) -> frozenset[str]:
    """The names a test proves are no tensors when it evaluates to `outcome`: `x` where
    `isinstance(x, torch.Tensor)` / `torch.is_tensor(x)` is False (`else:` of the `if`, `not`,
    every operand of a false `or` and of a true `and`). Python's own narrowing, which keeps
    `ref_size = reference` in `else:` of `isinstance(reference, torch.Tensor)` an int."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return not_tensors_when(test.expression, not outcome, index)
    if isinstance(test, cst.BooleanOperation):
        both = isinstance(test.operator, cst.And) == outcome  # a true `and`, a false `or`
        if not both:
            return frozenset()
        return not_tensors_when(test.left, outcome, index) | not_tensors_when(test.right, outcome, index)
    if outcome or not isinstance(test, cst.Call) or not test.args or not isinstance(test.args[0].value, cst.Name):
        return frozenset()
    name = index.qualify(test.func)
    if name == "torch.is_tensor" and len(test.args) == 1:
        return frozenset({test.args[0].value.value})
    if name == "builtins.isinstance" and len(test.args) == 2:
        types = test.args[1].value
        elements = [e.value for e in types.elements] if isinstance(types, cst.Tuple) else [types]
        if elements and all(index.qualify(e) in TENSOR_TYPES for e in elements):
            return frozenset({test.args[0].value.value})
    return frozenset()


def none_when(test: cst.BaseExpression, outcome: bool,
              truth: Callable[[cst.BaseExpression], bool | None]) -> frozenset[str]:
    """The names a test proves are None when it evaluates to `outcome` (`x is None` true,
    `x is not None` false, through `not`, `and`, `or`), with `truth` deciding the operands
    that are decided under compile: after `if mask is not None and is_tracing(mask): return`,
    `is_tracing` is True while compiling, so the rest of the block runs only with `mask` None
    (transformers' masking_utils), and Dynamo never reads the mask's data there."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return none_when(test.expression, not outcome, truth)
    if isinstance(test, cst.BooleanOperation):
        is_and = isinstance(test.operator, cst.And)
        if is_and == outcome:  # a true `and`, a false `or`: both operands have the outcome
            return none_when(test.left, outcome, truth) | none_when(test.right, outcome, truth)
        # a false `and` / a true `or`: the other operand has the outcome when one is decided
        # to the opposite (True in a false `and`, False in a true `or`)
        if truth(test.left) is is_and:
            return none_when(test.right, outcome, truth)
        if truth(test.right) is is_and:
            return none_when(test.left, outcome, truth)
        return frozenset()
    if (isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(test.left, cst.Name)
            and isinstance(test.comparisons[0].comparator, cst.Name)
            and test.comparisons[0].comparator.value == "None"):
        op = test.comparisons[0].operator
        if (isinstance(op, cst.Is) and outcome) or (isinstance(op, cst.IsNot) and not outcome):
            return frozenset({test.left.value})
    return frozenset()


def exits_if_true(node: cst.If) -> bool:
    """`if test: ... return/raise` without `else`: after it, the test was false."""
    return node.orelse is None and _always_exits(node.body)


class BoundNames(cst.CSTVisitor):
    """The names assignments, augmented assignments and loop targets bind, not in nested defs."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._add(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._add(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._add(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._add(node.target)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def _add(self, target: cst.BaseExpression) -> None:
        self.names |= target_names(target)


def target_names(target: cst.BaseExpression) -> set[str]:
    """The names an assignment target binds: `x`, `a, (b, *c)`."""
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        return set().union(*(target_names(e.value) for e in target.elements))
    if isinstance(target, cst.StarredElement):
        return target_names(target.value)
    return set()


def names_bound_in(block: cst.CSTNode) -> frozenset[str]:
    """The names a block assigns (not in nested defs). Kept per node: an editor's re-check
    walks the same installed functions again."""
    return _chain_names(_BOUND, BoundNames, block)


_BOUND: dict[int, tuple] = {}


def _chain_names(memo: dict[int, tuple], visitor_class, block: cst.CSTNode) -> frozenset[str]:
    """What `visitor_class` collects in `block`, kept per node. An `elif` chain is asked about
    at every link (the walker asks for each branch it walks), so a link's names are its own
    test and body joined with the kept names of the links after it: each link is visited once,
    not once per link before it (a chain of n branches cost n*n/2 visits: 57 of the 120 s a
    profiled check of torch/_dynamo/variables/builder.py took; its longest chain has 80)."""
    links: list[cst.If] = []
    node = block
    while isinstance(node, cst.If):
        kept = memo.get(id(node))
        if kept is not None and kept[0] is node:
            break
        links.append(node)
        node = node.orelse
    for link in reversed(links):
        names = _collected(visitor_class, link.test) | _collected(visitor_class, link.body)
        if link.orelse is not None:
            names |= (_chain_names(memo, visitor_class, link.orelse) if isinstance(link.orelse, cst.If)
                      else per_node(memo, link.orelse, lambda o=link.orelse: _collected(visitor_class, o)))
        per_node(memo, link, lambda n=frozenset(names): n)
    return per_node(memo, block, lambda: _collected(visitor_class, block))


def _collected(visitor_class, node: cst.CSTNode) -> frozenset[str]:
    visitor = visitor_class()
    syntax_walk.run(visitor, node)
    return frozenset(visitor.names)


def exits_under_compile(node: cst.If, truth: Callable[[cst.BaseExpression], bool | None]) -> bool:
    """Whether the branch of `node` that runs under compile (by `truth`) always leaves the
    block with a `return` or `raise`: then nothing after the `if` is traced."""
    decided = truth(node.test)
    if decided is None:
        return False
    if decided:
        return _always_exits(node.body)
    orelse = node.orelse
    if isinstance(orelse, cst.If):
        return exits_under_compile(orelse, truth)
    return isinstance(orelse, cst.Else) and _always_exits(orelse.body)


def _always_exits(block: cst.BaseSuite) -> bool:
    statements = block.body if isinstance(block, cst.IndentedBlock) else [block]
    for stmt in statements:
        smalls = stmt.body if isinstance(stmt, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) else ()
        if any(isinstance(small, (cst.Return, cst.Raise)) for small in smalls):
            return True
    return False


def settled_operands(test: cst.BaseExpression, outcome: bool,
                     truth: Callable[[cst.BaseExpression], bool | None], chain: cst.If) -> dict[str, bool]:
    """Source text -> value of the operands a test proves when it evaluates to `outcome`, for
    the `elif` chain after it: `if torch.compiler.is_compiling() and labels is not None:` false,
    with `is_compiling()` true under compile, proves `labels is not None` false, so the
    following `elif labels is not None and labels.max() >= n:` stops before the tensor's truth
    value (tcl fix's in-graph checks, tcl/fixes/checks.py, are written this way). Left out:
    operands with a call other than metadata and type tests (a second call may answer
    differently) and operands reading a name the chain assigns."""
    settled = _settled(test, outcome, truth)
    if not settled:
        return settled
    assigned = _assigned_names(chain)
    return {text: value for text, (value, names) in settled.items() if not names & assigned}


def _settled(test: cst.BaseExpression, outcome: bool, truth) -> dict[str, tuple[bool, set[str]]]:
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _settled(test.expression, not outcome, truth)
    if isinstance(test, cst.BooleanOperation):
        is_and = isinstance(test.operator, cst.And)
        if is_and == outcome:  # a true `and`, a false `or`: both operands have the outcome
            return {**_settled(test.left, outcome, truth), **_settled(test.right, outcome, truth)}
        if truth(test.left) is is_and:
            return _settled(test.right, outcome, truth)
        if truth(test.right) is is_and:
            return _settled(test.left, outcome, truth)
        return {}
    names = _Names()
    syntax_walk.run(names, test)
    if names.calls or truth(test) is not None:
        return {}
    return {settled_text(test): (outcome, names.names)}


def settled_text(node: cst.BaseExpression) -> str:
    """The key of a settled operand: its source on one line, without outer parentheses (once
    per node: a test's operands are asked for again at every test after it)."""
    def compute() -> str:
        bare = node.with_changes(lpar=(), rpar=()) if getattr(node, "lpar", None) else node
        return " ".join(source_text(bare).split())

    return per_node(_SETTLED_TEXTS, node, compute)


_SETTLED_TEXTS: dict[int, tuple] = {}


# Calls that answer the same twice in a row: metadata of a tensor, Python's type tests.
STABLE_CALLS = frozenset({
    "dim", "size", "numel", "ndimension", "is_floating_point", "is_complex", "is_contiguous",
    "isinstance", "len", "hasattr", "callable",
})


class _Names(cst.CSTVisitor):
    """The names an expression reads and whether it calls anything."""

    def __init__(self) -> None:
        self.names: set[str] = set()
        self.calls = False

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)

    def visit_Call(self, node: cst.Call) -> bool:
        func = node.func
        name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", None)
        if name not in STABLE_CALLS:
            self.calls = True
        return True


def _assigned_names(block: cst.CSTNode) -> frozenset[str]:
    """Every name inside an assignment target of the block (`x`, and `self`, `cache` of
    `self.cache = ...`), walrus targets included."""
    return _chain_names(_ASSIGNED, _TargetNames, block)


_ASSIGNED: dict[int, tuple] = {}


class _TargetNames(BoundNames):
    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._add(node.target)

    def _add(self, target: cst.BaseExpression) -> None:
        reader = _Names()
        syntax_walk.run(reader, target)
        self.names |= reader.names
