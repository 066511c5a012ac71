"""Helper summaries per call site: what a helper returns for the argument kinds of *that* call.

The fixpoint in tcl/file_analysis.py walks each traced helper once, with its parameter kinds joined
over every call site, and that walk's return kind is what every caller sees. For a
pass-through helper such as `def default(val, d): return val if val is not None else d`, one
call with a tensor (`default(mask, torch.ones_like(x))`) then makes every other call tensor
data too (`scale = default(self.scale, 1.0)`; `if scale > 0.5:` flagged though Dynamo guards
on a Python float). Here, where the joined walk says the helper returns tensor data and the
call's own argument kinds differ from the joined ones, the helper is walked again with this
call's kinds (no rules run on that walk: findings come from the joined walk) and that walk's
return kind is the call's. Results are kept per (helper, argument kinds); a helper already
being summarised higher up the stack (recursion) keeps the joined answer, and so do helpers
longer than MAX_STATEMENTS statements, whose return rarely follows one argument and whose
walks would cost the most.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from .dataflow import Kind, is_tensor
from .params import helper_param_kinds

if TYPE_CHECKING:
    from .module_index import FunctionInfo
    from .walker import FunctionResult

MAX_STATEMENTS = 40


class CallSiteReturns:
    """`return_kind(function, site)` for the walkers of one file's analysis."""

    def __init__(
        self,
        joined: Callable[["FunctionInfo"], Kind],
        joined_param_kinds: Callable[["FunctionInfo"], dict | None],
        walk_with: Callable[["FunctionInfo", dict], "FunctionResult"],
    ) -> None:
        self.joined = joined  # the fixpoint's return kind of a helper
        self.joined_param_kinds = joined_param_kinds
        self.walk_with = walk_with  # a rule-free walk of a helper with these parameter kinds
        self.memo: dict[tuple, Kind] = {}
        self.active: set[tuple] = set()

    def return_kind(self, function: "FunctionInfo", site: tuple | None = None) -> Kind:
        """`site`: (positional argument kinds, keyword argument kinds) of the call."""
        base = self.joined(function)
        if site is None or not is_tensor(base) or _statements(function) > MAX_STATEMENTS:
            return base
        kinds = helper_param_kinds(function, [site])
        if kinds == self.joined_param_kinds(function):
            return base
        key = (id(function.node), id(function.receiver), frozenset(kinds.items()))
        kind = self.memo.get(key)
        if kind is not None:
            return kind
        if key in self.active:
            return base
        self.active.add(key)
        try:
            result = self.walk_with(function, kinds)
        finally:
            self.active.discard(key)
        kind = result.returns if result.returns is not None else base
        self.memo[key] = kind
        return kind


def _statements(function: "FunctionInfo") -> int:
    body = function.node.body
    return len(getattr(body, "body", ()))
