"""str methods called on a member of a str-valued Enum: Dynamo cannot trace them.

`class Mode(str, Enum)` (or `enum.StrEnum`) members are strs, and model code calls str methods
on them (`mode.lower()`, `self.padding.startswith("same")`). Measured on 2.13: every public
str method (upper, lower, startswith, split, replace, ...) on such a member breaks the graph in
default and fullgraph mode with GB0156 ("Unsupported method call"); `mode.value.lower()`,
`mode == "a"`, `mode in (...)`, `mode is Mode.A`, str(mode), f-strings and dict lookups by the
member trace. tests/test_rule_examples.py compiles the examples. A value is taken for a member
on evidence only: `Cls.MEMBER` of a class the checked tree defines as a str Enum (directly or
through its bases, in any checked file), a name bound to one, a parameter annotated with the
class or defaulting to a member, and `self.attr` that the class assigns a member or `Cls(...)`.
"""

from __future__ import annotations

import libcst as cst

from ..evidence import STRING_METHODS
from ..names import dotted
from ..params import all_params
from .base import Example, Rule


def _annotation_names(node: cst.BaseExpression) -> list[str]:
    """The dotted names in an annotation: `Mode`, `Optional[Mode]`, `"Mode"`, `Mode | None`."""
    if isinstance(node, cst.SimpleString):
        try:
            return _annotation_names(cst.parse_expression(node.evaluated_value))
        except Exception:  # not an expression: no names
            return []
    name = dotted(node)
    if name is not None:
        return [name]
    names: list[str] = []
    if isinstance(node, cst.Subscript):
        names += _annotation_names(node.value)
        for element in node.slice:
            if isinstance(element.slice, cst.Index):
                names += _annotation_names(element.slice.value)
    elif isinstance(node, cst.BinaryOperation):
        names += _annotation_names(node.left) + _annotation_names(node.right)
    return names


def _is_enum_class(node: cst.BaseExpression, ctx) -> bool:
    name = dotted(node)
    if name is None:
        return False
    return ctx.str_enum(name) or ctx.str_enum(ctx.qualname(node) or name)


def is_str_enum_member(node: cst.BaseExpression, ctx, depth: int = 0) -> bool:
    if depth > 3:
        return False
    if isinstance(node, cst.Attribute):
        if _is_enum_class(node.value, ctx) and node.attr.value.isidentifier() and node.attr.value[:1].isupper():
            return True  # `Mode.A`
        if isinstance(node.value, cst.Name) and node.value.value == "self" and ctx.function.owner is not None:
            assigned = ctx.function.owner.attributes.get(node.attr.value)
            return assigned is not None and _member_expression(assigned, ctx)
        return False
    if isinstance(node, cst.Name):
        origin = ctx.origins.get(node.value)
        if origin is not None and origin is not node:
            return is_str_enum_member(origin, ctx, depth + 1)
        if node.value in ctx.parameters and node.value not in ctx.assigned:
            return _enum_parameter(node.value, ctx)
    return False


def _member_expression(node: cst.BaseExpression, ctx) -> bool:
    """`Mode.A` or `Mode(value)`: what `self.mode = ...` assigns."""
    if isinstance(node, cst.Call):
        return _is_enum_class(node.func, ctx)
    return isinstance(node, cst.Attribute) and _is_enum_class(node.value, ctx)


def _enum_parameter(name: str, ctx) -> bool:
    for param in all_params(ctx.function.node.params):
        if param.name.value != name:
            continue
        if param.default is not None and _member_expression(param.default, ctx) \
                and not isinstance(param.default, cst.Call):
            return True
        if param.annotation is not None:
            return any(ctx.str_enum(n) for n in _annotation_names(param.annotation.annotation))
    return False


class StrEnumMethod(Rule):
    code = "TCL419"
    name = "str-method-on-str-enum"
    message = ".{method}() on a member of a str Enum cannot be traced by Dynamo and breaks the graph"
    fix = "call it on the member's value (mode.value.{method}(...)), or compare members directly (mode == Mode.A)"
    gb = (((2, 0), "GB0156"),)
    rationale = (
        "A member of `class Mode(str, Enum)` is a str, but Dynamo models it as an enum constant "
        "without str's methods: measured on 2.13, each public str method on it breaks with "
        "GB0156 in both modes, while .value's methods, ==, in, is, str() and f-strings trace."
    )
    VALID = [Example('''
import enum
import torch

class Mode(str, enum.Enum):
    SUM = "sum"
    MEAN = "mean"

@torch.compile
def fn(x, mode: Mode = Mode.SUM):
    if mode == Mode.MEAN or mode.value.upper() == "MEAN":
        return x.mean()
    return x.sum() + len(f"{mode}")
''')]
    INVALID = [Example('''
import enum
import torch

class Mode(str, enum.Enum):
    SUM = "sum"
    MEAN = "mean"

@torch.compile
def fn(x, mode: Mode = Mode.SUM):
    if mode.upper() == "MEAN":  # BREAK
        return x.mean()
    return x.sum()
'''), Example('''
import enum
import torch
from torch import nn

class Padding(str, enum.Enum):
    SAME = "same"
    VALID = "valid"

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.padding = Padding("same")

    def forward(self, x):
        if self.padding.startswith("s"):  # BREAK
            return x * 2
        return x
''', entry="Net")]

    def visit_Call(self, node: cst.Call, ctx) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in STRING_METHODS \
                and is_str_enum_member(func.value, ctx):
            ctx.report(self, node, self.message.format(method=func.attr.value))
