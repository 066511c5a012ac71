"""A read-only walk over a libcst tree, without libcst's visitor machinery.

libcst's `node.visit(visitor)` rebuilds every node it passes (`_visit_and_replace_children`
constructs and validates a copy, even for a visitor that changes nothing), so one visit of a
file costs about as much as parsing it (torch/_dynamo/variables/builder.py: 0.31 s to visit,
0.41 s to parse). tcl's collecting visitors (the names a block binds, the calls of a module)
only read: `nodes()` yields the same nodes in the same order as a visitor's `on_visit` sees
them, skipping whitespace, comments and punctuation, which none of them reads, at a third of
the cost. Children come in source order: the dataclass field order of eight node types differs
from it (a decorator before its function, an `IfExp`'s body before its test, ...), and
tests/test_syntax_walk.py checks the order against libcst's own on real files.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Iterator

import libcst as cst

# Nodes no collecting visitor of tcl reads; left out of the walk, with everything below them.
TRIVIA = (
    cst.BaseParenthesizableWhitespace, cst.TrailingWhitespace, cst.EmptyLine, cst.Comment, cst.Newline,
    cst.LeftParen, cst.RightParen, cst.LeftSquareBracket, cst.RightSquareBracket, cst.LeftCurlyBrace,
    cst.RightCurlyBrace, cst.Comma, cst.Semicolon, cst.Colon, cst.Dot, cst.AssignEqual, cst.ImportStar,
    cst.Asynchronous,
)

# Source order where it is not the dataclass field order (libcst's _visit_and_replace_children).
SOURCE_ORDER: dict[type, tuple[str, ...]] = {
    cst.Arg: ("keyword", "value"),
    cst.ClassDef: ("decorators", "name", "type_parameters", "bases", "keywords", "body"),
    cst.ExceptHandler: ("type", "name", "body"),
    cst.ExceptStarHandler: ("type", "name", "body"),
    cst.FunctionDef: ("decorators", "name", "type_parameters", "params", "returns", "body"),
    cst.IfExp: ("body", "test", "orelse"),
    cst.MatchCase: ("pattern", "guard", "body"),
    cst.Parameters: ("posonly_params", "posonly_ind", "params", "star_arg", "kwonly_params", "star_kwarg"),
}

_FIELDS: dict[type, tuple[str, ...]] = {}

# Fields that hold only trivia in every node type that has them: not even read.
TRIVIA_FIELDS = ("whitespace", "lpar", "rpar", "leading_lines", "lines_after_decorators", "comma")


def declared_fields(node_type: type) -> tuple[str, ...]:
    """The node type's dataclass fields in their declared order, without the fields that hold
    only trivia (a walk in declared order: tcl/rules/recompiles.py `live_nodes`)."""
    fields = _DECLARED.get(node_type)
    if fields is None:
        fields = _DECLARED[node_type] = tuple(
            field.name for field in dataclasses.fields(node_type) if not field.name.startswith(TRIVIA_FIELDS))
    return fields


_DECLARED: dict[type, tuple[str, ...]] = {}


def _child_fields(node_type: type) -> tuple[str, ...]:
    """declared_fields in source order."""
    fields = _FIELDS.get(node_type)
    if fields is None:
        names = list(declared_fields(node_type))
        order = SOURCE_ORDER.get(node_type)
        if order is not None:
            names = [name for name in order if name in names] + [name for name in names if name not in order]
        fields = _FIELDS[node_type] = tuple(names)
    return fields


# What a field's value is, by its type: isinstance() against libcst's classes goes through
# ABCMeta.__instancecheck__ (a Python call each time: with these checks, two thirds of the walk),
# a dict lookup by type does not.
OTHER, NODE, SEQUENCE, TRIVIA_NODE = 0, 1, 2, 3
VALUE_KINDS: dict[type, int] = {}


def value_kind(value_type: type) -> int:
    """NODE, TRIVIA_NODE, SEQUENCE (a tuple or list) or OTHER (None, a str, a sentinel), once
    per type."""
    kind = VALUE_KINDS.get(value_type)
    if kind is None:
        if issubclass(value_type, cst.CSTNode):
            kind = TRIVIA_NODE if issubclass(value_type, TRIVIA) else NODE
        else:
            kind = SEQUENCE if issubclass(value_type, (tuple, list)) else OTHER
        VALUE_KINDS[value_type] = kind
    return kind


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The node's children that are not trivia, in source order."""
    return field_nodes(node, _child_fields(type(node)))


def field_nodes(node: cst.CSTNode, fields: tuple[str, ...], trivia: bool = False) -> list[cst.CSTNode]:
    """The nodes `node` holds in `fields`, in that order (the nodes of a sequence field in
    turn); trivia too when `trivia` is true."""
    found: list[cst.CSTNode] = []
    kinds = VALUE_KINDS
    also = TRIVIA_NODE if trivia else NODE
    for name in fields:
        value = getattr(node, name)
        kind = kinds.get(type(value))
        if kind is None:
            kind = value_kind(type(value))
        if kind == NODE or kind == also:
            found.append(value)
        elif kind == SEQUENCE:
            for item in value:
                kind = kinds.get(type(item))
                if kind is None:
                    kind = value_kind(type(item))
                if kind == NODE or kind == also:
                    found.append(item)
    return found


def nodes(root: cst.CSTNode, prune: Callable[[cst.CSTNode], bool] | None = None) -> Iterator[cst.CSTNode]:
    """`root` and every node below it, preorder in source order, trivia left out. A node for
    which `prune(node)` is true is yielded, but not what is below it (a visitor's `visit_X`
    returning False)."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        if prune is not None and prune(node):
            continue
        below = children(node)
        below.reverse()
        stack.extend(below)


_CHECKED: dict[tuple[str, str], bool] = {}


def _only_visits(visitor_type: type) -> bool:
    """Whether a visitor class reacts only in `visit_<Node>` methods: no `leave_*`, no
    `visit_<Node>_<field>`, no `on_leave`, which `run` does not call."""
    key = (visitor_type.__module__, visitor_type.__qualname__)  # a class made per call is one key
    known = _CHECKED.get(key)
    if known is None:
        base = cst.CSTVisitor
        known = getattr(visitor_type, "on_leave") is getattr(base, "on_leave") and all(
            getattr(visitor_type, name) is getattr(base, name, None)
            for name in dir(visitor_type)
            if name.startswith("leave_") or (name.startswith("visit_") and name.count("_") > 1))
        _CHECKED[key] = known
    return known


def run(visitor: cst.CSTVisitor, root: cst.CSTNode) -> None:
    """`root.visit(visitor)` for a visitor that only collects in `visit_<Node>` methods (one
    returning False skips what is below the node, as with libcst), without rebuilding the
    tree. Trivia are not offered to the visitor."""
    visitor_type = type(visitor)
    if not _only_visits(visitor_type):
        raise TypeError(f"{visitor_type.__name__} has leave_ or field methods: use node.visit()")
    # libcst's on_visit looks `visit_<Node>` up by name on every node; the lookup is kept per
    # node type (per class for module-level classes; a class made per call may close over
    # that call's locals, so its methods are looked up again for each run).
    custom = visitor_type.on_visit is not cst.CSTVisitor.on_visit
    if "<locals>" in visitor_type.__qualname__:
        methods: dict = {}
    else:
        methods = _VISIT_METHODS.setdefault(visitor_type, {})
    stack = [root]
    while stack:
        node = stack.pop()
        if custom:
            go = visitor.on_visit(node)
        else:
            node_type = type(node)
            method = methods.get(node_type, _UNKNOWN)
            if method is _UNKNOWN:
                method = methods[node_type] = getattr(visitor_type, "visit_" + node_type.__name__, None)
            go = method is None or method(visitor, node) is not False
        if go:
            below = children(node)
            below.reverse()
            stack.extend(below)


_VISIT_METHODS: dict[type, dict] = {}  # visitor class -> node type -> its visit_<Node> or None
_UNKNOWN = object()
