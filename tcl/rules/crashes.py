"""Code the compiler gets wrong: the compiled function raises where eager Python runs.

TCL601 (below, this paragraph's subject) and TCL602 (a list of sizes compared with one holding a
tensor; its own docstring).

A graph break in the middle of an f-string leaves the pieces formatted so far on Python's stack;
Dynamo hands them to the function it resumes in. Measured on torch 2.11 (CUDA build), 2.13 and 2.14
(default mode, backend eager, three calls with new values; tests/test_rule_examples.py): when such a piece holds
a Python number read from tensor data (`loss.item()`, `float(t)`, or a name bound to one) and a
later piece of the same f-string breaks the graph again (another scalar read, `.tolist()`), the
first call runs, and every call whose number differs raises -- TypeError ("sequence item 1:
expected str instance, float found") on 2.11 and 2.13, InternalTorchDynamoError on 2.14, where only a
piece with a format spec (`:.4f`, `:d`) does it. The value has become symbolic after its first
change, and the resumed frame joins the number itself instead of its text. Numbers read into
names before the f-string (`a = loss.item(); b = acc.item(); f"{a:.4f} {b:.3f}"`), one read per
f-string, sizes, and `str.format` / `%` run on every release measured.
"""

from __future__ import annotations

import libcst as cst

from ..dataflow import is_tensor
from ..fixes.fstrings import hoist_reads
from ..fixes.size_lists import split_size_comparison
from ..names import source_text
from .base import DEFAULT_MODE, Example, Rule
from .data_reads import NUMBER_READS, READ_METHODS
from ..sizes import size_sequence
from .specialisation import changing_size



def breaking_read(node: cst.BaseExpression, ctx) -> cst.Call | None:
    """The call in `node` itself that reads tensor data into Python and breaks the graph in
    default mode: `t.item()`, `t.tolist()`, `float(t)`, `int(t)` of a value judged tensor data."""
    if not isinstance(node, cst.Call):
        return None
    func = node.func
    if isinstance(func, cst.Attribute) and func.attr.value in READ_METHODS and not node.args:
        return node if is_tensor(ctx.kind(func.value)) else None
    if ctx.qualname(func) in NUMBER_READS and len(node.args) == 1 and is_tensor(ctx.kind(node.args[0].value)):
        return node
    return None


def data_number(node: cst.BaseExpression, ctx, depth: int = 0) -> cst.Call | None:
    """The scalar read (`.item()`, `float(t)`, `int(t)`) whose Python number `node` is: the read
    itself or a name the function bound to one (not `.tolist()`: a list is not formatted as a
    number)."""
    if depth > 4:
        return None
    if isinstance(node, cst.Name):
        origin = ctx.origins.get(node.value)
        return data_number(origin, ctx, depth + 1) if origin is not None else None
    read = breaking_read(node, ctx)
    if read is not None and not (isinstance(read.func, cst.Attribute) and read.func.attr.value == "tolist"):
        return read
    return None


class NumberBeforeBreakInFString(Rule):
    code = "TCL601"
    category = "crash"
    name = "number-before-break-in-f-string"
    message = (
        "f-string formats {number}, a number read from tensor data, before {read} breaks the graph "
        "again: on torch {release} the compiled function raises {error} from the first call whose "
        "number differs (eager runs it)"
    )
    consequence_after = ": on torch"
    fix = (
        "read each value into a name before the f-string (`a = loss.item(); b = acc.item(); "
        "f\"{a:.4f} {b:.3f}\"`), or keep the line out of compiled code (`if not "
        "torch.compiler.is_compiling():`)"
    )
    fixer = staticmethod(hoist_reads)
    modes = frozenset({DEFAULT_MODE})  # under fullgraph=True the first read is the error
    versions = ">=2.11,<=2.14"
    removed_by = frozenset({"capture_scalar_outputs"})
    rationale = (
        "A graph break in the middle of an f-string leaves the pieces formatted so far on "
        "Python's stack, and Dynamo passes them to the function it resumes in. Measured on torch "
        "2.11, 2.13 and 2.14 (default mode, backend eager, three calls with new values): a piece holding "
        "a Python number read from tensor data (`loss.item()`, `float(t)`, a name bound to one) "
        "followed by a piece that breaks again (another scalar read, `.tolist()`) runs on the "
        "first call and raises on every call whose number differs: TypeError ('sequence item 1: "
        "expected str instance, float found') on 2.11 and 2.13, InternalTorchDynamoError on 2.14, where "
        "only a piece with a format spec (`:.4f`, `:d`) does it. Values read into names before the "
        "f-string, one read per f-string, sizes, str.format and % formatting run on both. With "
        "torch._dynamo.config.capture_scalar_outputs = True the reads do not break and the "
        "examples run."
    )
    VALID = [Example('''
import torch

@torch.compile
def fn(x):
    total = x.sum().item()  # noqa: TCL203
    peak = x.max().item()  # noqa: TCL203
    return x, f"total {total:.4f} peak {peak:.3f}"
''', calls="[(torch.randn(4),) for _ in range(3)]"), Example('''
import torch

@torch.compile
def fn(x):
    return x, f"rows {x.shape[0]} total {x.sum().item():.4f}"  # noqa: TCL203
''', calls="[(torch.randn(4),) for _ in range(3)]"), Example('''
import torch

@torch.compile
def fn(x):
    return x, f"total {x.sum().item()} peak {x.max().item()}"  # noqa: TCL203
''', calls="[(torch.randn(4),) for _ in range(3)]", versions=">=2.14")]
    INVALID = [Example('''
import torch

@torch.compile
def fn(x):
    return x, f"total {x.sum().item():.4f} peak {x.max().item():.3f}"  # BREAK  # noqa: TCL203
''', calls="[(torch.randn(4),) for _ in range(3)]"), Example('''
import torch

@torch.compile
def fn(x):
    total = x.sum().item()  # noqa: TCL203
    return x, f"total {total:.2f} values {x.tolist()}"  # BREAK  # noqa: TCL205
''', calls="[(torch.randn(4),) for _ in range(3)]"), Example('''
import torch

@torch.compile
def fn(x):
    return x, f"total {x.sum().item()} peak {x.max().item()}"  # BREAK  # noqa: TCL203
''', calls="[(torch.randn(4),) for _ in range(3)]", versions="<2.14")]

    def visit_FormattedString(self, node: cst.FormattedString, ctx) -> None:
        pieces = [part for part in node.parts if isinstance(part, cst.FormattedStringExpression)]
        spec_needed = ctx.version >= (2, 14)
        for i, earlier in enumerate(pieces):
            if spec_needed and earlier.format_spec is None:
                continue
            if data_number(earlier.expression, ctx) is None:
                continue
            for later in pieces[i + 1:]:
                read = breaking_read(later.expression, ctx)
                if read is not None:
                    code = cst.Module([]).code_for_node
                    error = "InternalTorchDynamoError" if spec_needed else "TypeError"
                    ctx.report(self, node, self.message.format(
                        number=f"`{code(earlier.expression)}`", read=f"`{code(read)}`",
                        release=f"{ctx.version[0]}.{ctx.version[1]}", error=error))
                    return


def _element_size(sequence: cst.BaseExpression, index: int, ctx):
    """(text, Size) of the `index`-th element of a sequence of sizes when it may change between
    calls; None otherwise."""
    sizes = size_sequence(sequence, ctx)
    if sizes is not None:
        tensor = sizes[0]
        dim = cst.Subscript(value=cst.Attribute(value=tensor, attr=cst.Name("shape")),
                            slice=[cst.SubscriptElement(slice=cst.Index(value=cst.Integer(str(index))))])
        size = changing_size(dim, ctx)
        return (f"{source_text(tensor)}.shape[{index}]", size) if size is not None else None
    if isinstance(sequence, (cst.List, cst.Tuple)) and index < len(sequence.elements):
        element = sequence.elements[index]
        if isinstance(element, cst.StarredElement) or any(isinstance(e, cst.StarredElement)
                                                          for e in sequence.elements[:index]):
            return None
        size = changing_size(element.value, ctx)
        return (source_text(element.value), size) if size is not None else None
    return None


def _same_sequence_type(display: cst.BaseExpression, other: cst.BaseExpression, ctx) -> bool:
    """Whether Python compares the two element by element: both lists or both tuples (a list
    never equals a tuple, nor a torch.Size a list)."""
    kind = "list" if isinstance(display, cst.List) else "tuple"
    sizes = size_sequence(other, ctx)
    if sizes is not None:
        return sizes[1] == kind
    return isinstance(other, type(display))


class SizeComparedWithTensorInList(Rule):
    """A list of sizes compared with a list that holds tensor data, element by element: where a
    size that changes between calls meets a tensor, the compiled function raises.

    Measured on torch 2.13 and 2.14 (default mode, backend eager, four calls with a growing dim;
    tests/test_rule_examples.py): `assert list(x.size()) == [x.shape[0], mask.sum()]`, `if
    list(x.size()) == [...]` and `[x.shape[1]] == [m]` run on the first call (the comparison
    breaks the graph, TCL207) and raise AssertionError ("Expected bool, got FakeTensor") from
    the first call after the size changed: the size is symbolic by then, and Dynamo's
    comparison of a symbolic int with a tensor inside the list comparison fails. The same
    comparison with a size that does not change (`torch.ones(4, 3).size()`), and `x.shape[1] ==
    m` outside a list, run.
    """

    code = "TCL602"
    category = "crash"
    fixer = staticmethod(split_size_comparison)
    name = "size-compared-with-tensor-in-list"
    message = (
        "list comparison pairs {size}, a size that changes between calls, with {tensor}, tensor "
        "data: on torch {release} the compiled function raises AssertionError ('Expected bool, got "
        "FakeTensor') from the first call after the size changes (eager runs it)"
    )
    consequence_after = ": on torch"
    fix = (
        "compare element by element outside a list (`x.shape[1] == width`, or "
        "`torch._check(x.shape[1] == width)`), or compare the sizes as Python ints and the tensor "
        "apart"
    )
    modes = frozenset({DEFAULT_MODE})  # under fullgraph=True the list comparison is the error (TCL207)
    versions = ">=2.13,<=2.14"
    rationale = (
        "`list(t.size()) == [b, n, width]` compares element by element. Where an element is "
        "tensor data (`width = mask.sum()`) and the size it meets changes between calls, the "
        "first call breaks the graph there (TCL207) and runs; once automatic dynamic shapes "
        "made the size symbolic, Dynamo's comparison of the symbolic int with the tensor fails "
        "inside the list comparison. Measured on torch 2.13 and 2.14 (default mode, backend "
        "eager, four calls with a growing dim): `assert list(x.size()) == [x.shape[0], "
        "mask.sum()]`, `if list(x.size()) == [...]` and `[x.shape[1]] == [m]` raise "
        "AssertionError ('Expected bool, got FakeTensor') from the second call; a size that "
        "does not change (`torch.ones(4, 3).size()`) and `x.shape[1] == m` outside a list run. "
        "Found by `tcl verify` on the fixtures (library_patterns.py's Longformer-style "
        "`assert list(scores.size()) == [batch, seq, max_num_global]`), and reproduced on "
        "transformers' LongformerModel: with 2 global tokens after 1, the compiled model raises "
        "at that assert (eval/labels/repro/transformers_longformer_tcl602.py)."
    )
    VALID = [Example('''
import torch

@torch.compile
def fn(x, mask):
    width = mask.sum()
    scores = torch.ones(4, 3)
    assert list(scores.size()) == [4, width], "bad shape"  # noqa: TCL207
    return x * 2
''', calls="[(torch.randn(2, n), torch.ones(3, dtype=torch.long)) for n in (3, 4, 5, 6)]"), Example('''
import torch

@torch.compile
def fn(x, mask):
    width = mask.sum()
    assert x.shape[1] == width, "bad width"
    return x * 2
''', calls="[(torch.randn(2, n), torch.ones(n, dtype=torch.long)) for n in (3, 4, 5, 6)]")]
    INVALID = [Example('''
import torch

@torch.compile
def fn(x, mask):
    width = mask.sum()
    assert list(x.size()) == [x.shape[0], width], "bad shape"  # BREAK  # noqa: TCL207
    return x * 2
''', calls="[(torch.randn(2, n), torch.ones(n, dtype=torch.long)) for n in (3, 4, 5, 6)]"), Example('''
import torch

@torch.compile
def fn(x, lengths):
    if [x.shape[1]] == [lengths.max()]:  # BREAK  # noqa: TCL207
        return x * 2
    return x
''', calls="[(torch.randn(2, n), torch.tensor([1, n])) for n in (3, 4, 5, 6)]")]

    def visit_Comparison(self, node: cst.Comparison, ctx) -> None:
        left = node.left
        for target in node.comparisons:
            right = target.comparator
            if isinstance(target.operator, (cst.Equal, cst.NotEqual)):
                for display, other in ((left, right), (right, left)):
                    if not isinstance(display, (cst.List, cst.Tuple)) or not _same_sequence_type(display, other, ctx):
                        continue
                    for index, element in enumerate(display.elements):
                        if isinstance(element, cst.StarredElement):
                            break
                        if not is_tensor(ctx.kind(element.value)):
                            continue
                        found = _element_size(other, index, ctx)
                        if found is not None:
                            ctx.report(self, node, self.message.format(
                                size=f"`{found[0]}`", tensor=f"`{source_text(element.value)}`",
                                release=f"{ctx.version[0]}.{ctx.version[1]}"))
                            return
            left = right
