"""Tests on torch's own version, decided for the targeted release.

Libraries keep compatibility branches: `if '1.5.0' in torch.__version__: warnings.warn(...)`,
`if version.parse(torch.__version__) >= version.parse("1.10"): ...`. Dynamo evaluates such a
test as a constant while tracing, so only the branch the running torch takes is traced; a
finding in the other one is false on that release. tcl decides them for the release it
targets (`--torch-version`, default the installed one), taking its version string as
"MAJOR.MINOR.0": plain string tests keep Python's semantics (`in`, `startswith`, and
lexicographic `<`), parsed versions (`version.parse`, `Version`, `LooseVersion`,
`parse_version`) compare release numbers. A test on anything else is left undecided.
"""

from __future__ import annotations

import operator
import re

import libcst as cst

TORCH_VERSION_NAMES = frozenset({"torch.__version__", "torch.version.__version__"})
PARSERS = ("version.parse", "Version", "LooseVersion", "parse_version", "StrictVersion")
_OPERATORS = {
    cst.LessThan: operator.lt, cst.LessThanEqual: operator.le, cst.GreaterThan: operator.gt,
    cst.GreaterThanEqual: operator.ge, cst.Equal: operator.eq, cst.NotEqual: operator.ne,
}


def version_truth(test: cst.BaseExpression, index, release: tuple[int, ...]) -> bool | None:
    """True/False when `test` is a test on torch's version that `release` decides."""
    text = f"{release[0]}.{release[1]}.0"
    if (isinstance(test, cst.Call) and isinstance(test.func, cst.Attribute)
            and test.func.attr.value in ("startswith", "endswith") and len(test.args) == 1
            and _is_torch_version(test.func.value, index)):
        prefix = _string(test.args[0].value)
        if prefix is None:
            return None
        return text.startswith(prefix) if test.func.attr.value == "startswith" else text.endswith(prefix)
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return None
    left, target = test.left, test.comparisons[0]
    right, op = target.comparator, target.operator
    if isinstance(op, (cst.In, cst.NotIn)):
        needle = _string(left)
        if needle is None or not _is_torch_version(right, index):
            return None
        return (needle in text) == isinstance(op, cst.In)
    compare = _OPERATORS.get(type(op))
    if compare is None:
        return None
    for a, b, flipped in ((left, right, False), (right, left, True)):
        if _is_torch_version(a, index):
            other = _string(b)
            if other is not None:
                return compare(other, text) if flipped else compare(text, other)
        parsed = _parsed_torch_version(a, index)
        if parsed:
            other = _parsed_literal(b, index)
            if other is not None:
                mine = _release_numbers(text)
                width = max(len(mine), len(other))
                mine, other = mine + (0,) * (width - len(mine)), other + (0,) * (width - len(other))
                return compare(other, mine) if flipped else compare(mine, other)
    return None


def _is_torch_version(node: cst.BaseExpression, index) -> bool:
    return (index.qualify(node) or "") in TORCH_VERSION_NAMES if isinstance(node, (cst.Name, cst.Attribute)) else False


def _string(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _parser_call(node: cst.BaseExpression, index) -> cst.BaseExpression | None:
    """The argument of `version.parse(x)` and the like, or None."""
    if not (isinstance(node, cst.Call) and len(node.args) == 1 and node.args[0].keyword is None):
        return None
    name = index.qualify(node.func) or ""
    if any(name == p or name.endswith("." + p) for p in PARSERS):
        return node.args[0].value
    return None


def _parsed_torch_version(node: cst.BaseExpression, index) -> bool:
    argument = _parser_call(node, index)
    return argument is not None and _is_torch_version(argument, index)


def _parsed_literal(node: cst.BaseExpression, index) -> tuple[int, ...] | None:
    argument = _parser_call(node, index)
    text = _string(argument) if argument is not None else None
    return _release_numbers(text) if text is not None else None


def _release_numbers(text: str) -> tuple[int, ...]:
    match = re.match(r"\s*v?(\d+(?:\.\d+)*)", text)
    return tuple(int(p) for p in match.group(1).split(".")) if match else ()
