"""Which expressions are tensor *data* (Dynamo cannot branch on them) and which are metadata.

The lattice is small on purpose. UNKNOWN never produces a finding: a linter that guards
precision treats what it cannot see as harmless.
"""

from __future__ import annotations

import enum

import libcst as cst

from .names import dotted, string_value


class Kind(enum.Enum):
    TENSOR = "tensor"            # tensor data
    BOOL_TENSOR = "bool tensor"  # tensor data known to be boolean (a mask)
    SCALAR = "scalar"            # a Python number read out of tensor data (.item(), int(t))
    META = "meta"                # shapes, dtypes, flags, constants: Dynamo guards on these freely
    MODULE = "module"            # an nn.Module (calling it gives tensor data)
    UNKNOWN = "unknown"


TENSORISH = frozenset({Kind.TENSOR, Kind.BOOL_TENSOR})


def is_tensor(kind: Kind) -> bool:
    return kind in TENSORISH


def join(a: Kind, b: Kind) -> Kind:
    """Merge two facts about the same value: tensor data wins, then unknown."""
    if a == b:
        return a
    if is_tensor(a) and is_tensor(b):
        return Kind.TENSOR
    for kind in (Kind.TENSOR, Kind.BOOL_TENSOR, Kind.SCALAR, Kind.MODULE, Kind.UNKNOWN):
        if a == kind or b == kind:
            return kind if not is_tensor(kind) else Kind.TENSOR
    return Kind.META


# Attributes and methods of a tensor that give metadata Dynamo specialises or guards on.
META_ATTRIBUTES = frozenset({
    "shape", "dtype", "device", "ndim", "is_cuda", "is_sparse", "is_quantized", "is_meta",
    "requires_grad", "layout", "is_leaf", "names", "itemsize", "nbytes", "is_nested",
    "is_mps", "is_cpu", "is_xpu",
})
META_METHODS = frozenset({
    "size", "dim", "ndimension", "numel", "nelement", "stride", "is_contiguous",
    "element_size", "is_floating_point", "is_complex", "is_signed", "get_device",
    "storage_offset", "type", "is_pinned", "has_names", "is_set_to", "data_ptr",
    "untyped_storage", "is_inference",
    # Python bools read from the data (TCL211 reports the read): what follows has no tensor
    "equal", "allclose", "is_nonzero",
})
BOOL_METHODS = frozenset({
    "bool", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_not",
    "logical_xor", "isnan", "isinf", "isfinite", "isclose", "isneginf", "isposinf", "eq_",
    "ne_", "signbit",
})
# Methods that move or copy a tensor's elements without changing their values or dtype: a mask
# stays a mask through them (`mask.view(-1)`, `keep.unsqueeze(0)`).
LAYOUT_METHODS = frozenset({
    "view", "reshape", "flatten", "squeeze", "unsqueeze", "expand", "expand_as", "contiguous",
    "clone", "detach", "t", "transpose", "permute", "flip", "repeat", "view_as", "reshape_as",
})
# torch functions that return metadata or Python values rather than tensor data.
TORCH_META_FUNCTIONS = frozenset({
    "torch.is_tensor", "torch.is_floating_point", "torch.is_complex", "torch.numel",
    "torch.seed", "torch.initial_seed", "torch.get_num_threads", "torch.cuda.current_device",
    "torch.get_default_dtype", "torch.finfo", "torch.iinfo", "torch.Size", "torch.device",
    "torch.dtype", "torch.is_grad_enabled", "torch.is_autocast_enabled",
    "torch.is_inference_mode_enabled", "torch.cuda.is_available", "torch.cuda.device_count",
    "torch.compiler.is_compiling", "torch.compiler.is_dynamo_compiling",
    "torch._dynamo.is_compiling", "torch.jit.is_scripting", "torch.jit.is_tracing",
    "torch.is_nonzero", "torch.broadcast_shapes", "torch.result_type", "torch.promote_types",
    "torch.can_cast", "torch.get_autocast_gpu_dtype", "torch.get_autocast_dtype",
    "torch.are_deterministic_algorithms_enabled", "torch.backends.cuda.is_built",
    "torch.sym_int", "torch.sym_float", "torch.sym_max", "torch.sym_min", "torch.sym_not",
    "torch._check", "torch._check_is_size", "torch.cuda.get_device_capability",
    "torch.distributed.get_rank", "torch.distributed.get_world_size",
    "torch.distributed.is_initialized", "torch.distributed.is_available",
})
TORCH_BOOL_FUNCTIONS = frozenset({
    "torch.eq", "torch.ne", "torch.lt", "torch.le", "torch.gt", "torch.ge", "torch.isnan",
    "torch.isinf", "torch.isfinite", "torch.isclose", "torch.logical_and", "torch.logical_or",
    "torch.logical_not", "torch.logical_xor", "torch.isin", "torch.isneginf", "torch.isposinf",
    "torch.signbit",
})
# Python builtins whose result is metadata whatever the argument.
META_BUILTINS = frozenset({
    "builtins.len", "builtins.isinstance", "builtins.issubclass", "builtins.hasattr",
    "builtins.type", "builtins.id", "builtins.callable", "builtins.range", "builtins.enumerate",
    "builtins.zip", "builtins.str", "builtins.repr", "builtins.getattr",
})
SCALAR_BUILTINS = frozenset({"builtins.int", "builtins.float", "builtins.bool", "builtins.complex"})
TENSOR_PRESERVING_BUILTINS = frozenset({"builtins.max", "builtins.min", "builtins.sum", "builtins.abs", "builtins.pow", "builtins.round"})

NON_TENSOR_ANNOTATIONS = frozenset({"int", "float", "bool", "str", "bytes", "dict", "list", "tuple", "Callable"})


def annotation_kind(annotation: cst.Annotation | None) -> Kind | None:
    """Kind promised by a parameter annotation, or None when it says nothing useful."""
    if annotation is None:
        return None
    text = _annotation_text(annotation.annotation)
    if not text:
        return None
    if any(name in text for name in ("Tensor", "Parameter")):
        return Kind.TENSOR
    head = text.split("[", 1)[0].rsplit(".", 1)[-1]
    if head in NON_TENSOR_ANNOTATIONS or head in ("Optional", "Union") and not "Tensor" in text:
        return Kind.META
    if head in ("Module",) or text.endswith("Module"):
        return Kind.MODULE
    return Kind.UNKNOWN


TENSOR_TYPE_NAMES = frozenset({
    "Tensor", "FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor",
    "ShortTensor", "ByteTensor", "CharTensor", "BoolTensor", "Parameter",
})
PYTHON_SCALAR_TYPE_NAMES = frozenset({"int", "float", "bool", "str", "bytes", "complex"})


def field_annotation_kind(annotation: cst.Annotation) -> Kind | None:
    """Kind a class-body annotation promises for the attribute (`distances: Tensor` in a
    NamedTuple or dataclass), stricter than a parameter's: one tensor type, or one Python
    scalar type, optionally `Optional[...]` / `... | None`. A container of tensors
    (`Tuple[torch.FloatTensor, ...]`, HF outputs' hidden states) or any other class says
    nothing (None)."""
    node = annotation.annotation
    if isinstance(node, cst.Subscript) and (dotted(node.value) or "").rsplit(".", 1)[-1] == "Optional" \
            and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
        node = node.slice[0].slice.value
    elif isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.BitOr):
        if isinstance(node.right, cst.Name) and node.right.value == "None":
            node = node.left
        elif isinstance(node.left, cst.Name) and node.left.value == "None":
            node = node.right
    name = dotted(node) if isinstance(node, (cst.Name, cst.Attribute)) else None
    if name is None:
        return None
    last = name.rsplit(".", 1)[-1]
    if last in TENSOR_TYPE_NAMES:
        return Kind.TENSOR
    if name in PYTHON_SCALAR_TYPE_NAMES:
        return Kind.META
    return None


def _annotation_text(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.SimpleString):
        value = string_value(node)
        return value if isinstance(value, str) else ""
    if isinstance(node, (cst.Name, cst.Attribute)):
        return dotted(node) or ""
    if isinstance(node, cst.Subscript):
        inner = " ".join(
            _annotation_text(el.slice.value)
            for el in node.slice
            if isinstance(el.slice, cst.Index)
        )
        return f"{_annotation_text(node.value)}[{inner}]"
    if isinstance(node, cst.BinaryOperation):  # X | None
        return f"Union[{_annotation_text(node.left)} {_annotation_text(node.right)}]"
    return ""


# Exact types (libcst's node classes are final): a set lookup, not isinstance() per class.
_CONSTANT_TYPES = frozenset({cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString,
                             cst.Ellipsis})


def constant_kind(node: cst.BaseExpression) -> bool:
    node_type = type(node)
    return node_type in _CONSTANT_TYPES or (node_type is cst.Name and node.value in ("True", "False", "None"))
