"""One walk of a file's `ast` tree, shared by the facts rules read from the whole file.

Some rules read a fact from every node of a file's `ast` tree: which `self.` attributes and
string keys hold ints (TCL501), which classes are built only as long-lived state, which names
hold sets or empty containers, which names a function declares `global`, which Dynamo settings
the file turns on. Each fact walked the whole tree on its own, about a third of an editor's
re-check of a 1.6k-line file (every edit gives a new tree). `nodes_of(tree, T)` walks the tree once, keeps its nodes by their exact type
in `ast.walk` order (on the tree itself, so they live as long as it does), and hands each fact
only the node types it reads.
"""

from __future__ import annotations

import ast

_KEPT = "_tcl_nodes_by_type"
_ALL = object  # the key of every node, in walk order (no node's type is `object`)


def nodes_of(tree: ast.AST, *node_types: type) -> list[ast.AST]:
    """The nodes of `tree` whose type is exactly one of `node_types`, in `ast.walk` order."""
    by_type = tree.__dict__.get(_KEPT)
    if by_type is None:
        by_type = {_ALL: list(ast.walk(tree))}
        for node in by_type[_ALL]:
            kept = by_type.get(type(node))
            if kept is None:
                by_type[type(node)] = [node]
            else:
                kept.append(node)
        tree.__dict__[_KEPT] = by_type
    if len(node_types) == 1:
        return by_type.get(node_types[0], [])
    wanted = set(node_types)
    return [node for node in by_type[_ALL] if type(node) in wanted]
