"""What a function's own body says its parameters hold: tensor data, or plain Python values.

A parameter torch.compile fills from outside (`forward(self, x, n, state=None)`) is taken for a
tensor unless its name, default or annotation says otherwise (params._param_kind). That guess
is wrong for counts, options and containers, and every branch on them then reads as a branch
on tensor data. The body is better evidence, read here without running anything:

* tensor: an attribute only tensors have (`p.shape`, `p.view(...)`, `p.masked_fill(...)`:
  torch.Tensor's public attributes that list, dict, str, set, tuple, int, float and an Enum
  member lack, generated from torch in tcl/torch_facts), or `p @ q`; a tensor *method* counts
  only when called: `args.dim` or `config.size` read a field that happens to share its name;
* a Python number: `range(p)` (also `range(p + 1)`, `range(0, p, 2)`), `p.is_integer()`;
* a Python number: also `p` compared with a size in a test (`assert z.shape[-1] == length`,
  `if x.size(1) != n:`, `while len(xs) < n:`); a comparison used as a value (`mask = lengths ==
  x.shape[1]`) says nothing, since it may build a mask;
* a Python string: `p == "..."`, `p in ("a", "b")`, string methods (`p.startswith(...)`);
* a Python container or object: methods only list/dict/set/str have (`p.append`, `p.items()`);
* not a tensor: the bare parameter as a truth value (`if p:`, `while p:`, `not p`, `p and q`,
  `a if p else b`). Eager Python raises on the truth value of a tensor with more than one
  element, so code that tests `p` alone holds a flag, a number, None or a container there
  (a one-element tensor flag is the exception this gives up; any tensor use of `p` elsewhere
  still wins).

`torch_only_evidence` is the strict reading, for parameters nothing else types (a public
function's, a helper's whose callers say nothing): only an attribute torch.Tensor has and an
ndarray, a module or a path lack, or a first argument of a torch function that takes a tensor
there, counts.

Tensor evidence wins over any other: a tensor parameter compared with a string somewhere is
still a tensor. A parameter with no evidence either way keeps the kind the signature gave it.
Nested functions, lambdas and classes are their own scopes and are not read.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Iterable

import libcst as cst

from . import syntax_walk, torch_facts
from .dataflow import Kind

TENSOR, NUMBER, STRING, OBJECT = "tensor", "number", "string", "object"
STRING_METHODS = frozenset(name for name in dir(str) if not name.startswith("_"))
# What each kind of evidence makes of a parameter the signature left as tensor data.
EVIDENCE_KINDS = {NUMBER: Kind.META, STRING: Kind.META, OBJECT: Kind.UNKNOWN}
SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)  # their own scopes: not read


@lru_cache(maxsize=1)
def _attributes() -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    facts = torch_facts.all_releases()
    if facts is None:
        return frozenset(), frozenset(), frozenset()
    return facts.tensor_attributes, facts.python_attributes, facts.tensor_methods


def tensor_use(node: cst.Attribute, attributes: frozenset[str], methods: frozenset[str], called: set[int]) -> bool:
    """`p.shape`, `p.view(...)`: an attribute of `attributes` that only a tensor would be used
    through; a tensor method counts only when called, a field of that name does not."""
    attr = node.attr.value
    return attr in attributes and (attr not in methods or id(node) in called)


def parameter_evidence(body: cst.CSTNode, names: set[str], index) -> dict[str, str]:
    """{parameter: TENSOR | NUMBER | STRING | OBJECT} for the parameters the body gives evidence of."""
    tensor_attributes, python_attributes, tensor_methods = _attributes()
    called: set[int] = set()  # `p.attr` nodes that are called: a Call is popped before its func
    found: dict[str, set[str]] = {}

    def note(node: cst.BaseExpression, what: str) -> None:
        if isinstance(node, cst.Name) and node.value in names:
            found.setdefault(node.value, set()).add(what)

    stack: list[cst.CSTNode] = [body]
    while stack:
        node = stack.pop()
        kind = type(node)  # libcst's node classes are concrete and final: `is`, not isinstance()
        if kind is cst.Call and type(node.func) is cst.Attribute:
            called.add(id(node.func))
        if kind is cst.Attribute and type(node.value) is cst.Name:
            attr = node.attr.value
            if tensor_use(node, tensor_attributes, tensor_methods, called):
                note(node.value, TENSOR)
            elif attr in tensor_attributes:
                pass  # a tensor method's name read as a field: no evidence either way
            elif attr in python_attributes:
                note(node.value, STRING if attr in STRING_METHODS and attr not in ("count", "index") else
                     NUMBER if attr == "is_integer" else OBJECT)
        elif kind is cst.BinaryOperation and type(node.operator) is cst.MatrixMultiply:
            note(node.left, TENSOR)
            note(node.right, TENSOR)
        elif kind is cst.Call and type(node.func) is cst.Name and index.qualify(node.func) == "builtins.range":
            for arg in node.args:
                for operand in _int_operands(arg.value):
                    note(operand, NUMBER)
        elif kind is cst.Comparison:
            _compare_evidence(node, note)
        elif kind is cst.If or kind is cst.While or kind is cst.IfExp or kind is cst.Assert:
            if kind is not cst.Assert:
                note(node.test, OBJECT)
            for comparison in _tested_comparisons(node.test):
                _size_comparison_evidence(comparison, note)
        elif kind is cst.UnaryOperation and type(node.operator) is cst.Not:
            note(node.expression, OBJECT)
        elif kind is cst.BooleanOperation:
            note(node.left, OBJECT)
            note(node.right, OBJECT)
        stack.extend(_children(node))
    evidence = {}
    for name, kinds in found.items():
        what = TENSOR if TENSOR in kinds else _one(kinds)
        if what is not None:
            evidence[name] = what
    return evidence


def _one(kinds: set[str]) -> str | None:
    """The evidence, when it points one way (a number and a string at once: say nothing)."""
    others = kinds - {TENSOR}
    if len(others) == 1:
        return next(iter(others))
    return OBJECT if others == {OBJECT, STRING} else None


def _int_operands(value: cst.BaseExpression):
    """`n`, `n + 1`, `n // 2`: the names whose value the range bound is computed from."""
    if isinstance(value, cst.Name):
        yield value
    elif isinstance(value, cst.BinaryOperation):
        yield from _int_operands(value.left)
        yield from _int_operands(value.right)


def _compared_pairs(node: cst.Comparison):
    """(left, operator, right) of each link of a chained comparison (`a < b <= c`)."""
    left = node.left
    for target in node.comparisons:
        yield left, target.operator, target.comparator
        left = target.comparator


def _compare_evidence(node: cst.Comparison, note) -> None:
    for left, operator, right in _compared_pairs(node):
        if isinstance(operator, (cst.Equal, cst.NotEqual)):
            if _is_string(right):
                note(left, STRING)
            elif _is_string(left):
                note(right, STRING)
        elif isinstance(operator, (cst.In, cst.NotIn)) and isinstance(right, (cst.Tuple, cst.List, cst.Set)):
            elements = [e.value for e in right.elements if isinstance(e, cst.Element)]
            if elements and all(_is_string(e) for e in elements):
                note(left, STRING)


def _tested_comparisons(test: cst.BaseExpression):
    """The comparisons a test is made of (through `and` / `or` / `not`)."""
    if isinstance(test, cst.Comparison):
        yield test
    elif isinstance(test, cst.BooleanOperation):
        yield from _tested_comparisons(test.left)
        yield from _tested_comparisons(test.right)
    elif isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        yield from _tested_comparisons(test.expression)


_SIZE_METHODS = ("size", "dim", "numel")


def _is_size(node: cst.BaseExpression) -> bool:
    """`x.shape[i]`, `x.size(i)`, `x.dim()`, `x.ndim`, `len(x)`: a Python int of metadata."""
    if isinstance(node, cst.Subscript) and isinstance(node.value, cst.Attribute):
        return node.value.attr.value == "shape"
    if isinstance(node, cst.Attribute):
        return node.attr.value == "ndim"
    if isinstance(node, cst.Call):
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in _SIZE_METHODS:
            return func.attr.value != "size" or len(node.args) == 1
        return isinstance(func, cst.Name) and func.value == "len"
    return False


def _size_comparison_evidence(node: cst.Comparison, note) -> None:
    for left, operator, right in _compared_pairs(node):
        if not isinstance(operator, (cst.In, cst.NotIn, cst.Is, cst.IsNot)):
            if _is_size(left):
                note(right, NUMBER)
            elif _is_size(right):
                note(left, NUMBER)


def _is_string(node: cst.BaseExpression) -> bool:
    return isinstance(node, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString))


def _children(node: cst.CSTNode):
    """The child nodes, nested scopes left out (tcl/syntax_walk.py: from the dataclass fields,
    without libcst's visitor, which made this read ~17% of a whole `tcl check`)."""
    return [child for child in syntax_walk.children(node) if type(child) not in SCOPE_TYPES]


SCOPE_TYPES = frozenset(SCOPES)  # concrete classes: compared by type, not isinstance()


_SURE: dict[int, tuple[cst.CSTNode, frozenset[str]]] = {}


def torch_only_evidence(function) -> set[str]:
    """`_torch_only_evidence`, once per function node (a new set each call: callers add to it)."""
    kept = _SURE.get(id(function.node))
    if kept is None or kept[0] is not function.node:
        if len(_SURE) > 20_000:
            _SURE.clear()
        kept = _SURE[id(function.node)] = (function.node, frozenset(_torch_only_evidence(function)))
    return set(kept[1])


def _torch_only_evidence(function) -> set[str]:
    """Parameters (of a tcl FunctionInfo) the body uses as only a tensor can be used: an attribute torch.Tensor has and
    numpy.ndarray, nn.Module, paths, list, dict, str, ... lack (`x.masked_fill`, `x.unsqueeze`), or passed first
    to a torch function whose first parameter is a tensor (`torch.isnan(x)`, `F.relu(x)`; not
    `torch.zeros(n)` nor `torch.tensor(x)`): both read from torch (tcl/torch_facts)."""
    facts = torch_facts.all_releases()
    if facts is None:
        return set()
    only_tensor = facts.tensor_attributes - facts.shared_attributes
    names = {param.name.value for param in all_params(function.node.params)}
    index = function.index
    found: set[str] = set()
    called: set[int] = set()  # `p.attr` nodes that are called: a Call is popped before its func
    stack: list[cst.CSTNode] = [function.node.body]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is cst.Call and type(node.func) is cst.Attribute:
            called.add(id(node.func))
        if kind is cst.Attribute and type(node.value) is cst.Name:
            if node.value.value in names and tensor_use(node, only_tensor, facts.tensor_methods, called):
                found.add(node.value.value)
        elif kind is cst.Call and node.args and index is not None:
            first = node.args[0]
            if (first.keyword is None or first.keyword.value == "input") and first.star == "" \
                    and isinstance(first.value, cst.Name) and first.value.value in names \
                    and (index.qualify(node.func) or "") in facts.tensor_input_calls:
                found.add(first.value.value)
        stack.extend(_children(node))
    return found


def all_params(params: cst.Parameters) -> Iterable[cst.Param]:
    """Every parameter of a signature: positional-only, plain, keyword-only, *args, **kwargs."""
    yield from params.posonly_params
    yield from params.params
    yield from params.kwonly_params
    if isinstance(params.star_arg, cst.Param):
        yield params.star_arg
    if params.star_kwarg is not None:
        yield params.star_kwarg
