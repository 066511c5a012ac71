"""Evaluates the Kind of an expression inside one traced function.

The evaluator reads the function's local environment (names -> Kind, updated as the walker
passes assignments), the class's `self.<attr>` assignments, and summaries of the file's other
functions (their return kinds).
"""

from __future__ import annotations

from typing import Callable

import libcst as cst

from .dataflow import (
    BOOL_METHODS, LAYOUT_METHODS, META_ATTRIBUTES, META_BUILTINS, META_METHODS, SCALAR_BUILTINS,
    TENSOR_PRESERVING_BUILTINS, TORCH_BOOL_FUNCTIONS, TORCH_META_FUNCTIONS, Kind, constant_kind,
    is_tensor, join,
)
from . import torch_facts
from .branches import not_tensors_when
from .module_index import ClassInfo, FunctionInfo, ModuleIndex, is_torch_module_base
from .names import int_literal

TENSOR_ATTRIBUTES_OF_MODULES = ("weight", "bias")
# torch namespaces whose functions mostly return objects, not tensor data.
TORCH_OBJECT_NAMESPACES = (
    "torch.cuda.", "torch.distributed.", "torch.backends.", "torch.jit.", "torch._dynamo.",
    "torch.compiler.", "torch.utils.", "torch.autograd.", "torch.optim.", "torch.profiler.",
    "torch.library.", "torch._C.", "torch.fx.", "torch.export.", "torch.overrides.",
)
SELF = "self"
MAPPING_METHODS = frozenset({"items", "keys", "values", "get", "pop", "setdefault", "update", "append", "extend", "copy_from"})


class KindEvaluator:
    def __init__(
        self,
        index: ModuleIndex,
        owner: ClassInfo | None,
        env: dict[str, Kind],
        resolve_call: Callable[[cst.Call], FunctionInfo | None],
        return_kind: Callable[[FunctionInfo, tuple | None], Kind],
        field_kind: Callable[[cst.Attribute], Kind | None] = lambda node: None,
    ) -> None:
        self.index = index
        self.owner = owner
        self.env = env
        self.resolve_call = resolve_call
        self.return_kind = return_kind
        # `n.distances` of an object whose class annotates the field (tcl/instances.py)
        self.field_kind = field_kind
        self._memo: dict[int, Kind] = {}
        # (dict name, string key) -> kind of what the function stored there so far
        # (`state["exp_avg_sq"] = torch.zeros([])`): the walker keeps it in source order.
        self.keyed: dict[tuple[str, str], Kind] = {}
        # name -> element kinds of a tuple it holds (a parameter every caller fills with a tuple
        # display, or a `*args` every caller fills by position): the walker's `tuple_env`.
        self.tuples: dict[str, tuple[Kind, ...]] = {}

    def forget(self) -> None:
        self._memo.clear()

    def __call__(self, node: cst.BaseExpression) -> Kind:
        key = id(node)
        kind = self._memo.get(key)
        if kind is None:
            kind = self._eval(node)
            self._memo[key] = kind
        return kind

    # -- dispatch ---------------------------------------------------------------------------
    def _eval(self, node: cst.BaseExpression) -> Kind:
        if constant_kind(node):
            return Kind.META
        method = getattr(self, f"_eval_{type(node).__name__}", None)
        return method(node) if method else Kind.UNKNOWN

    def _eval_Name(self, node: cst.Name) -> Kind:
        kind = self.env.get(node.value)
        if kind is not None:
            return kind
        if node.value == SELF and self.owner is not None:
            return Kind.MODULE if self.owner.is_module else Kind.UNKNOWN
        return Kind.UNKNOWN

    def _eval_FormattedString(self, node) -> Kind:
        return Kind.META

    def _eval_Lambda(self, node) -> Kind:
        return Kind.UNKNOWN

    def _eval_Attribute(self, node: cst.Attribute) -> Kind:
        attr = node.attr.value
        if attr.startswith("__") and attr.endswith("__"):
            # `w.__class__.__name__`, `torch.__version__`, `fn.__name__`: Python objects
            return Kind.META
        if isinstance(node.value, cst.Name) and node.value.value == SELF and SELF not in self.env:
            return self.self_attribute(attr)
        base = self(node.value)
        if is_tensor(base):
            if attr in META_ATTRIBUTES or attr.startswith(("is_", "has_")):
                return Kind.META
            return Kind.TENSOR
        if base == Kind.MODULE:
            if attr == "training":
                return Kind.META
            if attr in TENSOR_ATTRIBUTES_OF_MODULES or attr.endswith(("_weight", "_bias")):
                return Kind.TENSOR
            return Kind.UNKNOWN
        if base == Kind.META:
            return Kind.META
        return self.field_kind(node) or Kind.UNKNOWN

    def self_attribute(self, attr: str) -> Kind:
        if attr == "training":
            return Kind.META
        info = self.owner
        seen = set()
        while info is not None and info.name not in seen:
            seen.add(info.name)
            if attr in info.buffers:
                return Kind.TENSOR
            value = info.attributes.get(attr)
            if value is not None:
                return init_value_kind(value, self.index)
            method = info.methods.get(attr)
            if method is not None:
                return Kind.UNKNOWN
            info = next((self.index.classes[b] for b in info.bases if b in self.index.classes), None)
        return Kind.UNKNOWN

    def _tuple_element(self, node: cst.Subscript) -> Kind | None:
        """`args[0]`, `args[-1]` of a name holding a tuple of known element kinds; `args[i]`
        when every element is tensor data. None when the name holds no such tuple."""
        if not (isinstance(node.value, cst.Name) and node.value.value in self.tuples):
            return None
        elements = self.tuples[node.value.value]
        if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
            return Kind.UNKNOWN  # a slice of a tuple is a tuple
        position = int_literal(node.slice[0].slice.value)
        if position is not None:
            return elements[position] if -len(elements) <= position < len(elements) else Kind.UNKNOWN
        return Kind.TENSOR if elements and all(is_tensor(k) for k in elements) else Kind.UNKNOWN

    def tensor_tuple(self, node: cst.BaseExpression) -> bool:
        """A name holding a non-empty tuple of tensor data only (`*tensors` filled with tensors)."""
        elements = self.tuples.get(node.value) if isinstance(node, cst.Name) else None
        return bool(elements) and all(is_tensor(k) for k in elements)

    def _eval_Subscript(self, node: cst.Subscript) -> Kind:
        element = self._tuple_element(node)
        if element is not None:
            return element
        base = self(node.value)
        if base == Kind.BOOL_TENSOR:
            return Kind.BOOL_TENSOR
        if base in (Kind.TENSOR, Kind.META, Kind.MODULE, Kind.SCALAR):
            return base
        key = string_key(node)
        if key is not None and key in self.keyed:
            return self.keyed[key]
        if base == Kind.UNKNOWN and _tensor_indexed(node, self):
            return Kind.TENSOR
        return Kind.UNKNOWN

    def _eval_BinaryOperation(self, node: cst.BinaryOperation) -> Kind:
        left, right = self(node.left), self(node.right)
        if is_tensor(left) or is_tensor(right):
            bitwise = isinstance(node.operator, (cst.BitAnd, cst.BitOr, cst.BitXor))
            if bitwise and Kind.BOOL_TENSOR in (left, right):
                return Kind.BOOL_TENSOR
            return Kind.TENSOR
        return _combine_plain(left, right)

    def _eval_UnaryOperation(self, node: cst.UnaryOperation) -> Kind:
        operand = self(node.expression)
        if isinstance(node.operator, cst.Not):
            return Kind.SCALAR if is_tensor(operand) or operand == Kind.SCALAR else (
                Kind.META if operand == Kind.META else Kind.UNKNOWN
            )
        return operand

    def _eval_BooleanOperation(self, node: cst.BooleanOperation) -> Kind:
        return join(self(node.left), self(node.right))

    def _eval_Comparison(self, node: cst.Comparison) -> Kind:
        operators = [target.operator for target in node.comparisons]
        if all(isinstance(op, (cst.Is, cst.IsNot)) for op in operators):
            return Kind.META
        operands = [node.left] + [target.comparator for target in node.comparisons]
        if any(isinstance(o, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)) for o in operands):
            return Kind.META  # compared with a str: a tensor never equals one, so this is Python's bool
        if (len(operators) == 1 and isinstance(operators[0], (cst.Equal, cst.NotEqual))
                and any(isinstance(o, cst.Name) and o.value == "None" for o in operands)):
            # `if x == None:` / `l != None`: Tensor.__eq__(None) returns Python's False, so the
            # test is a bool whatever x is (measured on 2.13: no break, fullgraph=True included)
            return Kind.META
        kinds = [self(o) for o in operands]
        if any(isinstance(op, (cst.In, cst.NotIn)) for op in operators):
            return Kind.META if all(k == Kind.META for k in kinds) else Kind.UNKNOWN
        if any(is_tensor(k) for k in kinds):
            return Kind.BOOL_TENSOR
        result = kinds[0]
        for kind in kinds[1:]:
            result = _combine_plain(result, kind)
        return result

    def _eval_IfExp(self, node: cst.IfExp) -> Kind:
        kinds = []
        for value, outcome in ((node.body, True), (node.orelse, False)):
            # `r.size(-1) if isinstance(r, torch.Tensor) else r`: no tensor in the other branch
            if isinstance(value, cst.Name) and value.value in not_tensors_when(node.test, outcome, self.index):
                kinds.append(Kind.META)
            else:
                kinds.append(self(value))
        return join(*kinds)

    def _eval_Tuple(self, node: cst.Tuple) -> Kind:
        kinds = [self(el.value) for el in node.elements]
        return Kind.META if kinds and all(k == Kind.META for k in kinds) else Kind.UNKNOWN

    _eval_List = _eval_Tuple

    def _eval_Call(self, node: cst.Call) -> Kind:
        func = node.func
        qualname = self.index.qualify(func)
        if qualname:
            kind = self._known_function_kind(qualname, node)
            if kind is not None:
                return kind
        callee = self.resolve_call(node)
        if callee is not None:
            # A module built in traced code: an object, not what its __init__ returns.
            if callee.name == "__init__":
                return Kind.UNKNOWN
            # What the helper returns for *these* arguments (tcl/summaries.py): the kinds
            # of the positional and keyword arguments, as walker.CallSite begins.
            site = (
                [self(arg.value) for arg in node.args if arg.keyword is None and not arg.star],
                {arg.keyword.value: self(arg.value) for arg in node.args if arg.keyword is not None},
            )
            return self.return_kind(callee, site)
        if isinstance(func, cst.Attribute):
            kind = self._method_kind(func, node)
            if kind == Kind.UNKNOWN:
                kind = self._callable_attribute_kind(func, node) or kind
            return kind
        callee_kind = self(func)
        if callee_kind == Kind.MODULE:
            return Kind.TENSOR
        return Kind.UNKNOWN

    def _callable_attribute_kind(self, func: cst.Attribute, node: cst.Call) -> Kind | None:
        """`self.criterion(logits, labels)`: a callable stored on the module, fed tensors."""
        if not (isinstance(func.value, cst.Name) and func.value.value == SELF and self.owner is not None):
            return None
        if any(is_tensor(self(arg.value)) for arg in node.args):
            return Kind.TENSOR
        return None

    def _known_function_kind(self, qualname: str, node: cst.Call) -> Kind | None:
        if qualname.startswith("builtins."):
            first = self(node.args[0].value) if node.args else Kind.META
            if qualname in META_BUILTINS:
                return Kind.META
            if qualname in SCALAR_BUILTINS:
                return Kind.SCALAR if is_tensor(first) or first == Kind.SCALAR else first
            if qualname in TENSOR_PRESERVING_BUILTINS:
                # `sum(xs)` of a tuple of tensors adds tensors
                kinds = [Kind.TENSOR if self.tensor_tuple(arg.value) else self(arg.value)
                         for arg in node.args if arg.keyword is None]
                if any(is_tensor(k) for k in kinds):
                    return Kind.TENSOR
                return Kind.META if kinds and all(k == Kind.META for k in kinds) else Kind.UNKNOWN
            return Kind.UNKNOWN
        if returns_python_value(qualname):
            return Kind.META
        if qualname in TORCH_BOOL_FUNCTIONS:
            return Kind.BOOL_TENSOR
        if qualname.startswith("torch.nn.functional."):
            return Kind.TENSOR
        if qualname.startswith("torch.nn.") and is_torch_module_base(qualname):
            return Kind.MODULE
        if qualname.startswith("torch.") and any(p.startswith("__") and p.endswith("__")
                                                 for p in qualname.split(".")[1:-1]):
            return Kind.META  # `torch.__version__.split(".")`: a method of a Python object
        if qualname.startswith("torch.") and not qualname.startswith(TORCH_OBJECT_NAMESPACES):
            last = qualname.rsplit(".", 1)[-1]
            if last.endswith("Tensor") and qualname.count(".") == 1:
                return Kind.TENSOR  # torch.Tensor(...), torch.IntTensor([...]) build tensors
            if last[:1].isupper() or last.startswith("_"):
                return Kind.UNKNOWN
            if last in ("any", "all") or _bool_dtype(node, self.index.qualify):
                return Kind.BOOL_TENSOR  # `torch.ones(n, dtype=torch.bool)`: a mask
            return Kind.TENSOR
        if qualname.startswith("numpy."):
            # Dynamo traces NumPy by turning arrays (and NumPy results of Python numbers) into
            # tensors: `if np.sqrt(d) > 1` or a size from `np.prod(x.shape)` breaks the graph.
            last = qualname.rsplit(".", 1)[-1]
            if last in ("dtype", "finfo", "iinfo", "isscalar", "ndim", "shape") or last[:1].isupper():
                return Kind.META
            return Kind.TENSOR
        if qualname.startswith(("math.", "operator.")):
            return _all_meta_or_unknown([self(a.value) for a in node.args])
        return None

    def _method_kind(self, func: cst.Attribute, node: cst.Call) -> Kind:
        receiver = self(func.value)
        method = func.attr.value
        if is_tensor(receiver):
            # `x.type()` names the type (a str); `x.type(dtype)` converts: a tensor (the
            # dtype helper `x = x.type(dt)` of pytorch-metric-learning's to_dtype)
            if method in META_METHODS and not (method == "type" and node.args):
                return Kind.META
            if method in ("item", "tolist"):
                return Kind.SCALAR
            if method in BOOL_METHODS or method in ("any", "all"):
                return Kind.BOOL_TENSOR
            if receiver == Kind.BOOL_TENSOR and method in LAYOUT_METHODS:
                return Kind.BOOL_TENSOR
            if method in ("numpy", "backward", "register_hook", "__len__", "data_ptr") or method in MAPPING_METHODS:
                return Kind.UNKNOWN  # `.items()`/`.get()`: a model output or dict, not a tensor
            return Kind.TENSOR
        if receiver == Kind.MODULE:
            if method in ("forward", "__call__"):
                return Kind.TENSOR
            return Kind.UNKNOWN
        if receiver == Kind.META:
            return Kind.META
        if receiver == Kind.SCALAR:
            return Kind.SCALAR
        return Kind.UNKNOWN


def _bool_dtype(node: cst.Call, qualname) -> bool:
    """A call given `dtype=torch.bool`."""
    return any(arg.keyword is not None and arg.keyword.value == "dtype" and qualname(arg.value) == "torch.bool"
               for arg in node.args)


def _tensor_indexed(node: cst.Subscript, kind_of) -> bool:
    """`mat[rows, cols]` with tensor indexes, or `x[mask]` with a boolean tensor: only a tensor
    (or an array) takes such an index; a list or tuple raises on a tuple index or a mask of
    several elements. One integer tensor alone says nothing (a 0-d one indexes a list)."""
    indexes = [e.slice.value for e in node.slice if isinstance(e.slice, cst.Index)]
    kinds = [kind_of(index) for index in indexes]
    if len(node.slice) >= 2:
        return any(is_tensor(k) for k in kinds)
    return kinds == [Kind.BOOL_TENSOR]


def string_key(node: cst.Subscript) -> tuple[str, str] | None:
    """`state["exp_avg"]`: ("state", "exp_avg"); None for any other subscript."""
    if not isinstance(node.value, cst.Name) or len(node.slice) != 1:
        return None
    index = node.slice[0].slice
    if isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString):
        value = index.value.evaluated_value
        if isinstance(value, str):
            return node.value.value, value
    return None


def _combine_plain(a: Kind, b: Kind) -> Kind:
    if Kind.SCALAR in (a, b):
        return Kind.SCALAR
    if a == Kind.META and b == Kind.META:
        return Kind.META
    return Kind.UNKNOWN


def _all_meta_or_unknown(kinds: list[Kind]) -> Kind:
    if any(is_tensor(k) for k in kinds):
        return Kind.TENSOR
    if any(k == Kind.SCALAR for k in kinds):
        return Kind.SCALAR
    return Kind.META if all(k == Kind.META for k in kinds) else Kind.UNKNOWN


def returns_python_value(qualname: str) -> bool:
    """Whether a torch function returns metadata or a Python value, not tensor data: the known
    list, or torch's own annotations, stubs and docstrings (torch.onnx.is_in_onnx_export(),
    torch.xpu.is_available(), torch.numel(x), torch.broadcast_shapes(...))."""
    return qualname in TORCH_META_FUNCTIONS or (
        qualname.startswith("torch.") and torch_facts.return_kind(qualname) == "python")


def init_value_kind(value: cst.BaseExpression, index: ModuleIndex) -> Kind:
    """Kind of `self.x` from the expression assigned to it (usually in __init__)."""
    if constant_kind(value):
        return Kind.META
    if isinstance(value, cst.Call):
        qualname = index.qualify(value.func) or ""
        last = qualname.rsplit(".", 1)[-1]
        if qualname in ("torch.nn.Parameter", "torch.nn.parameter.Parameter", "torch.nn.Buffer"):
            return Kind.TENSOR
        if qualname.startswith("torch.nn.") and is_torch_module_base(qualname):
            return Kind.MODULE
        cls = index.classes.get(qualname)
        if cls is not None:
            return Kind.MODULE if cls.is_module else Kind.UNKNOWN
        if qualname in index.known_modules:
            return Kind.MODULE
        if returns_python_value(qualname):
            return Kind.META  # `self._batch_shape = torch.broadcast_shapes(...)` holds a torch.Size
        if qualname.startswith("torch.") and not qualname.startswith(TORCH_OBJECT_NAMESPACES):
            return Kind.UNKNOWN if last[:1].isupper() else Kind.TENSOR
        if qualname.startswith("builtins."):
            return Kind.META if last in ("int", "float", "bool", "str", "len") else Kind.UNKNOWN
        if last[:1].isupper():
            # An imported class: most attributes built from classes in model code are modules.
            return Kind.MODULE if _looks_like_module_class(last) else Kind.UNKNOWN
        return Kind.UNKNOWN
    if isinstance(value, cst.BinaryOperation):
        # `(torch.arange(a, b) % n)`: arithmetic on a tensor is a tensor; on numbers, a number.
        sides = (init_value_kind(value.left, index), init_value_kind(value.right, index))
        return Kind.TENSOR if Kind.TENSOR in sides else Kind.META
    if isinstance(value, cst.UnaryOperation):
        return Kind.TENSOR if init_value_kind(value.expression, index) == Kind.TENSOR else Kind.META
    if isinstance(value, (cst.Attribute, cst.Subscript)):
        # `self.eps = config.layer_norm_eps`: configuration, not tensor data.
        return Kind.META
    return Kind.UNKNOWN


_MODULE_CLASS_HINTS = (
    "Linear", "Conv", "Norm", "Embedding", "Dropout", "Attention", "MLP", "Mlp", "Block",
    "Layer", "Head", "Encoder", "Decoder", "Module", "Sequential", "List", "Dict", "Act",
    "ReLU", "GELU", "SiLU", "Pool", "Identity", "Router", "Expert", "Gate", "Stem", "Net",
)


def _looks_like_module_class(name: str) -> bool:
    return any(hint in name for hint in _MODULE_CLASS_HINTS)
