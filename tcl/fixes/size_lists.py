"""TCL602's fix: an assert that compares a tensor's sizes with a list holding tensor data, taken
apart into one comparison per dimension.

`assert list(scores.size()) == [batch, seq, width], "bad"` becomes

    assert scores.dim() == 3 and scores.shape[0] == batch and scores.shape[1] == seq \
        and scores.shape[2] == width, "bad"

Measured on torch 2.13 (tests/test_fix.py) and 2.14 (by hand, the same calls): a size compared
with a tensor outside a list runs once the size is symbolic, so the compiled function no longer
raises, and the assert runs in the graph (torch._assert_async: a failing input raises
RuntimeError with the assert's message under compile, AssertionError in eager). Eager results are
identical: `list.__eq__` compares the lengths, then the elements in order, stopping at the first
that differs, and so does the `and` chain; the assert's message is evaluated only on failure, as
before. Only where that holds: an `assert` (not an `if`: its branches stay as written), the tensor a
name or attribute chain (read once per dimension, no effect), its sizes (`list(t.size())`,
`tuple(t.shape)`, `t.size()`; tcl/sizes.py `size_sequence`) against a display of the same
sequence type (a list never equals a tuple) without `*`, whose elements are pure (tcl/fixes/exprs.py `pure`: the `and` chain may skip evaluating the later ones).
"""

from __future__ import annotations

import libcst as cst

from .base import SAFE, Fix
from ..sizes import size_sequence
from .exprs import plain_reference, pure

def split_size_comparison(finding, node: cst.CSTNode, ctx) -> Fix | None:
    if not isinstance(node, cst.Comparison) or len(node.comparisons) != 1 \
            or not isinstance(node.comparisons[0].operator, cst.Equal):
        return None
    statement = ctx.statement_of(node)
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    check = statement.body[0]
    if not isinstance(check, cst.Assert) or check.test is not node:
        return None
    left, right = node.left, node.comparisons[0].comparator
    sizes, display = size_sequence(left, ctx), right
    if sizes is None:
        sizes, display = size_sequence(right, ctx), left
    # Element by element only between two lists or two tuples (`list(t.size()) == (b, n)` is
    # always False in eager: splitting it would change the program).
    kind = {cst.List: "list", cst.Tuple: "tuple"}.get(type(display))
    if sizes is None or sizes[1] != kind or not plain_reference(sizes[0]):
        return None
    tensor = sizes[0]
    elements = display.elements
    if not elements or any(isinstance(e, cst.StarredElement) for e in elements) \
            or not all(pure(e.value, ctx) for e in elements):
        return None
    name = ctx.code(tensor)
    # `sizes == [...]` and `[...] == sizes` compare the same pairs: `==` on ints and tensors is
    # symmetric in value, and each pair below keeps the size on the left as Python evaluates it.
    parts = [f"{name}.dim() == {len(elements)}"] + [
        f"{name}.shape[{i}] == ({ctx.code(e.value)})" if _needs_parentheses(e.value)
        else f"{name}.shape[{i}] == {ctx.code(e.value)}"
        for i, e in enumerate(elements)]
    test = ctx.expression(" and ".join(parts))
    new_check = check.with_changes(test=test)
    new_statement = statement.with_changes(body=[new_check])
    return Fix(
        code=finding.code, line=finding.line, col=finding.col,
        title="compare the sizes one dimension at a time",
        safety=SAFE,
        replacements={statement: new_statement},
        note=("the same comparisons in the same order (length first); eager runs are unchanged. "
              "Under torch.compile the compiled function no longer raises on a new size, and the "
              "assert runs in the graph: a failing input raises RuntimeError with the message, "
              "not AssertionError"),
    )


def _needs_parentheses(node: cst.BaseExpression) -> bool:
    return isinstance(node, (cst.BooleanOperation, cst.Comparison, cst.IfExp, cst.Lambda, cst.NamedExpr))
