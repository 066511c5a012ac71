"""What `[tool.tcl] assume` decides: tests that Dynamo folds once it knows the mode and dtype
the code is compiled under (it guards on `self.training` and on dtypes)."""

from __future__ import annotations

import libcst as cst

from .config import FLOAT_DTYPES
from .kinds import SELF


def assumed_truth(test: cst.BaseExpression, index, assume: dict) -> bool | None:
    """True/False when `assume` decides the test: `self.training` (also `is True`), or a
    floating dtype compared with `==`/`!=`/`is`/`in`; None otherwise."""
    training = assume.get("training")
    if training is not None and _is_self_training(test):
        return training
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return None
    left, (target,) = test.left, test.comparisons
    right, operator = target.comparator, target.operator
    if training is not None and isinstance(operator, (cst.Is, cst.Equal, cst.IsNot, cst.NotEqual)):
        # `self.training is True` (Reformer)
        for flag, constant in ((left, right), (right, left)):
            if _is_self_training(flag) and isinstance(constant, cst.Name) and constant.value in ("True", "False"):
                same = training == (constant.value == "True")
                return same if isinstance(operator, (cst.Is, cst.Equal)) else not same
    dtype = assume.get("dtype")
    if dtype is None:
        return None
    dtype = FLOAT_DTYPES[str(dtype).removeprefix("torch.")]
    if not _is_dtype_read(left):
        left, right = right, left
        if isinstance(operator, (cst.In, cst.NotIn)) or not _is_dtype_read(left):
            return None
    options = [e.value for e in right.elements] if isinstance(right, (cst.Tuple, cst.List, cst.Set)) else [right]
    names = [FLOAT_DTYPES.get((index.qualify(o) or "").removeprefix("torch.")) for o in options]
    if not names or None in names or not all((index.qualify(o) or "").startswith("torch.") for o in options):
        return None  # an integer dtype, or something tcl cannot name: not decided
    if isinstance(operator, (cst.Equal, cst.Is, cst.In)):
        return dtype in names
    if isinstance(operator, (cst.NotEqual, cst.IsNot, cst.NotIn)):
        return dtype not in names
    return None


def _is_self_training(node: cst.BaseExpression) -> bool:
    return (
        isinstance(node, cst.Attribute) and node.attr.value == "training"
        and isinstance(node.value, cst.Name) and node.value.value == SELF
    )


def _is_dtype_read(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Attribute) and node.attr.value == "dtype"
