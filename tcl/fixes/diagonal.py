"""`t.fill_diagonal_(v)` rewritten so the size stays symbolic (TCL506).

`fill_diagonal_` needs its tensor's exact sizes in Python: under torch.compile every new size
recompiles (measured on 2.13 by scripts/gen_torch_facts.py). Indexing the diagonal with an
`arange` keeps the size symbolic (measured: the automatic-dynamic recompile only, for square,
wide and tall tensors):

    t.fill_diagonal_(v)   ->   t[(torch.arange(min(t.shape), device=t.device),) * t.dim()] = v

For every input `fill_diagonal_` accepts -- a 2-D tensor of any shape, or an N-D tensor whose
dims are all equal, `wrap=False` -- both write `v` to the positions (i, i, ...) for
i < min(t.shape), in place, casting `v` to t's dtype the same way (tests/test_fix_properties.py
checks dtypes, shapes and values): SAFE. Inputs on which `fill_diagonal_` raises (fewer than 2
dims, unequal dims beyond 2-D) no longer raise. Only a bare statement whose receiver is a name
or attribute chain (evaluated three times, with no side effect) is rewritten; `wrap=True` and
uses of the return value are left alone.
"""

from __future__ import annotations

import libcst as cst

from .base import SAFE, Fix
from .exprs import plain_reference


def fix_fill_diagonal(finding, node: cst.CSTNode, ctx) -> Fix | None:
    if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
            and node.func.attr.value == "fill_diagonal_"):
        return None
    statement = ctx.parent(node)
    if not isinstance(statement, cst.Expr) or statement.value is not node:
        return None
    receiver = node.func.value
    if not plain_reference(receiver):
        return None
    values = [a for a in node.args if a.keyword is None or a.keyword.value == "fill_value"]
    others = [a for a in node.args if a not in values]
    if len(values) != 1 or values[0].star or any(
            not (a.keyword is not None and a.keyword.value == "wrap" and isinstance(a.value, cst.Name)
                 and a.value.value == "False") for a in others):
        return None
    t = ctx.code(receiver)
    value = ctx.code(values[0].value)
    line = ctx.statement(f"{t}[(torch.arange(min({t}.shape), device={t}.device),) * {t}.dim()] = {value}")
    return Fix(
        code=finding.code, line=finding.line, col=finding.col,
        title=f"index the diagonal of {t} instead of fill_diagonal_",
        safety=SAFE,
        replacements={statement: line.body[0]},
        note="same values for every input fill_diagonal_ accepts; inputs it rejects (fewer than 2 "
             "dims, unequal dims beyond 2-D) no longer raise",
        needs_torch=True,
    )
