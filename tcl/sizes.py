"""Size provenance: which Python ints are sizes of the inputs, and whether they change between calls.

The recompile rules (TCL505, TCL506) matter only for sizes that change from call to call: a
Python loop over `x.shape[0]` recompiles on every new batch, the same loop over
`self.weight.shape[0]` or over a channel count never does. This module answers, for an
expression in a traced function, "is this a size, and does it follow the inputs?", from the
evidence in the source:

* a *size* is `t.shape[i]`, `t.size(i)`, `len(t)` of a tensor `t`, a name bound to one (also
  `b, n, d = x.shape`, element by element), a parameter every traced caller fills with a size
  (`FunctionWalker.sized`), and their integer arithmetic, `int()`, `math.ceil/floor`, `min/max`
  and `abs`;
* a size of a tensor a module holds (`self.weight`, a name bound to it), of a tensor built
  from constants (`torch.zeros(3, 4)`), or of a helper's parameter every traced caller fills
  with such a tensor (`ctx.fixed_params`) is *fixed*: it is not reported; so is a size of a
  helper's parameter no caller says anything of, taken for a tensor only from how the helper
  uses it (tcl/params.py helper_param_kinds: where it comes from is unknown, so whether its
  sizes follow the inputs is too); `len()` of a shape is
  the rank and `len()` of a Python list or tuple counts its elements: neither is a size;
* it *varies* when it is dim 0 (the batch: `t.shape[0]`, `t.size(0)`, `len(t)`) or derives from
  one, or when the name the code gives it says it is a length (`seq_len`, `n_frames`, `T`);
  a name that says it is a width (`channels`, `head_dim`, `num_classes`) makes it fixed;
  any other dim is *unknown* (`None`), which TCL505 and TCL506 report (not *fixed*). The last
  dim is not taken for a width by position: it holds the features in Linear/LayerNorm code but
  the time or a spatial size in conv, audio and spectral code (session 34 measured it: five
  false findings gone on the samples read while developing, one true one lost on the held-back
  sample and none gone there, so it was reverted).

Names are evidence of the author's intent, not proof; each finding says which evidence it used.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst

from .dataflow import Kind, is_tensor
from .evidence import _children
from .names import int_literal, source_text
from .params import all_params

SIZE_OPERATORS = (cst.Add, cst.Subtract, cst.Multiply, cst.FloorDivide, cst.Modulo)
# Inside int()/math.ceil()/math.floor() a true division of a size is still integer-valued.
DIVIDING = SIZE_OPERATORS + (cst.Divide,)
_WRAPPERS = frozenset({"builtins.int", "math.ceil", "math.floor", "builtins.abs", "builtins.round"})
_MIN_MAX = frozenset({"builtins.min", "builtins.max"})
# Factories whose result has the sizes given as arguments: constant arguments, fixed sizes.
_FACTORIES = frozenset({
    "torch.zeros", "torch.ones", "torch.empty", "torch.eye", "torch.full", "torch.randn", "torch.rand",
    "torch.tensor", "torch.arange", "torch.linspace",
})
# Methods that keep their receiver's sizes, or permute them.
_VIEW_METHODS = frozenset({
    "to", "float", "double", "half", "bfloat16", "long", "int", "bool", "detach", "clone", "contiguous",
    "cpu", "cuda", "type_as", "requires_grad_", "t", "transpose", "permute", "unsqueeze", "squeeze",
})

# Words of a size's name. A length (changes with the data) or a width (fixed by the model).
_LENGTH_WORDS = frozenset({
    "batch", "bsz", "bs", "b", "seq", "seqlen", "len", "length", "lengths", "time", "t", "steps",
    "frames", "tokens", "n", "l", "samples", "nsamples", "timesteps", "height", "width", "positions",
    "queries", "keys", "points", "nodes", "rows", "views", "chunks",
})
_WIDTH_WORDS = frozenset({
    "c", "ch", "chan", "chans", "channel", "channels", "dim", "dims", "d", "hidden", "feature",
    "features", "feat", "feats", "head", "heads", "class", "classes", "emb", "embed", "embedding",
    "model", "groups", "group", "vocab", "filters", "kernel", "order", "rank", "bins", "codebook",
    "experts", "layers", "depth", "dimension", "units", "hd", "nh", "nc", "ndim",
})


@dataclass(frozen=True)
class Size:
    """A size expression: whether it changes between calls (True / False / None: unknown) and
    the evidence for that, as the finding states it."""

    varies: bool | None
    why: str


def _words(name: str) -> list[str]:
    parts = re.split(r"_+|(?<=[a-z])(?=[A-Z])", name)
    return [p.lower() for p in parts if p]


def varies_by_name(name: str) -> bool | None:
    """True for `seq_len`, `n_frames`, `T`; False for `channels`, `head_dim`, `num_classes`."""
    words = _words(name)
    if any(w in _WIDTH_WORDS for w in words):
        return False
    if any(w in _LENGTH_WORDS for w in words):
        return True
    return None


def held_by_module(node: cst.BaseExpression, ctx=None) -> bool:
    """`self.weight`, `self.pe[:, :10]`, `self.w.t()`: a parameter or buffer, or a view of one
    that no changing size cuts, whose sizes do not change between calls. A call of a
    submodule (`self.norm(x)`) gives a value of the input's sizes: not held."""
    if isinstance(node, cst.Attribute):
        value = node.value
        return (isinstance(value, cst.Name) and value.value == "self") or held_by_module(value, ctx)
    if isinstance(node, cst.Subscript):
        if ctx is not None and any(_cut_by_size(element, ctx) for element in node.slice):
            return False  # `self.mask[:seq_len]` follows the sequence
        return held_by_module(node.value, ctx)
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in _VIEW_METHODS:
        return held_by_module(node.func.value, ctx)
    return False


def _cut_by_size(element: cst.SubscriptElement, ctx) -> bool:
    parts = [element.slice.lower, element.slice.upper] if isinstance(element.slice, cst.Slice) else \
        [element.slice.value]
    for part in parts:
        if part is None:
            continue
        size = size_of(part, ctx)
        if size is not None and size.varies is not False:
            return True
    return False


def fixed_tensor(node: cst.BaseExpression, ctx, depth: int = 0, rebinding: str | None = None) -> bool:
    """A tensor whose sizes cannot follow the inputs: held by the module, built by a factory
    from constants, a parameter every traced caller fills with such a tensor
    (`ctx.fixed_params`), a name bound to one, a size-keeping method of one (`.to()`,
    `.float()`), a view or reshape to sizes the model fixes (`r.view(n, h, h)` with `n, h, _ =
    self.rotations.shape`), or its arithmetic with numbers and full reductions
    (`weights / weights.sum()`)."""
    if depth > 6:
        return False
    if held_by_module(node, ctx):
        return True
    if isinstance(node, cst.Name):
        name = node.value
        fixed_param = name in getattr(ctx, "fixed_params", ())  # parameter names only
        if name == rebinding:
            # `w = w / w.sum()`: the `w` inside is the binding before, the parameter's here
            return fixed_param
        origin = ctx.origins.get(name)
        if origin is None:
            return fixed_param and ctx.is_parameter(name)
        return fixed_tensor(origin, ctx, depth + 1, rebinding=name)
    if isinstance(node, cst.Call):
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in _VIEW_METHODS:
            return fixed_tensor(func.value, ctx, depth + 1, rebinding)
        if ctx.qualname(func) in _FACTORIES:
            return all(_constant(a.value) or _fixed_size(a.value, ctx, depth) for a in node.args if a.keyword is None)
        if isinstance(func, cst.Attribute) and func.attr.value in ("view", "reshape") and node.args \
                and id(node) not in _VIEWS_IN_PROGRESS:
            # `w.view(n, d, h, h)` with sizes the model fixes: the result's sizes are those,
            # whatever the receiver (not `-1`, which takes what is left of the receiver's).
            # A size of the view's own result (`x = x.view(x.shape[0], h)`) leads back here:
            # not fixed by this route.
            sizes = node.args[0].value.elements if len(node.args) == 1 and isinstance(
                node.args[0].value, (cst.Tuple, cst.List)) else node.args
            values = [getattr(a, "value", a) for a in sizes]
            _VIEWS_IN_PROGRESS.add(id(node))
            try:
                return all(a.keyword is None for a in node.args) and bool(values) and all(
                    (_constant(v) and not _minus_one(v)) or _fixed_size(v, ctx, depth) for v in values)
            finally:
                _VIEWS_IN_PROGRESS.discard(id(node))
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, DIVIDING + (cst.Power,)):
        operands = (node.left, node.right)
        return any(not _scalar_operand(o) for o in operands) and all(
            _scalar_operand(o) or fixed_tensor(o, ctx, depth + 1, rebinding) for o in operands)
    return False


_FULL_REDUCTIONS = frozenset({"sum", "mean", "max", "min", "norm", "prod", "std", "var", "amax", "amin"})


def _scalar_operand(node: cst.BaseExpression) -> bool:
    """A number, or a full reduction of a tensor (`w.sum()`, 0-d): it broadcasts without adding
    or changing a size."""
    if isinstance(node, (cst.Integer, cst.Float)):
        return True
    if isinstance(node, cst.UnaryOperation):
        return _scalar_operand(node.expression)
    return (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
            and node.func.attr.value in _FULL_REDUCTIONS and not node.args)


def _fixed_size(node: cst.BaseExpression, ctx, depth: int) -> bool:
    """`torch.zeros(self.w.shape[0], channels)`: a size argument that never changes."""
    size = size_of(node, ctx, depth + 1)
    return size is not None and size.varies is False


_VIEWS_IN_PROGRESS: set[int] = set()  # view calls fixed_tensor is deciding, up the stack


def _minus_one(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) \
        and isinstance(node.expression, cst.Integer) and node.expression.value == "1"


def _constant(node: cst.BaseExpression) -> bool:
    if isinstance(node, (cst.Integer, cst.Float, cst.SimpleString)):
        return True
    if isinstance(node, (cst.Tuple, cst.List)):
        return all(_constant(e.value) for e in node.elements)
    if isinstance(node, cst.UnaryOperation):
        return _constant(node.expression)
    return False


# Factories whose positional arguments are the sizes, one per dim (or one tuple of them).
_SHAPED_FACTORIES = frozenset({"torch.zeros", "torch.ones", "torch.empty", "torch.randn", "torch.rand"})


# `-1` in a reshape: a size the others imply, known to nobody here.
_INFERRED = cst.Name("__inferred_size__")
# Reductions over one dim: the result has the input's dims without it (no keepdim).
_DIM_REDUCTIONS = frozenset({
    "sum", "mean", "prod", "amax", "amin", "argmax", "argmin", "all", "any", "logsumexp", "nansum",
})
_PAIR_REDUCTIONS = frozenset({"max", "min", "median", "mode"})  # (values, indices)


def _reduced_dims(call: cst.Call, ctx, depth: int) -> list[cst.BaseExpression] | None:
    """`t.sum(0)`, `t.max(0)` (either element of its pair): t's dims without the reduced one."""
    args = [a for a in call.args if not a.star]
    dim = [a.value for a in args if a.keyword is None] + [a.value for a in args if a.keyword and a.keyword.value == "dim"]
    if len(dim) != 1 or len(args) != 1 or int_literal(dim[0]) is None:
        return None  # no dim (a full reduction), keepdim, or a dim tcl cannot read
    inner = _factory_dims(call.func.value, ctx, depth + 1)
    d = int_literal(dim[0])
    if inner is None or not -len(inner) <= d < len(inner):
        return None
    d %= len(inner)
    return inner[:d] + inner[d + 1:]


_CONCATENATIONS = frozenset({"torch.cat", "torch.concat", "torch.concatenate"})


def _concatenated_dims(call: cst.Call, ctx, depth: int) -> list[cst.BaseExpression] | None:
    """`torch.cat([a.reshape(-1, d), b.reshape(-1, d)])`: the first piece's dims, the one joined
    along unknown (the pieces must agree on every other dim, or cat raises)."""
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    keyword = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    pieces = positional[0] if positional else keyword.get("tensors")
    dim_node = positional[1] if len(positional) > 1 else keyword.get("dim")
    dim = 0 if dim_node is None else int_literal(dim_node)
    if not isinstance(pieces, (cst.List, cst.Tuple)) or not pieces.elements or dim is None \
            or isinstance(pieces.elements[0], cst.StarredElement):
        return None
    dims = _factory_dims(pieces.elements[0].value, ctx, depth + 1)
    if dims is None or not -len(dims) <= dim < len(dims):
        return None
    dims = list(dims)
    dims[dim] = _INFERRED
    return dims


def _factory_dims(tensor: cst.BaseExpression, ctx, depth: int = 0) -> list[cst.BaseExpression] | None:
    """The size arguments of the factory that built `tensor` (`h = torch.zeros(L * D, b, H)`),
    or of the reshape / view that last gave it its shape (`x.reshape(-1, self.num_dims)`; a
    `-1` is known to nobody), through names, size-keeping methods and reductions over one dim
    (`x.max(0)[0]`, `x.sum(0)`: the other dims); None when it was not built that way."""
    if depth > 6:
        return None
    if isinstance(tensor, cst.Name):
        origin = ctx.origins.get(tensor.value)
        return _factory_dims(origin, ctx, depth + 1) if origin is not None else None
    if isinstance(tensor, cst.Subscript) and len(tensor.slice) == 1 and isinstance(tensor.slice[0].slice, cst.Index) \
            and int_literal(tensor.slice[0].slice.value) in (0, 1):
        pair = tensor.value  # `x.max(0)[0]`
        if isinstance(pair, cst.Call) and isinstance(pair.func, cst.Attribute) and pair.func.attr.value in _PAIR_REDUCTIONS:
            return _reduced_dims(pair, ctx, depth)
        return None
    if isinstance(tensor, cst.Attribute) and tensor.attr.value in ("values", "indices"):
        pair = tensor.value  # `x.max(0).values`
        if isinstance(pair, cst.Call) and isinstance(pair.func, cst.Attribute) and pair.func.attr.value in _PAIR_REDUCTIONS:
            return _reduced_dims(pair, ctx, depth)
        return None
    if not isinstance(tensor, cst.Call):
        return None
    if isinstance(tensor.func, cst.Attribute) and tensor.func.attr.value in _VIEW_METHODS - {"t", "transpose", "permute", "unsqueeze", "squeeze"}:
        return _factory_dims(tensor.func.value, ctx, depth + 1)
    if isinstance(tensor.func, cst.Attribute) and tensor.func.attr.value in ("reshape", "view") \
            and tensor.args and not any(a.star or a.keyword for a in tensor.args):
        sizes = [a.value for a in tensor.args]
        if len(sizes) == 1 and isinstance(sizes[0], (cst.Tuple, cst.List)):
            sizes = [e.value for e in sizes[0].elements]
        if len(sizes) == 1 and not isinstance(sizes[0], cst.Integer):
            return None  # `x.view(shape)`, `x.view(torch.float16)`: not sizes tcl can read
        return [_INFERRED if int_literal(size) == -1 else size for size in sizes]
    if isinstance(tensor.func, cst.Attribute) and tensor.func.attr.value in _DIM_REDUCTIONS:
        return _reduced_dims(tensor, ctx, depth)
    if ctx.qualname(tensor.func) in _CONCATENATIONS:
        return _concatenated_dims(tensor, ctx, depth)
    if ctx.qualname(tensor.func) not in _SHAPED_FACTORIES:
        return None
    sizes = [a.value for a in tensor.args if a.keyword is None and not a.star]
    if len(sizes) == 1 and isinstance(sizes[0], (cst.Tuple, cst.List)):
        sizes = [e.value for e in sizes[0].elements]
    return sizes or None


def module_constant(node: cst.BaseExpression, ctx, depth: int = 0) -> bool:
    """An int the module's configuration fixes: a literal, `self.num_layers`, a name bound to
    one, and their arithmetic or conditional choice (`2 if self.bidirectional else 1`)."""
    if depth > 6:
        return False
    if int_literal(node) is not None:
        return True
    if isinstance(node, cst.Attribute):
        return isinstance(node.value, cst.Name) and node.value.value == "self" and not is_tensor(ctx.kind(node))
    if isinstance(node, cst.Name):
        origin = ctx.origins.get(node.value)
        return origin is not None and module_constant(origin, ctx, depth + 1)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, SIZE_OPERATORS):
        return module_constant(node.left, ctx, depth + 1) and module_constant(node.right, ctx, depth + 1)
    if isinstance(node, cst.IfExp):
        return module_constant(node.body, ctx, depth + 1) and module_constant(node.orelse, ctx, depth + 1)
    return False


_DIMS_IN_PROGRESS: set[int] = set()  # size arguments _dim_size is deciding, up the stack


def length_fixed(tensor: cst.BaseExpression, ctx) -> bool:
    """Whether dim 0 of `tensor` (the length of its `.tolist()`) provably does not change
    between calls: a module's tensor, or a dim the model fixes (`x.reshape(-1, self.d).max(0)[0]`)."""
    size = _dim_size(tensor, 0, ctx)
    return size is not None and size.varies is False


def _dim_size(tensor: cst.BaseExpression, dim: int | None, ctx) -> Size | None:
    if not is_tensor(ctx.kind(tensor)):
        return None
    key = (id(tensor), dim)
    if key in _DIM_SIZES_IN_PROGRESS:
        # Origins are one per name, not per program point, so a size read before the name is
        # rebound leads back here: `n = x.shape[1] - x.shape[1] % k; x = x[:, :n]` asks for
        # dim 1 of `x`, whose origin is cut by `n`. Nothing more is known on this route.
        return Size(None, f"dim {dim} of {source_text(tensor)}" if dim is not None else f"a size of {source_text(tensor)}")
    _DIM_SIZES_IN_PROGRESS.add(key)
    try:
        return _dim_size_of(tensor, dim, ctx)
    finally:
        _DIM_SIZES_IN_PROGRESS.discard(key)


_DIM_SIZES_IN_PROGRESS: set[tuple[int, int | None]] = set()  # (tensor node, dim) _dim_size is deciding


def _dim_size_of(tensor: cst.BaseExpression, dim: int | None, ctx) -> Size:
    if fixed_tensor(tensor, ctx):
        return Size(False, f"a size of {source_text(tensor)}, which the module holds or builds from constants")
    dims = _factory_dims(tensor, ctx) if dim is not None else None
    if dims is not None and -len(dims) <= dim < len(dims):
        # `h_0 = torch.zeros(self.num_layers * num_directions, batch, hidden)`: dim 0 is what
        # the factory was given, not the batch
        given = dims[dim]
        if module_constant(given, ctx):
            return Size(False, f"dim {dim} of {source_text(tensor)}, built as {source_text(given)}")
        # `x = x.view(x.shape[0], 4)`: the size given is a size of the name the view rebinds,
        # which leads back here; decided by the other routes below instead.
        if id(given) not in _DIMS_IN_PROGRESS:
            _DIMS_IN_PROGRESS.add(id(given))
            try:
                found = size_of(given, ctx)
            finally:
                _DIMS_IN_PROGRESS.discard(id(given))
            if found is not None:
                return found
    if dim == 0:
        return Size(True, f"dim 0 of {source_text(tensor)} (the batch)")
    return Size(None, f"dim {dim} of {source_text(tensor)}" if dim is not None else f"a size of {source_text(tensor)}")


_CONTAINER_ANNOTATIONS = frozenset({
    "list", "List", "tuple", "Tuple", "Sequence", "Iterable", "dict", "Dict", "Mapping", "MutableSequence",
})
_CONTAINER_WORDS = frozenset({"tuple", "list", "dict", "pairs"})


def python_container(node: cst.BaseExpression, ctx) -> bool:
    """A list, tuple or dict of tensors (`xs: List[Tensor]`, `indices_tuple`, a display): its
    len() counts elements, not a tensor's rows (the kinds call it tensor data all the same)."""
    if not isinstance(node, cst.Name):
        return isinstance(node, (cst.List, cst.Tuple, cst.ListComp, cst.Dict, cst.DictComp))
    name = node.value
    if name in getattr(ctx, "tuple_env", {}) or any(w in _CONTAINER_WORDS for w in _words(name)):
        return True
    if name in _sequence_names(ctx):
        return True
    origin = ctx.origins.get(name)
    if origin is not None:
        return python_container(origin, ctx) if not isinstance(origin, cst.Name) else False
    if ctx.is_parameter(name):
        for param in all_params(ctx.function.node.params):
            if param.name.value == name and param.annotation is not None:
                head = param.annotation.annotation
                head = head.value if isinstance(head, cst.Subscript) else head
                text = head.attr.value if isinstance(head, cst.Attribute) else getattr(head, "value", "")
                return text in _CONTAINER_ANNOTATIONS
    return False


_SEQUENCE_TYPES = frozenset({"builtins.list", "builtins.tuple", "typing.List", "typing.Tuple", "typing.Sequence",
                             "collections.abc.Sequence", "typing.MutableSequence"})
# torch functions whose first argument is a sequence of tensors (a tensor there is a TypeError)
_SEQUENCE_CONSUMERS = frozenset({
    "torch.cat", "torch.concat", "torch.concatenate", "torch.stack", "torch.hstack", "torch.vstack",
    "torch.dstack", "torch.column_stack", "torch.row_stack",
})
_LIST_METHODS = frozenset({"append", "extend", "insert", "pop", "remove"})


def _sequence_names(ctx) -> frozenset[str]:
    """Names the function itself shows to be Python lists or tuples: tested with
    `isinstance(name, (list, tuple))`, given whole to `torch.cat` / `torch.stack`, or grown and
    shrunk with list methods. Computed once per walk."""
    memo = getattr(ctx, "memo", None)
    if memo is not None and "sizes.sequences" in memo:
        return memo["sizes.sequences"]
    names: set[str] = set()
    function = getattr(ctx, "function", None)
    if function is not None:
        for call in _calls(function.node.body):
            func = call.func
            positional = [a.value for a in call.args if a.keyword is None and not a.star]
            if isinstance(func, cst.Attribute):
                if func.attr.value in _LIST_METHODS and isinstance(func.value, cst.Name):
                    names.add(func.value.value)
                    continue
            qualname = ctx.qualname(func)
            if qualname == "builtins.isinstance" and len(positional) == 2 and isinstance(positional[0], cst.Name):
                types = positional[1].elements if isinstance(positional[1], cst.Tuple) else [positional[1]]
                typed = [ctx.qualname(t.value if isinstance(t, cst.Element) else t) for t in types]
                if any(t in _SEQUENCE_TYPES for t in typed):
                    names.add(positional[0].value)
            elif qualname in _SEQUENCE_CONSUMERS and positional and isinstance(positional[0], cst.Name):
                names.add(positional[0].value)
    found = frozenset(names)
    if memo is not None:
        memo["sizes.sequences"] = found
    return found


def _calls(node: cst.CSTNode):
    """Every call under `node`; nested defs, lambdas and classes are scopes of their own."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Call):
            yield current
        stack.extend(_children(current))


def _shape_value(node: cst.BaseExpression, ctx, depth: int = 0) -> bool:
    """`x.shape`, `x.size()`, `dist.event_shape`, a name bound to one: a torch.Size, whose len()
    is the rank -- fixed by the model whatever the sizes."""
    if depth > 4:
        return False
    if isinstance(node, cst.Attribute):
        return node.attr.value == "shape" or node.attr.value.endswith("_shape")
    if isinstance(node, cst.Call):
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "size" and not node.args:
            return True
        return ctx.qualname(func) == "torch.Size"
    if isinstance(node, cst.Name):
        origin = ctx.origins.get(node.value)
        return origin is not None and _shape_value(origin, ctx, depth + 1)
    return False


_SEQUENCE_BUILDERS = {"builtins.list": "list", "builtins.tuple": "tuple"}


def size_sequence(node: cst.BaseExpression, ctx) -> tuple[cst.BaseExpression, str] | None:
    """(the tensor, "list" or "tuple") when `node` lists a tensor's sizes: `list(t.size())`,
    `tuple(t.shape)`, or `t.shape` / `t.size()` (a torch.Size, a tuple). Python compares a
    sequence with a display element by element only when both are lists or both tuples
    (`torch.Size([2, 3]) == [2, 3]` is False)."""
    qualify = getattr(ctx, "qualname", None) or ctx.qualify  # a rule's walker or a fixer's context
    builder = _SEQUENCE_BUILDERS.get(qualify(node.func)) if isinstance(node, cst.Call) and len(node.args) == 1 else None
    if builder is not None:
        tensor = whole_shape(node.args[0].value, ctx)
        return (tensor, builder) if tensor is not None else None
    tensor = whole_shape(node, ctx)
    return (tensor, "tuple") if tensor is not None else None


def whole_shape(node: cst.BaseExpression, ctx) -> cst.BaseExpression | None:
    """The tensor of `t.shape` / `t.size()` (a tuple of sizes), else None."""
    if isinstance(node, cst.Attribute) and node.attr.value == "shape" and is_tensor(ctx.kind(node.value)):
        return node.value
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "size" \
            and not node.args and is_tensor(ctx.kind(node.func.value)):
        return node.func.value
    return None


def size_of(node: cst.BaseExpression, ctx, depth: int = 0, operators=SIZE_OPERATORS) -> Size | None:
    """The Size of `node` when it is a size expression (see the module docstring), else None."""
    if depth > 8:
        return None
    if isinstance(node, cst.Name):
        return _named_size(node.value, ctx, depth)
    if isinstance(node, cst.Subscript):
        value = node.value
        if (isinstance(value, cst.Attribute) and value.attr.value == "shape" and len(node.slice) == 1
                and isinstance(node.slice[0].slice, cst.Index)):
            return _dim_size(value.value, int_literal(node.slice[0].slice.value), ctx)
        return None
    if isinstance(node, cst.Call):
        func = node.func
        positional = [a.value for a in node.args if a.keyword is None and not a.star]
        if isinstance(func, cst.Attribute) and func.attr.value == "size" and len(node.args) == 1 and positional:
            return _dim_size(func.value, int_literal(positional[0]), ctx)
        qualname = ctx.qualname(func)
        if qualname == "builtins.len" and len(positional) == 1:
            if _shape_value(positional[0], ctx) or python_container(positional[0], ctx):
                return None  # a rank, or a count of elements: not a size of the inputs
            return _dim_size(positional[0], 0, ctx)
        if qualname in _WRAPPERS and positional:
            return size_of(positional[0], ctx, depth + 1, DIVIDING)
        if qualname in _MIN_MAX and len(positional) >= 2:
            # `min(seq_len, self.max_len)`: still the size whenever it is the smaller one.
            sizes = [s for s in (size_of(a, ctx, depth + 1) for a in positional) if s is not None]
            return _strongest(sizes)
        return None
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, operators):
        sides = [node.left, node.right]
        sizes = [size_of(s, ctx, depth + 1, operators) for s in sides]
        if not any(sizes):
            return None
        if not all(s is not None or isinstance(side, (cst.Integer, cst.Float)) or _plain_int(side, ctx)
                   for s, side in zip(sizes, sides)):
            return None
        return _strongest([s for s in sizes if s is not None])
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        return size_of(node.expression, ctx, depth + 1, operators)
    return None


def _plain_int(node: cst.BaseExpression, ctx) -> bool:
    """`self.block_size`, `stride`: a Python value the code combines with a size (not tensor
    data, not a number read out of it)."""
    if isinstance(node, cst.Name) or (isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name)
                                      and node.value.value == "self"):
        return ctx.kind(node) not in (Kind.TENSOR, Kind.BOOL_TENSOR, Kind.SCALAR)
    return False


def _strongest(sizes: list[Size]) -> Size | None:
    """The size that says most about change: one that varies, else unknown, else fixed."""
    for wanted in (True, None, False):
        for size in sizes:
            if size.varies is wanted:
                return size
    return None


def _named_size(name: str, ctx, depth: int) -> Size | None:
    sized = getattr(ctx, "sized", None) or {}
    if name in sized and ctx.is_parameter(name):
        varies = sized[name]
        return Size(varies if varies is not None else varies_by_name(name),
                    f"{name}, a size at every traced call site")
    origin = ctx.origins.get(name)
    if origin is None:
        return None
    size = size_of(origin, ctx, depth + 1)
    if size is None:
        return None
    if size.varies is None:
        by_name = varies_by_name(name)
        if by_name is not None:
            return Size(by_name, f"{name} = {size.why}, named as a {'length' if by_name else 'width'}")
    return Size(size.varies, f"{name} = {size.why}" if not size.why.startswith(name) else size.why)


def unpacked_shape_origins(elements, value: cst.BaseExpression, ctx) -> dict:
    """name -> the synthetic `x.shape[i]` it holds, for the elements of an unpacking target
    (cst.Element / cst.StarredElement): `b, n, d = x.shape`, a slice of the shape (`b, t =
    x.shape[:2]`, `h, w = x.size()[-2:]`), and the names after a starred element, counted from
    the end (`*_, h, w = x.shape`: dims -2 and -1)."""
    tensor, first = whole_shape(value, ctx), 0
    if tensor is None:
        sliced = shape_slice(value, ctx)
        if sliced is None:
            return {}
        tensor, first = sliced
    star = next((i for i, e in enumerate(elements) if isinstance(e, cst.StarredElement)), None)
    if first < 0 and star is not None:
        return {}  # `a, *rest = x.shape[-3:]`: where the star ends is unknown
    out = {}
    for i, element in enumerate(elements):
        if star is not None and i >= star:
            dim = i - len(elements) if i > star else None  # after the star: from the end
        else:
            dim = first + i if first >= 0 or first + i < 0 else None
        name = getattr(element, "value", None)
        if dim is not None and isinstance(name, cst.Name):
            out[name.value] = shape_dim(tensor, dim)
    return out


def shape_slice(node: cst.BaseExpression, ctx) -> tuple[cst.BaseExpression, int] | None:
    """(the tensor, the first dim) of `x.shape[a:b]` / `x.size()[a:b]` with literal (or no)
    bounds and no step; a slice whose start counts from the end gives a negative first dim."""
    if not (isinstance(node, cst.Subscript) and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Slice)):
        return None
    part = node.slice[0].slice
    tensor = whole_shape(node.value, ctx)
    if tensor is None or part.step is not None:
        return None
    bounds = [None if b is None else int_literal(b) for b in (part.lower, part.upper)]
    if any(b is None and given is not None for b, given in zip(bounds, (part.lower, part.upper))):
        return None  # a bound that is not a literal
    return tensor, bounds[0] or 0


def expand_shape_slices(value: cst.BaseExpression, ctx) -> cst.BaseExpression:
    """`(*x.shape[:2], m, dev)` as `(x.shape[0], x.shape[1], m, dev)`: a starred slice of a shape
    whose length the literals fix, spelled out so that each target name gets its element
    (reformer's `b, t, m, device = *x.shape[:2], self.num_mem_kv, x.device`)."""
    if not isinstance(value, (cst.Tuple, cst.List)) or not any(isinstance(e, cst.StarredElement) for e in value.elements):
        return value
    elements = []
    for element in value.elements:
        sliced = shape_slice(element.value, ctx) if isinstance(element, cst.StarredElement) else None
        dims = _slice_dims(element.value.slice[0].slice) if sliced is not None else None
        if isinstance(element, cst.StarredElement) and dims is None:
            return value  # a length tcl cannot count
        if dims is None:
            elements.append(element)
        else:
            elements.extend(cst.Element(shape_dim(sliced[0], d)) for d in dims)
    return value.with_changes(elements=elements)


def _slice_dims(part: cst.Slice) -> list[int] | None:
    """The dims `[a:b]` takes when its literals alone fix them (both bounds of one sign, `[:b]`
    with b >= 0, `[-k:]`), else None."""
    lower = 0 if part.lower is None else int_literal(part.lower)
    upper = None if part.upper is None else int_literal(part.upper)
    if lower is None or (part.upper is not None and upper is None):
        return None
    if upper is None:
        return list(range(lower, 0)) if lower < 0 else None
    if (lower >= 0) != (upper >= 0):
        return None
    return list(range(lower, upper))


def shape_dim(tensor: cst.BaseExpression, dim: int) -> cst.Subscript:
    """The synthetic `tensor.shape[dim]`, for origins."""
    index = cst.Integer(str(dim)) if dim >= 0 else cst.UnaryOperation(cst.Minus(), cst.Integer(str(-dim)))
    return cst.Subscript(value=cst.Attribute(value=tensor, attr=cst.Name("shape")),
                         slice=[cst.SubscriptElement(slice=cst.Index(value=index))])
