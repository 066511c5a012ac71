"""Results kept per libcst node, across analyses.

The language server re-parses only the statements an edit touched and keeps every other node,
and installed files are parsed once per process: a fact computed from a node (the names a block
binds, the calls in a statement) holds as long as that node object lives. `per_node` keeps such
facts by node identity, checks the node is the same object (an id can be reused once a node is
freed), and forgets everything past a bound. The memos are module-level dicts owned by the
modules that compute the facts.
"""

from __future__ import annotations

from typing import Callable, TypeVar

import libcst as cst

T = TypeVar("T")

LIMIT = 50_000  # entries a memo keeps before it starts over


def per_node(memo: dict[int, tuple], node: cst.CSTNode, compute: Callable[[], T]) -> T:
    """`compute()` for `node`, once while the node lives."""
    kept = memo.get(id(node))
    if kept is not None and kept[0] is node:
        return kept[1]
    value = compute()
    if len(memo) > LIMIT:
        memo.clear()
    memo[id(node)] = (node, value)
    return value
