"""Line/column ranges, computed only for the functions that hold a finding.

libcst's PositionProvider re-generates the whole module with position bookkeeping on every node
(about 1.7x the parse). Findings sit in a few functions, so tcl asks Python's `ast` (a small
fraction of a libcst parse) where those functions start and generates positions for them
alone. Each result is checked against `ast` (the function's name must land where `ast` says);
if it does not, the module-level statement holding the function is done the slow, sure way.
"""

from __future__ import annotations

import ast

import libcst as cst
from libcst._position import CodeRange
from libcst.metadata.position_provider import PositionProvidingCodegenState


class _RangeSink:
    """Stands in for the provider object the codegen state writes ranges into."""

    def __init__(self) -> None:
        self._computed: dict[cst.CSTNode, CodeRange] = {}


def _state(module: cst.Module, sink: _RangeSink) -> PositionProvidingCodegenState:
    return PositionProvidingCodegenState(
        default_indent=module.default_indent,
        default_newline=module.default_newline,
        provider=sink,
    )


def function_ranges(module: cst.Module, source: str, functions, tree=None) -> dict[cst.CSTNode, CodeRange]:
    """Ranges of every node inside `functions` (FunctionInfo objects of this module).

    `tree`: the `ast` tree of `source` if the caller already has one (the parse guard builds it).
    """
    sink = _RangeSink()
    starts = _ast_def_starts(source, tree)
    slow_tops: set[int] = set()
    done: set[int] = set()
    for function in functions:
        # A nested def (`method.<locals>.helper`) is not in `starts`: the def holding it is, and
        # its ranges cover the nested one, instead of the whole class it sits in.
        outermost = function
        while outermost.enclosing is not None:
            outermost = outermost.enclosing
        if id(outermost.node) in done:
            continue
        done.add(id(outermost.node))
        if not _function_ranges(module, outermost, starts, sink):
            slow_tops.add(id(function.top))
    if slow_tops:
        sink._computed.update(statement_ranges(module, slow_tops))
    return sink._computed


def _ast_def_starts(source: str, tree=None) -> dict[tuple[str | None, str], tuple[int, int, int]]:
    """(class or None, function) -> (first decorator line, def line, def column), top levels only."""
    if tree is None:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return {}
    starts = {}
    repeated = set()

    def add(owner, node):
        # A name defined twice (two classes `Loss`, a property's getter and setter): which
        # definition the index holds is not known here, so those take the slow, sure way.
        first = min([d.lineno for d in node.decorator_list] + [node.lineno])
        if (owner, node.name) in starts:
            repeated.add((owner, node.name))
        starts[(owner, node.name)] = (first, node.lineno, node.col_offset)

    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            add(None, node)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    add(node.name, item)
    for key in repeated:
        del starts[key]
    return starts


def _function_ranges(module, function, starts, sink) -> bool:
    owner = function.owner.name if function.owner is not None else None
    start = starts.get((owner, function.name))
    node: cst.FunctionDef = function.node
    if start is None:
        return False
    first_line, def_line, def_col = start
    state = _state(module, sink)
    if function.owner is not None:
        state.indent_tokens.append(function.owner.node.body.indent or module.default_indent)
    # Code generation of a def starts with its leading blank/comment lines, then decorators.
    state.line = first_line - len(node.leading_lines)
    node._codegen(state)
    name_range = sink._computed.get(node.name)
    expected_col = def_col + (len("async def ") if node.asynchronous else len("def "))
    return name_range is not None and (name_range.start.line, name_range.start.column) == (def_line, expected_col)


def statement_ranges(module: cst.Module, wanted_tops: set[int]) -> dict[cst.CSTNode, CodeRange]:
    """Ranges of every node inside the module-level statements whose id() is in wanted_tops."""
    sink = _RangeSink()
    state = _state(module, sink)
    for line in module.header:
        line._codegen(state)
    remaining = set(wanted_tops)
    for stmt in module.body:
        if not remaining:
            break
        if id(stmt) in remaining:
            stmt._codegen(state)
            remaining.discard(id(stmt))
        else:
            state._update_position(module.code_for_node(stmt))
    return sink._computed


node_ranges = statement_ranges  # the name other modules use for "ranges of whole statements"
