"""Sizes that Python code turns into plain values (TCL505): recompiles automatic dynamic shapes cannot absorb.

After a size first changes, Dynamo makes it symbolic and stops recompiling for new values --
unless Python code needs the size as a concrete int: as the key of a dict or list lookup, as
the argument of `list.index()`, as a Python loop's trip count, or as a quotient tested with
`.is_integer()`. Each of those guards on the exact value, so every new size compiles again
until the recompile limit (8), after which the frame runs eagerly. Measured on torch 2.13 with
four shapes (2, 4), (2, 8), (2, 16), (2, 32), default mode, counting each frame's compilations
(tcl.verify.compile_trace): a recompile on every call after the automatic-dynamic one for each
use below; none for arithmetic, views, comparisons, `if size % 8 == 0` (but `(size /
8).is_integer()` recompiles), `assert list(x.size()) == [b, t, 4]` or `if n == 8:`.
`str(size)` does not recompile: once the size is symbolic it breaks the graph instead (the
resumed frame then compiles once more, automatic-dynamic), so it is not reported here.

A *size* is `t.shape[i]`, `t.size(i)`, `len(t)` of a tensor `t`, the names a function binds
from them (`b, n, d = x.shape` included), and their integer arithmetic. Calls that need a size's
exact value (TCL506) are tcl/rules/size_calls.py's.
"""

from __future__ import annotations

import libcst as cst

from ..dataflow import is_tensor
from ..sizes import DIVIDING, Size, fixed_tensor, size_of, whole_shape
from .base import Example, Rule

SHAPES = "[(torch.randn(2, 4),), (torch.randn(2, 8),), (torch.randn(2, 16),), (torch.randn(2, 32),)]"
SQUARE_ROWS = "[(torch.randn(n, 3),) for n in (4, 6, 8, 10)]"


def changing_size(node: cst.BaseExpression, ctx) -> Size | None:
    """A size (tcl/sizes.py) that may change between calls: varies or unknown, not fixed."""
    size = size_of(node, ctx)
    return size if size is not None and size.varies is not False else None


def is_size(node: cst.BaseExpression, ctx) -> bool:
    return changing_size(node, ctx) is not None


def _quotient_of_size(node: cst.BaseExpression, ctx) -> cst.BaseExpression | None:
    """`seqlen / multiple` (or a name bound to it) where seqlen is a changing size: `.is_integer()`
    of that float needs its exact value (measured on 2.13: a recompile on every new length,
    guard `(x.size()[1] / 4) == 2.0`; `seqlen % multiple == 0` stays symbolic)."""
    if isinstance(node, cst.Name):
        node = ctx.origins.get(node.value, node)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide):
        size = size_of(node, ctx, operators=DIVIDING)
        if size is not None and size.varies is not False:
            return node
    return None


_HASHED_BUILDERS = frozenset({"set", "frozenset", "dict", "defaultdict", "OrderedDict", "Counter"})


def _hashed_names(tree) -> tuple[frozenset[str], frozenset[str]]:
    """(module-level names, self attributes) this file binds to a set or dict."""
    import ast

    from ..python_nodes import nodes_of

    def hashed(value) -> bool:
        if isinstance(value, (ast.Set, ast.Dict, ast.SetComp, ast.DictComp)):
            return True
        if isinstance(value, ast.Call):
            func = value.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            return name in _HASHED_BUILDERS
        return False

    names, attrs = set(), set()
    for statement in tree.body:
        if isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None and hashed(statement.value):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    for node in [*nodes_of(tree, ast.Assign), *nodes_of(tree, ast.AnnAssign)]:
        if node.value is not None and hashed(node.value):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            attrs.update(t.attr for t in targets if isinstance(t, ast.Attribute)
                         and isinstance(t.value, ast.Name) and t.value.id == "self")
    return frozenset(names), frozenset(attrs)


def _hashed_container(node: cst.BaseExpression, ctx, depth: int = 0) -> bool:
    """A set or dict: `in` hashes the size, which needs its exact value (measured: a set or dict
    display, a module-level or `self.` one, recompiles on every size; a list or tuple compares
    element by element and keeps the size symbolic)."""
    if isinstance(node, (cst.Set, cst.Dict, cst.SetComp, cst.DictComp)):
        return True
    if isinstance(node, cst.Call):
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "keys":
            return _hashed_container(func.value, ctx, depth + 1)
        name = func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) else ""
        return name in _HASHED_BUILDERS
    index = ctx.function.index
    names, attrs = (index.file_fact("hashed-names", _hashed_names) if index else None) or ((), ())
    if isinstance(node, cst.Name):
        origin = ctx.origins.get(node.value)
        if origin is not None:
            return depth < 4 and _hashed_container(origin, ctx, depth + 1)
        return node.value in names and node.value not in ctx.assigned and node.value not in ctx.parameters
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
        return node.attr.value in attrs
    return False


_SET_BUILDERS = frozenset({"builtins.set", "builtins.frozenset"})


def _hashed_size(element: cst.BaseExpression, ctx) -> cst.BaseExpression | None:
    """The changing size a set hashes when it holds `element`: the element itself when it is a
    size, or a whole `t.shape` of a tensor whose sizes may change (a torch.Size hashes each of
    its sizes). Measured on 2.13: `len({x.shape[0], 3})`, `set(t.size(0) for t in ts)`,
    `set(x.shape)`, `{x.shape}` and frozenset(...) compile on every new size."""
    if is_size(element, ctx):
        return element
    tensor = whole_shape(element, ctx)
    if tensor is not None and not fixed_tensor(tensor, ctx):
        return element
    return None


def _key_size(key: cst.BaseExpression, ctx, depth: int = 0) -> cst.BaseExpression | None:
    """The changing size a lookup key carries: the key itself when it is a size (or a whole
    `t.shape`), a size inside a tuple or list display or an f-string (`f"{h}x{w}"`), or a name
    bound to any of these. Measured on 2.13, four sizes: `CACHE[(n, n)]`, `CACHE[f"{n}x{n}"]`
    and `key in CACHE` for either compile on every call; `"%d" % n`, `"{}".format(n)` and an
    f-string nobody uses keep the size symbolic."""
    size = _hashed_size(key, ctx)
    if size is not None or depth > 4:
        return size
    if isinstance(key, (cst.Tuple, cst.List)):
        for element in key.elements:
            if not isinstance(element, cst.StarredElement):
                found = _key_size(element.value, ctx, depth + 1)
                if found is not None:
                    return found
        return None
    if isinstance(key, cst.Name):
        origin = ctx.origins.get(key.value)
        return _key_size(origin, ctx, depth + 1) if origin is not None and origin is not key else None
    return _string_size(key, ctx, depth)


def _string_size(node: cst.BaseExpression, ctx, depth: int = 0) -> cst.BaseExpression | None:
    """The changing size formatted into an f-string (`f"...{n}..."`), or a name bound to one.
    str(n) is not one: measured on 2.13, a dict lookup by `str(n)` recompiles only when the
    number of digits changes (sizes 4, 8, 16, 32: 3 compilations, none at 16)."""
    if depth > 4:
        return None
    if isinstance(node, cst.FormattedString):
        for part in node.parts:
            if isinstance(part, cst.FormattedStringExpression):
                found = _key_size(part.expression, ctx, depth + 1)
                if found is not None:
                    return found
        return None
    if isinstance(node, cst.Name):
        origin = ctx.origins.get(node.value)
        if origin is not None and origin is not node:
            return _string_size(origin, ctx, depth + 1)
    return None


def _set_elements(call: cst.Call, qualname: str | None, ctx) -> list[cst.BaseExpression]:
    """What `set(...)` / `frozenset(...)` hashes: the elements of a display or the element of a
    generator or list comprehension passed to it, else the argument itself (`set(x.shape)`).
    A set comprehension or display passed to it is the Set/SetComp visitor's."""
    if qualname not in _SET_BUILDERS or len(call.args) != 1 or call.args[0].keyword is not None:
        return []
    arg = call.args[0].value
    if isinstance(arg, (cst.GeneratorExp, cst.ListComp)):
        ctx.bind_comprehension_targets(arg)
        return [_size_of_shape_element(arg, ctx) or arg.elt]
    if isinstance(arg, (cst.List, cst.Tuple)):
        return [e.value for e in arg.elements if not isinstance(e, cst.StarredElement)]
    return [arg]


def _inside_tuple_or_list(node: cst.BaseExpression, ctx) -> cst.BaseExpression:
    """The argument of `tuple(arg)` / `list(arg)`, else the node itself."""
    if isinstance(node, cst.Call) and len(node.args) == 1 \
            and ctx.qualname(node.func) in ("builtins.tuple", "builtins.list"):
        return node.args[0].value
    return node


def _size_of_shape_element(comprehension: cst.BaseComp, ctx) -> cst.BaseExpression | None:
    """`s[0] for s in shapes` where `shapes = tuple(tuple(t.shape) for t in tensors)` (pykeen's
    `_reorder`): the element is dim 0 of each tensor, returned as the synthetic `t.shape[0]`
    the sizes module judges; None for any other element."""
    element, for_in = comprehension.elt, comprehension.for_in
    if not (isinstance(element, cst.Subscript) and isinstance(element.value, cst.Name)
            and isinstance(for_in.target, cst.Name) and element.value.value == for_in.target.value
            and len(element.slice) == 1 and isinstance(element.slice[0].slice, cst.Index)
            and isinstance(element.slice[0].slice.value, cst.Integer)):
        return None
    shapes = for_in.iter
    if isinstance(shapes, cst.Name):
        shapes = ctx.origins.get(shapes.value)
    inner = _inside_tuple_or_list(shapes, ctx) if shapes is not None else None
    if not isinstance(inner, (cst.GeneratorExp, cst.ListComp)):
        return None
    ctx.bind_comprehension_targets(inner)
    tensor = whole_shape(_inside_tuple_or_list(inner.elt, ctx), ctx)
    if tensor is None:
        return None
    return cst.Subscript(value=cst.Attribute(value=tensor, attr=cst.Name("shape")),
                         slice=[cst.SubscriptElement(slice=element.slice[0].slice)])


_SEQUENCE_BUILDERS = frozenset({"builtins.list", "builtins.tuple", "builtins.set", "builtins.sorted",
                                "builtins.reversed"})


def _range_size(node: cst.BaseExpression, ctx) -> cst.BaseExpression | None:
    """The first changing size among the arguments of `range(...)`, else None."""
    if isinstance(node, cst.Call) and ctx.qualname(node.func) == "builtins.range":
        for arg in node.args:
            if is_size(arg.value, ctx):
                return arg.value
    return None


def _chunk_count(call: cst.Call, qualname: str | None, ctx) -> cst.BaseExpression | None:
    """The `chunks` argument of `t.chunk(n)` / `torch.chunk(t, n)`."""
    args = [a for a in call.args if not a.star]
    keyword = next((a.value for a in args if a.keyword is not None and a.keyword.value == "chunks"), None)
    positional = [a.value for a in args if a.keyword is None]
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value == "chunk" and is_tensor(ctx.kind(func.value)):
        return keyword if keyword is not None else (positional[0] if positional else None)
    if qualname == "torch.chunk":
        return keyword if keyword is not None else (positional[1] if len(positional) > 1 else None)
    return None


class SizeSpecialisedByPython(Rule):
    code = "TCL505"
    name = "size-used-as-python-value"
    message = (
        "{expr} is used as a {use}: Dynamo specialises on the exact size, so every call with a "
        "new size compiles again (automatic dynamic shapes cannot help), up to the recompile "
        "limit (8), then the frame runs eagerly"
    )
    consequence_after = ": Dynamo specialises"
    fix = (
        "keep the size symbolic: index tensors instead of Python containers (torch.tensor(table)[n] "
        "or a lookup computed once in __init__), vectorise the loop; or pad inputs to a few "
        "bucket sizes"
    )
    gb = (((2, 0), "GB0039"),)
    category = "recompile"
    persistent = True
    rationale = (
        "After a size first changes, Dynamo makes it symbolic and stops recompiling for new "
        "values, unless Python code needs the exact int: as a dict or list key, as the "
        "argument of list.index(), as a value looked up with `in` in a set or dict (a list or "
        "tuple only compares, the size stays symbolic), as a member of a set (`{n, m}`, "
        "`set(t.size(0) for t in ts)`, `set(x.shape)`: hashing needs the value), as "
        "a Python loop's trip count (statement or comprehension), as the length of a Python "
        "list (`list(range(n))`, `[0.0] * n`), as the number of chunks of `t.chunk(n)`, as "
        "the key of dict.get()/setdefault(), or inside a key: a tuple of sizes or a string "
        "made from one (`cache[f\"{h}x{w}\"]`, `cache.setdefault((b, n), v)`), or as a "
        "quotient tested with `(n / k).is_integer()` (`n % k == 0` stays symbolic). Each "
        "guards on the value. A size is `t.shape[i]`, `t.size(i)`, `len(t)` of a tensor, a "
        "name or a helper's parameter bound to one, and their integer arithmetic, int(), "
        "math.ceil/floor and min/max (tcl/sizes.py). Not reported: sizes of parameters and "
        "buffers (`self.weight.shape[0]`) or of tensors built from constants, and sizes the "
        "code names as widths (`channels`, `head_dim`, `num_classes`), which do not change "
        "between calls; len() of a list or tuple of tensors is TCL504's. Measured on torch "
        "2.13, four shapes (2, 4) ... (2, 32) or (4, 3) ... (10, 3): the frame compiles on "
        "every call (4 compilations) for each use below, also when the size reaches a helper "
        "as an argument; 2 (the automatic-dynamic recompile) for arithmetic, views, "
        "comparisons, torch.tensor(n), topk(n // 2), randperm(n), `n in (1024, 3072)`, "
        "`\"%d\" % n`, `\"{}\".format(n)`, an f-string nobody uses, a tuple of sizes indexing a "
        "tensor and for loops over a width or a parameter's size; 1 for any of these uses in a frame "
        "with a graph break inside one of its loops (Dynamo skips that frame and runs it "
        "eagerly, so nothing in it recompiles: no recompile rule reports there in default "
        "mode). Only the first use of a size on a path is reported: it fixes the size to one value, "
        "and later uses (the same name, an alias such as `m = x.size(0)`) see a constant and add "
        "no guard; every recompile names the first line (measured, tests/test_guard_facts.py)."
    )
    VALID = [Example('''
import torch
from torch import nn

class Cells(nn.Module):
    def __init__(self):
        super().__init__()
        self.num_layers = 2
        self.bidirectional = True

    def forward(self, x):
        # dim 0 of a tensor built as torch.zeros(layers * directions, ...) is what the factory
        # was given, not the batch: the list length never changes
        directions = 2 if self.bidirectional else 1
        h = torch.zeros(self.num_layers * directions, x.shape[0], 8)
        cells = [None] * len(h)
        return x * len(cells)
''', entry="Cells", calls="[(torch.randn(n, 4),) for n in (2, 3, 5, 7)]"), Example('''
import torch

@torch.compile
def fn(x):
    n = x.shape[1]
    label = f"width {n}"  # a string nobody uses
    if n > 1000:
        raise ValueError(f"too wide: {n}")  # never raised
    corner = x[(0, n - 1)]  # a tuple of sizes indexing a tensor
    return x * corner + x * ("%d" % n == "8") + x * len("{}".format(n))
''', calls=SHAPES), Example('''
import torch

@torch.compile
def fn(x):
    b, n = x.shape
    scale = 1.0 / (n ** 0.5)
    if n % 8 == 0 and x.size(1) > 2:
        x = x * 2
    return x.view(b, n // 2, 2) * scale
''', calls=SHAPES), Example('''
import torch
from torch import nn

class Heads(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Parameter(torch.randn(3, 8))

    def forward(self, x):
        batch, channels = x.shape
        out = x
        for c in range(channels):  # a width: fixed by the model, not by the batch
            out = out + x[:, c:c + 1]
        for i in range(self.proj.shape[0]):  # a size of a parameter
            out = out + self.proj[i]
        return out
''', entry="Heads", calls="[(torch.randn(b, 8),) for b in (2, 3, 4, 5)]"), Example('''
import torch

@torch.compile
def fn(x):
    n = x.shape[1]
    top = x.topk(n // 2, dim=1).values
    scale = torch.tensor(n, dtype=x.dtype)
    if n in (1024, 3072):  # a tuple compares element by element: the size stays symbolic
        top = top * 2
    return top.sum() * scale + x[:, torch.randperm(n)].sum()
''', calls=SHAPES), Example('''
import torch

WEIGHT = torch.randn(3, 3)

@torch.compile
def fn(x):
    sizes = (x.shape[1], x.shape[1] // 2)  # a tuple only compares: the sizes stay symbolic
    square = len(set(WEIGHT.shape)) == 1  # a set of a constant tensor's sizes
    return x * sizes[1] if square else x
''', calls=SHAPES), Example('''
import torch

@torch.compile
def fn(x):
    for i in range(x.shape[1]):  # a break in a loop: Dynamo skips the frame, which runs eagerly
        print(i)  # noqa: TCL101
        x = x + 1
    return x
''', calls=SHAPES)]
    INVALID = [
        Example('''
import torch

@torch.compile
def fn(wav):
    frames = [wav[..., t] * t for t in range(wav.shape[-1])]  # BREAK
    return torch.stack(frames, -1)
''', calls=SHAPES),
        Example('''
import torch

@torch.compile
def fn(x):
    T = x.shape[-1]  # named as a length
    return torch.stack([x[:, t] * t for t in range(T)], -1)  # BREAK
''', calls=SHAPES),
        Example('''
import torch

@torch.compile
def fn(x):
    # each name holds its own element, as after two assignments (ncps' CfC and LTC cells)
    batch_size, seq_len = x.size(0), x.size(1)
    outputs = []
    for t in range(seq_len):  # BREAK
        outputs.append(x[:, t] * batch_size)
    return torch.stack(outputs, 1)
''', calls=SHAPES),
        Example('''
import torch

@torch.compile
def fn(x):
    batch_size, seq_len = x.shape[:2]  # a slice of the shape: dims 0 and 1
    return torch.stack([x[:, t] * batch_size for t in range(seq_len)], 1)  # BREAK
''', calls=SHAPES),
        Example('''
import torch

@torch.compile
def fn(x):
    b, t, scale = *x.shape[:2], 2.0  # reformer's Autopadder spells it so
    return torch.stack([x[:, i] * scale for i in range(t)], 1)  # BREAK
''', calls=SHAPES),
        Example('''
import torch

@torch.compile
def fn(x):
    *_, width = x.shape  # after a star: counted from the end, dim -1
    return torch.stack([x[..., i] for i in range(width)], -1)  # BREAK
''', calls=SHAPES),
        Example('''
import torch
import torch.nn.functional as F

def pad_to_multiple(tensor, seqlen, multiple):
    m = seqlen / multiple
    if m.is_integer():  # BREAK
        return tensor
    return F.pad(tensor, (0, 2))

@torch.compile
def fn(x):
    return pad_to_multiple(x, x.shape[1], 4) * 2
''', calls=SHAPES),
        Example('''
import torch

BUCKETS = [4, 8, 16, 32]

def bucket_of(seq_len):
    return BUCKETS.index(seq_len)  # BREAK

@torch.compile
def fn(x):
    return x * bucket_of(x.shape[1])
''', calls=SHAPES),
        Example('''
import math
import torch

@torch.compile
def fn(x):
    n = x.shape[1]
    for _ in range(math.ceil(n / 4)):  # BREAK
        x = x + 1
    return x
''', calls=SHAPES),
        Example('''
import torch

SEEN = {}

@torch.compile
def fn(x):
    seq_len = x.size(1)
    if seq_len in SEEN:  # BREAK
        return x * 2
    if seq_len in (1024, 3072):  # a tuple compares element by element: no recompile
        return x * 4
    return x * 3
''', calls=SHAPES),
        Example('''
import torch

@torch.compile
def fn(x):
    n = x.shape[1]
    keep = list(range(n))  # BREAK
    return x[:, keep] * len([1.0] * n)  # n is one value already: no guard of its own
''', calls=SHAPES),
        Example('''
import torch

@torch.compile
def fn(x):
    rows = torch.stack([x[i] * 2 for i in range(x.shape[0])])  # BREAK
    return rows + torch.cat(x.chunk(x.size(0)), 0)  # the comprehension fixed the size: no guard of its own
''', calls=SQUARE_ROWS),
        Example('''
import torch

@torch.compile
def fn(x):
    return torch.cat(x.chunk(x.size(0)), 0) * 2  # BREAK
''', calls=SQUARE_ROWS),
        Example('''
import torch

@torch.compile
def fn(x):
    table = {4: 1.0, 8: 2.0, 16: 3.0, 32: 4.0}
    return x * table[x.shape[1]]  # BREAK
''', calls=SHAPES),
        Example('''
import torch

BUCKETS = [4, 8, 16, 32]

@torch.compile
def fn(x):
    seq_len = x.size(1)
    i = BUCKETS.index(seq_len)  # BREAK
    return x * i
''', calls=SHAPES),
        Example('''
import torch

@torch.compile
def fn(x):
    _, steps = x.shape
    for _ in range(steps // 4):  # BREAK
        x = x + 1
    return x
''', calls=SHAPES),
        Example('''
import torch

@torch.compile
def fn(x: torch.Tensor, y: torch.Tensor):
    tensors = (x, y)
    if len(set(t.size(1) for t in tensors)) < 2:  # BREAK
        return x + y
    return x * y
''', calls="[(torch.randn(2, n), torch.randn(2, n)) for n in (4, 8, 16, 32)]"),
        Example('''
import torch

@torch.compile
def fn(x: torch.Tensor, y: torch.Tensor):
    shapes = tuple(tuple(t.shape) for t in (x, y))
    if len(set(s[0] for s in shapes if s)) < 2:  # BREAK
        return x + y
    return x * y
''', calls="[(torch.randn(n, 2), torch.randn(n, 2)) for n in (4, 8, 16, 32)]"),
        Example('''
import torch

@torch.compile
def fn(x):
    distinct = {x.shape[1], 4}  # BREAK
    return x * len(distinct)
''', calls=SHAPES),
        Example('''
import torch

SCALES = {4: 1.0, 8: 0.5}

@torch.compile
def fn(x):
    return x * SCALES.get(x.shape[1], 0.25)  # BREAK
''', calls=SHAPES),
        Example('''
import torch

CACHE = {}

@torch.compile
def fn(x):
    h, w = x.shape
    key = f"{h}x{w}"
    if key not in CACHE:  # BREAK
        CACHE[key] = 1.0  # BREAK (a store: the dict's length is guarded too)
    return x * CACHE[key]  # key holds one value already: no guard of its own
''', calls=SHAPES),
        Example('''
import torch

SCALES = {}

@torch.compile
def fn(x):
    b, n = x.shape
    return x * SCALES.setdefault((b, n), 0.5)  # BREAK
''', calls=SHAPES),
    ]

    # -- the uses that specialise ---------------------------------------------------------
    def visit_Call(self, node: cst.Call, ctx) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "index" and node.args:
            if not is_tensor(ctx.kind(func.value)) and is_size(node.args[0].value, ctx):
                self._report(node, node.args[0].value, "list.index() argument", ctx)
            return
        if isinstance(func, cst.Attribute) and func.attr.value in ("get", "setdefault") and node.args \
                and not is_tensor(ctx.kind(func.value)) and node.args[0].keyword is None:
            size = _key_size(node.args[0].value, ctx)
            if size is not None:
                self._report(node, size, f"key of a Python dict lookup (.{func.attr.value}())", ctx)
                return
        if isinstance(func, cst.Attribute) and func.attr.value == "is_integer" and not node.args:
            size = _quotient_of_size(func.value, ctx)
            if size is not None:
                self._report(node, size, "quotient tested with .is_integer()", ctx)
                return
        qualname = ctx.qualname(func)
        if qualname in _SEQUENCE_BUILDERS and node.args:
            size = _range_size(node.args[0].value, ctx)
            if size is not None:
                self._report(node, size, "length of a Python list", ctx)
                return
        pieces = _chunk_count(node, qualname, ctx)
        if pieces is not None and is_size(pieces, ctx):
            self._report(node, pieces, "number of chunks", ctx)
            return
        self._hashed(node, _set_elements(node, qualname, ctx), ctx)

    def visit_Set(self, node: cst.Set, ctx) -> None:
        self._hashed(node, [e.value for e in node.elements if not isinstance(e, cst.StarredElement)], ctx)

    def visit_SetComp(self, node: cst.SetComp, ctx) -> None:
        ctx.bind_comprehension_targets(node)
        self._hashed(node, [node.elt], ctx)

    def _hashed(self, node: cst.CSTNode, elements: list[cst.BaseExpression], ctx) -> None:
        for element in elements:
            size = _hashed_size(element, ctx)
            if size is not None:
                self._report(node, size, "member of a Python set (hashed)", ctx)
                return

    def visit_Subscript(self, node: cst.Subscript, ctx) -> None:
        if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
            return
        key = node.slice[0].slice.value
        container = node.value
        if is_tensor(ctx.kind(container)) or whole_shape(container, ctx) is not None:
            return
        # A store (`self.cache[key] = v`) adds a key: the next call fails a guard on the
        # container's length, another guard than the key's (an earlier lookup does not cover it).
        store = isinstance(ctx.parent(), cst.AssignTarget) and ctx.parent().target is node
        if is_size(key, ctx):
            self._report(node, key, "key of a Python dict or list lookup", ctx, once=not store)
            return
        size = _key_size(key, ctx)
        # A tuple of sizes also indexes a tensor (`x[idx]` of unknown x): only a container known
        # to hash (a dict) says it is a key; a string key can only look up a mapping.
        if size is not None and (_string_size(key, ctx) is not None or _hashed_container(container, ctx)):
            self._report(node, size, "part of a Python dict key", ctx, once=not store)

    def visit_DictElement(self, node: cst.DictElement, ctx) -> None:
        if is_size(node.key, ctx):
            self._report(node.key, node.key, "dict key", ctx)
            return
        size = _key_size(node.key, ctx)
        if size is not None:
            self._report(node.key, size, "part of a dict key", ctx)

    def visit_For(self, node: cst.For, ctx) -> None:
        self._trip_count(node.iter, ctx)

    def visit_CompFor(self, node: cst.CompFor, ctx) -> None:
        self._trip_count(node.iter, ctx)  # `[x[i] for i in range(n)]` unrolls the same way

    def _trip_count(self, iterable: cst.BaseExpression, ctx) -> None:
        size = _range_size(iterable, ctx)
        if size is not None:
            self._report(iterable, size, "Python loop's trip count", ctx)

    def visit_Comparison(self, node: cst.Comparison, ctx) -> None:
        left = node.left
        for target in node.comparisons:
            if isinstance(target.operator, (cst.In, cst.NotIn)) and _hashed_container(target.comparator, ctx):
                size = _key_size(left, ctx)
                if size is not None:
                    what = "value" if size is left else "part of a value"
                    self._report(node, size, f"{what} looked up in a Python set or dict", ctx)
                    return
            left = target.comparator

    def visit_BinaryOperation(self, node: cst.BinaryOperation, ctx) -> None:
        if not isinstance(node.operator, cst.Multiply):
            return
        for display, count in ((node.left, node.right), (node.right, node.left)):
            if isinstance(display, (cst.List, cst.Tuple, cst.ListComp)) and is_size(count, ctx):
                self._report(node, count, "length of a repeated Python list", ctx)
                return

    def _report(self, node: cst.CSTNode, size: cst.BaseExpression, use: str, ctx, once: bool = True) -> None:
        """`once`: the use guards only the size's value, which the first such use on a path fixes
        (the walker drops later ones, Candidate.guarded_at)."""
        expr = cst.Module([]).code_for_node(size)
        guards = size if once else None
        if whole_shape(size, ctx) is not None:
            ctx.report(self, node, self.message.format(expr=f"every size of {expr}", use=use), guards=guards)
            return
        fact = changing_size(size, ctx)
        why = f" ({fact.why})" if fact is not None and fact.why != expr else ""
        ctx.report(self, node, self.message.format(expr=f"the size {expr}{why}", use=use), guards=guards)
