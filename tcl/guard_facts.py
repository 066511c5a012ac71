"""What an enclosing `if` says about the object's own attributes, carried into its methods.

Libraries guard idempotent operations twice: the caller tests a flag and the method tests it
again to warn when there is nothing to do (peft: `if self.merged: self.unmerge()` and, in
unmerge, `if not self.merged: warnings.warn("Already unmerged..."); return`). Dynamo traces the
method with the flag's value guarded, so the second test is decided and its branch never runs.
A *guard fact* is the truth of `self.attr` (or of `self.attr is None`) that the tests around a
`self.method(...)` call establish. Facts ride on the call site (tcl.walker.CallSite.facts); a
method gets the facts every one of its traced call sites agrees on (an entry, called from
outside, gets none), and decides `if` tests on those attributes with them. A fact about an
attribute stops holding once the walk sees it assigned (`self.merged = False`), in the caller
before the call or in the method before the test.
"""

from __future__ import annotations

import libcst as cst

from .kinds import SELF
from .params import UNKNOWN, KnownKeywords, literal_value

# (attribute, test) -> value: ("merged", "truth") -> True for `if self.merged:`,
# ("cache", "none") -> False for `if self.cache is not None:`.
Fact = tuple[tuple[str, str], bool]


def _self_attribute(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == SELF:
        return node.attr.value
    return None


def facts_if(test: cst.BaseExpression, outcome: bool) -> dict[tuple[str, str], bool]:
    """The guard facts that hold where `test` evaluated to `outcome`."""
    attr = _self_attribute(test)
    if attr is not None:
        return {(attr, "truth"): outcome}
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return facts_if(test.expression, not outcome)
    if isinstance(test, cst.BooleanOperation):
        both = isinstance(test.operator, cst.And) if outcome else isinstance(test.operator, cst.Or)
        if both:  # `a and b` true (or `a or b` false): each operand has that outcome
            return {**facts_if(test.left, outcome), **facts_if(test.right, outcome)}
        return {}
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        target = test.comparisons[0]
        attr = _self_attribute(test.left)
        if attr is not None and isinstance(target.comparator, cst.Name) and target.comparator.value == "None":
            if isinstance(target.operator, cst.Is):
                return {(attr, "none"): outcome}
            if isinstance(target.operator, cst.IsNot):
                return {(attr, "none"): not outcome}
    return {}


def _decide(test: cst.BaseExpression, atom) -> bool | None:
    """`test`'s value from `atom`'s answers for its operands: `not`, `and` and `or` combine
    them the way Python does (an undecided side leaves `a and b` undecided unless the other
    side is False)."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _decide(test.expression, atom)
        return None if inner is None else not inner
    if isinstance(test, cst.BooleanOperation):
        left, right = _decide(test.left, atom), _decide(test.right, atom)
        if isinstance(test.operator, cst.And):
            if left is False or right is False:
                return False
            return True if left is True and right is True else None
        if left is True or right is True:
            return True
        return False if left is False and right is False else None
    return atom(test)


def decided_by(test: cst.BaseExpression, facts: dict[tuple[str, str], bool]) -> bool | None:
    """The value of `test` under `facts`, or None when they do not decide it."""
    if not facts:
        return None
    return _decide(test, lambda atom: _fact_atom(atom, facts))


def _fact_atom(test: cst.BaseExpression, facts: dict[tuple[str, str], bool]) -> bool | None:
    attr = _self_attribute(test)
    if attr is not None:
        if (attr, "truth") in facts:
            return facts[(attr, "truth")]
        return False if facts.get((attr, "none")) is True else None
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        target = test.comparisons[0]
        attr = _self_attribute(test.left)
        if attr is not None and isinstance(target.comparator, cst.Name) and target.comparator.value == "None":
            known = facts.get((attr, "none"))
            if known is None and facts.get((attr, "truth")) is True:
                known = False  # a truthy attribute is not None
            if known is not None and isinstance(target.operator, (cst.Is, cst.IsNot)):
                return known if isinstance(target.operator, cst.Is) else not known
    return None


def assigned_attributes(target: cst.BaseExpression) -> list[str]:
    """The `self.attr` names an assignment target binds (`self.a = ...`, `self.a, b = ...`)."""
    attr = _self_attribute(target)
    if attr is not None:
        return [attr]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [a for element in target.elements for a in assigned_attributes(element.value)]
    return []


def is_own_method_call(call: cst.Call) -> bool:
    """`self.m(...)` or `super().m(...)`: the method runs on the same object."""
    func = call.func
    if not isinstance(func, cst.Attribute):
        return False
    receiver = func.value
    if isinstance(receiver, cst.Name):
        return receiver.value == SELF
    return (isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Name)
            and receiver.func.value == "super")


def agreed(sites_facts: list[frozenset]) -> frozenset:
    """The facts every call site carries."""
    if not sites_facts:
        return frozenset()
    common = set(sites_facts[0])
    for facts in sites_facts[1:]:
        common &= facts
    return frozenset(common)


class _NotNone:
    """The value of a parameter every traced caller fills with a size of its inputs (an int,
    never None): it decides `p is None` / `p is not None` and nothing else."""

    def __repr__(self) -> str:
        return "NOT_NONE"


NOT_NONE = _NotNone()


def constant_truth(test: cst.BaseExpression, constants: dict) -> bool | None:
    """The value of `test` when it tests a parameter every traced caller gives the same literal
    (`if last_dim_is_batch:`, `if mask is not None:`, `if mode == "sum":`), else None."""
    return _decide(test, lambda atom: _constant_atom(atom, constants))


def keyword_value(node: cst.BaseExpression, constants: dict):
    """(True, value) of `kwargs.get("key"[, default])` or `kwargs.pop("key", default)` where
    `kwargs` holds what every call passes (tcl/params.py KnownKeywords), else None."""
    if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
            and node.func.attr.value in ("get", "pop")
            and isinstance(node.func.value, cst.Name) and 1 <= len(node.args) <= 2
            and all(arg.keyword is None and not arg.star for arg in node.args)):
        return None
    known = constants.get(node.func.value.value)
    key = literal_value(node.args[0].value)
    if not isinstance(known, KnownKeywords) or key is None:
        return None
    present, value = known.lookup(key[1])
    if present is False:
        if len(node.args) == 2:
            return literal_value(node.args[1].value)
        return (True, None) if node.func.attr.value == "get" else None  # pop: KeyError
    return None if present is None else (True, value)


def _constant_atom(test: cst.BaseExpression, constants: dict) -> bool | None:
    if isinstance(test, cst.Name):
        value = constants.get(test.value, NOT_NONE)
        if value is NOT_NONE:
            return None
        if isinstance(value, KnownKeywords):  # `if kwargs:`
            return None if any(v is UNKNOWN for _, v in value.items) else bool(value.items)
        return bool(value)
    looked_up = keyword_value(test, constants)
    if looked_up is not None:
        return bool(looked_up[1])
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and not isinstance(test.left, cst.Name):
        target = test.comparisons[0]
        if isinstance(target.operator, (cst.In, cst.NotIn)):  # `"key" in kwargs`
            known = constants.get(target.comparator.value) if isinstance(target.comparator, cst.Name) else None
            key = literal_value(test.left)
            if not isinstance(known, KnownKeywords) or key is None:
                return None
            present = known.lookup(key[1])[0]
            return None if present is None else present == isinstance(target.operator, cst.In)
        looked_up = keyword_value(test.left, constants)
        if looked_up is None:
            return None
        return _compare(looked_up[1], test.comparisons[0])
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(test.left, cst.Name):
        if test.left.value not in constants:
            return None
        value, target = constants[test.left.value], test.comparisons[0]
        if value is NOT_NONE:  # a size: only its None-ness is known
            other = literal_value(target.comparator)
            if other is None or other[1] is not None:
                return None
            op = target.operator
            return False if isinstance(op, cst.Is) else True if isinstance(op, cst.IsNot) else None
        return _compare(value, target)
    return None


def _compare(value, target: cst.ComparisonTarget) -> bool | None:
    """`value <op> <literal>` for ==, !=, `is`/`is not` None or a bool; None otherwise."""
    other = literal_value(target.comparator)
    if other is None or isinstance(value, KnownKeywords):
        return None
    other, op = other[1], target.operator
    if isinstance(op, cst.Is):
        return value is other if other is None or isinstance(other, bool) else None
    if isinstance(op, cst.IsNot):
        return value is not other if other is None or isinstance(other, bool) else None
    if isinstance(op, cst.Equal):
        return value == other
    if isinstance(op, cst.NotEqual):
        return value != other
    return None
