"""Line/column ranges, computed only for the top-level statements that hold a finding.

libcst's PositionProvider re-generates the whole module with position bookkeeping on every
node (about 1.7x the parse). Most statements hold no finding, so they are only rendered to
count their lines, and the bookkeeping runs on the few that matter.
"""

from __future__ import annotations

import libcst as cst
from libcst._position import CodeRange
from libcst.metadata.position_provider import PositionProvidingCodegenState


class _RangeSink:
    """Stands in for the provider object the codegen state writes ranges into."""

    def __init__(self) -> None:
        self._computed: dict[cst.CSTNode, CodeRange] = {}


def node_ranges(module: cst.Module, wanted_tops: set[int]) -> dict[cst.CSTNode, CodeRange]:
    """Ranges of every node inside the module-level statements whose id() is in wanted_tops."""
    sink = _RangeSink()
    state = PositionProvidingCodegenState(
        default_indent=module.default_indent,
        default_newline=module.default_newline,
        provider=sink,
    )
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
