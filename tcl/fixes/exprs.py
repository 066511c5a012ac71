"""Facts about expressions that decide whether a rewrite keeps eager results identical.

The three questions the branch rewrites ask:

* is a condition provably a 0-d tensor? (`x.sum() > 0`, `torch.isnan(x).any()`): then
  `torch.where(cond, a, b)` broadcasts nothing but `a` against `b`;
* are two values "the same tensor through pure elementwise ops" (`x.clamp(-6, 6)` and `x`)?
  Then they have the same shape, the same dtype (for every non-bool dtype) and evaluating the
  unused one can neither raise nor have an effect;
* is an expression free of side effects (no module calls, no RNG, no in-place ops, no I/O)?
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import libcst as cst

from ..names import dotted

# -- literals -----------------------------------------------------------------------------------


def number(node: cst.BaseExpression) -> int | float | None:
    """The value of an int/float literal, or of `-literal`."""
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
        inner = number(node.expression)
        if inner is None:
            return None
        return -inner if isinstance(node.operator, cst.Minus) else inner
    if isinstance(node, cst.Integer):
        return int(node.evaluated_value)
    if isinstance(node, cst.Float):
        return float(node.evaluated_value)
    return None


def is_number(node: cst.BaseExpression) -> bool:
    return number(node) is not None


def plain_reference(node: cst.BaseExpression) -> bool:
    """A name or attribute chain (`t`, `self.buf`): read several times, with no side effect."""
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name)


def exact_in_float_dtypes(value: int | float) -> bool:
    """Whether `t OP value` on a float16/bfloat16/float32/float64 (or integer) tensor gives the
    same answer as Python's `t.item() OP value`.

    PyTorch compares a tensor with a Python scalar in the tensor's dtype, Python compares
    doubles: `torch.tensor(0.1) > 0.1` is False but `float(torch.tensor(0.1)) > 0.1` is True.
    A constant with at most 8 significant bits inside float16's normal range is exact in every
    floating dtype, so both comparisons agree.
    """
    value = float(value)
    if value == 0.0 or math.isinf(value):
        return True
    if math.isnan(value):
        return False
    magnitude = abs(value)
    if not 2.0 ** -14 <= magnitude <= 65504.0:
        return False
    numerator, _ = magnitude.as_integer_ratio()
    significant = numerator.bit_length() - ((numerator & -numerator).bit_length() - 1)
    return significant <= 8


# -- code helpers -----------------------------------------------------------------------------

ATOMS = (
    cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer, cst.Float, cst.Imaginary,
    cst.SimpleString, cst.ConcatenatedString, cst.FormattedString, cst.List, cst.Dict, cst.Set,
    cst.ListComp, cst.SetComp, cst.DictComp,
)


def needs_parens(node: cst.BaseExpression) -> bool:
    """Whether `node` must be parenthesised before `.attr` is appended to it."""
    if getattr(node, "lpar", None):
        return False
    return not isinstance(node, ATOMS)


def receiver_code(node: cst.BaseExpression, code: str) -> str:
    return f"({code})" if needs_parens(node) else code


def argument_code(node: cst.BaseExpression, code: str) -> str:
    """Code that can stand as one argument of a call."""
    if getattr(node, "lpar", None):
        return code
    if isinstance(node, (cst.Tuple, cst.NamedExpr, cst.Yield, cst.StarredElement)):
        return f"({code})"
    return code


class _Names(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)
        return False


def names_in(node: cst.CSTNode) -> set[str]:
    """Every name an expression (or statement) reads or binds; attribute names and keywords excluded."""
    visitor = _Names()
    node.visit(visitor)
    return visitor.names


def positional(call: cst.Call) -> list[cst.BaseExpression]:
    return [a.value for a in call.args if a.keyword is None and not a.star]


def keywords(call: cst.Call) -> dict[str, cst.BaseExpression]:
    return {a.keyword.value: a.value for a in call.args if a.keyword is not None}


def method_name(call: cst.Call) -> str | None:
    return call.func.attr.value if isinstance(call.func, cst.Attribute) else None


def torch_function(call: cst.Call, qualify) -> str | None:
    """`sum` for torch.sum(...)/T.sum(...), `nn.functional.relu` for F.relu(...), else None."""
    name = qualify(call.func) or ""
    return name[len("torch."):] if name.startswith("torch.") else None


# -- 0-d tensors ------------------------------------------------------------------------------

REDUCTIONS = frozenset({
    "any", "all", "sum", "mean", "max", "min", "amax", "amin", "prod", "norm", "std", "var",
    "median", "nanmedian", "nansum", "nanmean", "count_nonzero", "argmax", "argmin",
})
ZERO_DIM_KEYWORDS = frozenset({"dtype"})
ELEMENTWISE = frozenset({
    "isnan", "isinf", "isfinite", "isneginf", "isposinf", "logical_not", "logical_and",
    "logical_or", "logical_xor", "abs", "neg", "eq", "ne", "gt", "ge", "lt", "le", "maximum",
    "minimum", "sign", "signbit", "sigmoid", "exp", "log", "sqrt", "float", "double", "half",
    "bool", "long", "int",
})
BOOL_OPS = frozenset({
    "any", "all", "isnan", "isinf", "isfinite", "isneginf", "isposinf", "logical_not",
    "logical_and", "logical_or", "logical_xor", "bool", "eq", "ne", "gt", "ge", "lt", "le",
    "isclose", "signbit", "isin",
})
COMPARISONS = (cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual, cst.Equal, cst.NotEqual)


def zero_dim(node: cst.BaseExpression, qualify) -> bool:
    """Provably a 0-d tensor: a full reduction, or elementwise ops of those and literals."""
    if isinstance(node, cst.Comparison):
        if len(node.comparisons) != 1 or not isinstance(node.comparisons[0].operator, COMPARISONS):
            return False
        return _zero_dim_operands([node.left, node.comparisons[0].comparator], qualify)
    if isinstance(node, cst.BinaryOperation):
        if not isinstance(node.operator, (cst.BitAnd, cst.BitOr, cst.BitXor, cst.Add, cst.Subtract, cst.Multiply, cst.Divide)):
            return False
        return _zero_dim_operands([node.left, node.right], qualify)
    if isinstance(node, cst.UnaryOperation):
        if isinstance(node.operator, (cst.BitInvert, cst.Minus, cst.Plus)):
            return zero_dim(node.expression, qualify)
        return False
    if isinstance(node, cst.Call):
        kw = keywords(node)
        args = positional(node)
        function = torch_function(node, qualify)
        if function is not None:
            if function in REDUCTIONS:
                return len(args) == 1 and set(kw) <= ZERO_DIM_KEYWORDS
            if function in ELEMENTWISE and args and not kw:
                return _zero_dim_operands(args, qualify)
            return False
        method = method_name(node)
        if method is None or not isinstance(node.func, cst.Attribute):
            return False
        if method in REDUCTIONS:
            return not args and set(kw) <= ZERO_DIM_KEYWORDS
        if method in ELEMENTWISE and not kw:
            return zero_dim(node.func.value, qualify) and all(is_number(a) or zero_dim(a, qualify) for a in args)
    return False


def _zero_dim_operands(operands, qualify) -> bool:
    flags = [zero_dim(o, qualify) for o in operands]
    return any(flags) and all(f or is_number(o) for f, o in zip(flags, operands))


def bool_tensor(node: cst.BaseExpression, qualify) -> bool:
    """Provably a bool tensor (a valid torch.where / torch.cond predicate dtype)."""
    if isinstance(node, cst.Comparison):
        return len(node.comparisons) == 1 and isinstance(node.comparisons[0].operator, COMPARISONS)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.BitInvert):
        return bool_tensor(node.expression, qualify)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.BitAnd, cst.BitOr, cst.BitXor)):
        return bool_tensor(node.left, qualify) and bool_tensor(node.right, qualify)
    if isinstance(node, cst.Call):
        function = torch_function(node, qualify)
        if function is not None:
            return function in BOOL_OPS
        return method_name(node) in BOOL_OPS
    return False


@dataclass
class Condition:
    """A Python test turned into a tensor predicate."""

    code: str
    zero_dim: bool
    exact: bool  # False when `and`/`or` now evaluate both operands
    bool_typed: bool


def tensor_condition(test: cst.BaseExpression, ctx) -> Condition | None:
    """`not a` -> torch.logical_not(a), `a and b` -> torch.logical_and(a, b), else the test itself
    (with `.bool()` when it is not provably boolean: the truth value of a one-element tensor is
    `t != 0`, NaN included)."""
    qualify = ctx.qualify
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = tensor_condition(test.expression, ctx)
        if inner is None:
            return None
        return Condition(f"torch.logical_not({inner.code})", inner.zero_dim, inner.exact, True)
    if isinstance(test, cst.BooleanOperation):
        if not all(tensor_valued(operand, ctx) for operand in boolean_operands(test)):
            return None  # the finding vouches for the whole test, not for each operand
        left, right = tensor_condition(test.left, ctx), tensor_condition(test.right, ctx)
        if left is None or right is None:
            return None
        function = "logical_and" if isinstance(test.operator, cst.And) else "logical_or"
        return Condition(f"torch.{function}({left.code}, {right.code})", left.zero_dim and right.zero_dim, False, True)
    if isinstance(test, cst.Comparison) and len(test.comparisons) != 1:
        return None  # a chained comparison is a Python `and`
    if isinstance(test, cst.Comparison) and not isinstance(test.comparisons[0].operator, COMPARISONS):
        return None  # `in` / `is`
    code = ctx.code(test).strip()
    is_bool = bool_tensor(test, qualify)
    if not is_bool:
        code = f"{receiver_code(test, code)}.bool()"
    return Condition(code, zero_dim(test, qualify), True, True)


def boolean_operands(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The operands of a `not`/`and`/`or` tree."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return boolean_operands(test.expression)
    if isinstance(test, cst.BooleanOperation):
        return boolean_operands(test.left) + boolean_operands(test.right)
    return [test]


TENSOR_FUNCTIONS = REDUCTIONS | ELEMENTWISE | BOOL_OPS


def tensor_valued(node: cst.BaseExpression, ctx) -> bool:
    """Provably a tensor, not a Python bool or number. torch.logical_and/or/not raise TypeError
    and `.bool()` AttributeError on `x.dtype == torch.float16` or `self.training` (transformers'
    fp16 clamp: `if h.dtype == torch.float16 and not torch.isfinite(h).all():`)."""
    qualify = ctx.qualify
    if ctx.is_tensor(node) or zero_dim(node, qualify):
        return True
    if isinstance(node, cst.Comparison):
        if len(node.comparisons) != 1 or not isinstance(node.comparisons[0].operator, COMPARISONS):
            return False
        return any(tensor_valued(side, ctx) for side in (node.left, node.comparisons[0].comparator))
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.BitInvert):
        return tensor_valued(node.expression, ctx)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.BitAnd, cst.BitOr, cst.BitXor)):
        return tensor_valued(node.left, ctx) or tensor_valued(node.right, ctx)
    if isinstance(node, cst.Call):
        function = torch_function(node, qualify)
        if function is not None:
            return function in TENSOR_FUNCTIONS
        method = method_name(node)
        return method in TENSOR_FUNCTIONS and tensor_valued(node.func.value, ctx)
    return False


# -- pure elementwise chains ------------------------------------------------------------------


@dataclass
class Chain:
    """`base` through shape-preserving elementwise ops with literal arguments."""

    base: cst.Name
    float_literal: bool  # an op takes a float constant: an integer tensor would be promoted


NO_ARGUMENT_OPS = frozenset({"abs", "neg", "negative", "relu", "clone", "contiguous", "sign", "detach", "positive"})
CLAMPS = frozenset({"clamp", "clip", "clamp_min", "clamp_max"})
CLAMP_KEYWORDS = frozenset({"min", "max"})


def chain(node: cst.BaseExpression, qualify) -> Chain | None:
    if isinstance(node, cst.Name):
        return None if node.value in ("True", "False", "None", "self") else Chain(node, False)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
        return chain(node.expression, qualify) if not is_number(node) else None
    if isinstance(node, cst.BinaryOperation):
        return _binary_chain(node, qualify)
    if isinstance(node, cst.Call):
        function = torch_function(node, qualify)
        args = positional(node)
        if function is not None:
            name = function.rsplit(".", 1)[-1]
            if function not in ("abs", "neg", "negative", "relu", "nn.functional.relu", "clone", "sign",
                                "clamp", "clip", "clamp_min", "clamp_max", "nan_to_num", "masked_fill"):
                return None
            if not args:
                return None
            inner = chain(args[0], qualify)
            return _op_chain(inner, name, args[1:], keywords(node), qualify) if inner else None
        method = method_name(node)
        if method is None:
            return None
        inner = chain(node.func.value, qualify)
        return _op_chain(inner, method, args, keywords(node), qualify) if inner else None
    return None


def _binary_chain(node: cst.BinaryOperation, qualify) -> Chain | None:
    op = node.operator
    left, right = node.left, node.right
    if isinstance(op, (cst.Add, cst.Subtract, cst.Multiply)):
        for value, other in ((left, right), (right, left)):
            inner = chain(value, qualify) if not is_number(value) else None
            if inner is not None and is_number(other):
                return Chain(inner.base, inner.float_literal or isinstance(number(other), float))
        a, b = chain(left, qualify), chain(right, qualify)
        if a and b and a.base.value == b.base.value:
            return Chain(a.base, a.float_literal or b.float_literal)
        return None
    if isinstance(op, cst.Power):
        inner = chain(left, qualify)
        exponent = number(right)
        if inner and isinstance(exponent, int) and exponent >= 0:
            return inner
        return None
    if isinstance(op, cst.Divide):
        inner = chain(left, qualify)
        if inner and is_number(right):
            return Chain(inner.base, True)  # true division promotes integer tensors
    return None


def _op_chain(inner: Chain, name: str, args, kw, qualify) -> Chain | None:
    if name in NO_ARGUMENT_OPS:
        return inner if not args and not kw else None
    if name in CLAMPS:
        values = list(args) + [v for k, v in kw.items() if k in CLAMP_KEYWORDS]
        if not values or len(values) != len(args) + len(kw) or len(values) > 2:
            return None
        if not all(is_number(v) for v in values):
            return None
        return Chain(inner.base, inner.float_literal or any(isinstance(number(v), float) for v in values))
    if name == "nan_to_num":
        if all(is_number(v) for v in list(args) + list(kw.values())):
            return inner  # keeps the dtype whatever the constants
        return None
    if name == "masked_fill":
        mask = args[0] if args else kw.get("mask")
        value = args[1] if len(args) > 1 else kw.get("value")
        if mask is None or value is None:
            return None
        base = mask_base(mask, qualify)
        if base is None or base.value != inner.base.value:
            return None  # a mask of another tensor may broadcast the result to a bigger shape
        fill = number(value)
        if isinstance(fill, int) and 0 <= fill <= 127:
            return inner  # representable in every dtype
        if fill is not None:
            return Chain(inner.base, True)  # -1e9 overflows float16, -1 overflows uint8
    return None


MASK_FUNCTIONS = frozenset({"isnan", "isinf", "isfinite", "isneginf", "isposinf", "signbit"})


def mask_base(node: cst.BaseExpression, qualify) -> cst.Name | None:
    """The tensor a boolean mask is an elementwise function of (so it has that tensor's shape)."""
    if isinstance(node, cst.Comparison):
        if len(node.comparisons) != 1 or not isinstance(node.comparisons[0].operator, COMPARISONS):
            return None
        left, right = node.left, node.comparisons[0].comparator
        for value, other in ((left, right), (right, left)):
            if is_number(other):
                inner = chain(value, qualify)
                return inner.base if inner else None
        return None
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.BitInvert):
        return mask_base(node.expression, qualify)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.BitAnd, cst.BitOr, cst.BitXor)):
        a, b = mask_base(node.left, qualify), mask_base(node.right, qualify)
        return a if a is not None and b is not None and a.value == b.value else None
    if isinstance(node, cst.Call):
        function = torch_function(node, qualify)
        args = positional(node)
        if function in MASK_FUNCTIONS and len(args) == 1 and not node.args[0].keyword:
            inner = chain(args[0], qualify)
            return inner.base if inner else None
        if function == "logical_not" and len(args) == 1:
            return mask_base(args[0], qualify)
        method = method_name(node)
        if function is None and method in MASK_FUNCTIONS and not args:
            inner = chain(node.func.value, qualify)
            return inner.base if inner else None
    return None


# -- side effects -----------------------------------------------------------------------------

RANDOM_OPS = frozenset({
    "rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "randperm",
    "bernoulli", "multinomial", "normal", "poisson", "dropout", "dropout1d", "dropout2d",
    "dropout3d", "alpha_dropout", "feature_alpha_dropout", "rrelu", "gumbel_softmax",
    "empty", "empty_like", "empty_strided", "manual_seed", "seed",
})
IMPURE_METHODS = frozenset({
    "append", "extend", "pop", "popitem", "insert", "remove", "clear", "update", "setdefault",
    "add", "discard", "write", "writelines", "send", "throw", "close", "backward",
    "register_hook", "register_forward_hook", "register_buffer", "register_parameter",
    "bernoulli", "multinomial", "set_", "data_ptr", "apply", "train", "eval", "cuda",
})
OBJECT_NAMESPACES = (
    "torch.cuda.", "torch.distributed.", "torch.backends.", "torch.jit.", "torch._dynamo.",
    "torch.compiler.", "torch.utils.", "torch.autograd.", "torch.optim.", "torch.profiler.",
    "torch.library.", "torch._C.", "torch.fx.", "torch.export.", "torch.random.", "torch.testing.",
)
PURE_BUILTINS = frozenset({
    "builtins.len", "builtins.abs", "builtins.min", "builtins.max", "builtins.round",
    "builtins.tuple", "builtins.list", "builtins.str", "builtins.repr", "builtins.isinstance",
    "builtins.float", "builtins.int", "builtins.bool", "builtins.type", "builtins.format",
    "builtins.sorted", "builtins.sum", "builtins.range", "builtins.enumerate", "builtins.zip",
})
PURE_MODULES = ("math.", "operator.")


class _Purity(cst.CSTVisitor):
    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.pure = True

    def _fail(self) -> bool:
        self.pure = False
        return False

    def visit_Call(self, node: cst.Call) -> bool:
        if not pure_call(node, self.ctx):
            return self._fail()
        return True

    def visit_Lambda(self, node) -> bool:
        return self._fail()

    def visit_Yield(self, node) -> bool:
        return self._fail()

    def visit_Await(self, node) -> bool:
        return self._fail()

    def visit_NamedExpr(self, node) -> bool:
        return self._fail()


def pure(node: cst.CSTNode, ctx) -> bool:
    """No side effects: no module or helper calls, no RNG, no in-place ops, no I/O."""
    visitor = _Purity(ctx)
    node.visit(visitor)
    return visitor.pure


def pure_call(call: cst.Call, ctx) -> bool:
    name = ctx.qualify(call.func) or ""
    last = name.rsplit(".", 1)[-1]
    if name.startswith("torch."):
        if name.startswith(OBJECT_NAMESPACES) or last in RANDOM_OPS or last.endswith("_"):
            return False
        if isinstance(call.func, cst.Attribute) and dotted(call.func.value) is not None:
            head = dotted(call.func.value).split(".")[0]
            if head not in ctx.index.imports.aliases:
                return _pure_method(call, ctx)  # a local named like a torch alias: a method
        return True
    if name in PURE_BUILTINS or name.startswith(PURE_MODULES):
        return True
    if not isinstance(call.func, cst.Attribute):
        return False  # a helper of this file or a callable object: anything can happen inside
    return _pure_method(call, ctx)


def _pure_method(call: cst.Call, ctx) -> bool:
    from ..dataflow import Kind, is_tensor

    method = call.func.attr.value
    if method.endswith("_") or method in IMPURE_METHODS or method in RANDOM_OPS:
        return False
    receiver = call.func.value
    if isinstance(receiver, cst.Name) and receiver.value in ("self", "cls"):
        return False  # a method or submodule of the model
    if isinstance(receiver, (cst.Name, cst.Attribute)):
        kind = ctx.kind(receiver)
        return is_tensor(kind) or kind == Kind.META
    return True  # the result of another (checked) call, a subscript, an operator
