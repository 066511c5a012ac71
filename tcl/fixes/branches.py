"""Data-dependent branches (TCL201) -> torch.where / torch.cond; `.item()`/`float(t)` in a
branch test (TCL203/TCL204) -> a tensor comparison, then the same branch rewrite.

When is `torch.where(cond, a, b)` the same as `a if cond else b`? (the rule tcl applies)

SAFE, applied by `tcl fix --apply`, when all of:

1. `cond` is provably a 0-d tensor: a full reduction (`x.any()`, `torch.isnan(x).all()`,
   `x.sum()`, `x.norm()`, ... without `dim`), or comparisons / `~ & |` / elementwise functions
   of those and number literals. Then torch.where broadcasts only `a` against `b`. (A Python
   `not` becomes `torch.logical_not`; `and`/`or` evaluate both sides, so they make it UNSAFE.)
2. `a` and `b` are the same variable `x` through pure elementwise ops with literal arguments:
   `x`, `-x`, `x * 2`, `x + 1`, `x ** 2`, `x.abs()`, `x.relu()`, `x.clamp(-6, 6)`,
   `x.nan_to_num()`, `x.masked_fill(x < 0, 0)`, ... These keep `x`'s shape, keep its dtype for
   every non-bool dtype, cannot raise, and have no side effects, so evaluating the side eager
   would have skipped changes nothing. (bool tensors are not arithmetic operands in practice:
   `-mask` raises, eager or not.)
3. Structure: both branches only assign the same plain names (or both `return`), each name once;
   a value never reads a name assigned before it in the rewrite; with no `else`, each name is
   bound before the `if` (a parameter or an earlier straight-line assignment).

UNSAFE (`--unsafe-fixes`) when the structure fits but (1) or (2) cannot be shown: other tensors
(shapes may broadcast: `x.masked_fill(mask, v)` grows `x` to `mask`'s shape), float constants
(`x.clamp(-6e4, 6e4)` turns an int64 `x` into float32), module calls are never rewritten
(dropout draws random numbers, a submodule may update buffers). Backward note: where the
unused side has an infinite derivative (`sqrt`, `log` at 0), torch.where's gradient is NaN.

torch.cond (`if p: ...; return a else: ...; return b`, side-effect-free bodies) is always
UNSAFE: torch.cond raises unless both branches return tensors of identical shape and dtype,
which tcl cannot prove, and its first eager call compiles the branches.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from ..dataflow import Kind
from .base import SAFE, SUGGESTION, UNSAFE, Fix, Safety
from .checks import check_in_graph
from .exprs import (
    argument_code, chain, exact_in_float_dtypes, is_number, names_in, needs_parens, number, pure,
    tensor_condition,
)

BROADCAST_NOTE = "both sides are evaluated and broadcast together: shapes or dtypes can differ from eager"


@dataclass
class Verdict:
    safety: Safety
    notes: list[str]

    def lower(self, safety: Safety, note: str | None = None) -> None:
        self.safety = min(self.safety, safety)
        if note and note not in self.notes:
            self.notes.append(note)

    @property
    def note(self) -> str:
        return "; ".join(self.notes)


# -- entry points (Rule.fixer) ----------------------------------------------------------------


def fix_branch(finding, node: cst.CSTNode, ctx) -> Fix | None:
    """TCL201: `node` is the test of an if / conditional expression / assert."""
    parent = ctx.parent(node)
    if isinstance(parent, cst.If) and parent.test is node:
        from .guards import guard_reporting_branch

        fix = (check_in_graph(finding, parent, node, ctx) or guard_reporting_branch(finding, parent, ctx)
               or fix_if(finding, parent, node, ctx, Verdict(SAFE, [])))
    elif isinstance(parent, cst.IfExp) and parent.test is node:
        fix = fix_ifexp(finding, parent, node, ctx, Verdict(SAFE, []))
    elif isinstance(parent, cst.Assert) and parent.test is node:
        from .asserts import fix_assert_condition

        fix = fix_assert_condition(finding, parent, ctx)
    else:
        return None
    if fix is None or fix.safety < SAFE:
        # A safe reorder beats an unsafe rewrite; once applied, the next round rewrites the
        # reordered test if it can (a check `P or T` is kept in the graph, tcl/fixes/checks.py).
        from .operand_order import python_tests_first

        return python_tests_first(finding, parent, node, ctx) or fix
    return fix


def fix_scalar_test(finding, node: cst.CSTNode, ctx) -> Fix | None:
    """TCL203/TCL204: `.item()` / `float(t)` / `int(t)` / `bool(t)` inside a branch test."""
    owner, previous = None, node
    for ancestor in ctx.ancestors(node):
        if isinstance(ancestor, (cst.If, cst.IfExp)) and ancestor.test is previous:
            owner = ancestor
            break
        if isinstance(ancestor, (cst.BaseStatement, cst.Lambda, cst.BaseComp)):
            return None
        previous = ancestor
    if owner is None:
        return None
    verdict = Verdict(SAFE, [])
    stripped = _strip_scalars(owner.test, ctx, verdict)
    if stripped is None or stripped is owner.test:
        return None
    if isinstance(owner, cst.If):
        fix = check_in_graph(finding, owner, stripped, ctx, verdict.safety, tuple(verdict.notes)) \
            or fix_if(finding, owner, stripped, ctx, verdict)
    else:
        fix = fix_ifexp(finding, owner, stripped, ctx, verdict)
    if fix is not None:
        fix.title = "compare tensors instead of Python scalars, " + fix.title
        return fix
    return Fix(
        code=finding.code, line=finding.line, col=finding.col,
        title="compare tensors instead of Python scalars",
        safety=SUGGESTION,
        replacements={owner.test: stripped},
        note="the branch still breaks the graph (TCL201) unless it is turned into torch.where/torch.cond",
    )


# -- `.item()` in tests -----------------------------------------------------------------------

SCALAR_BUILTINS = {"builtins.float": "float", "builtins.int": "int", "builtins.bool": "bool"}


def _scalar_operand(node: cst.BaseExpression, ctx) -> tuple[cst.BaseExpression, str] | None:
    """`t.item()` -> (t, "item"), `float(t)` -> (t, "float"), ... else None."""
    if not isinstance(node, cst.Call):
        return None
    func = node.func
    if isinstance(func, cst.Attribute) and func.attr.value == "item" and not node.args:
        return func.value, "item"
    kind = SCALAR_BUILTINS.get(ctx.qualify(func) or "")
    if kind and len(node.args) == 1 and node.args[0].keyword is None and not node.args[0].star:
        value = node.args[0].value
        if needs_parens(value):
            value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        return value, kind
    return None


def _strip_scalars(test: cst.BaseExpression, ctx, verdict: Verdict) -> cst.BaseExpression | None:
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _strip_scalars(test.expression, ctx, verdict)
        return None if inner is None else test.with_changes(expression=inner)
    if isinstance(test, cst.BooleanOperation):
        left, right = _strip_scalars(test.left, ctx, verdict), _strip_scalars(test.right, ctx, verdict)
        return None if left is None or right is None else test.with_changes(left=left, right=right)
    scalar = _scalar_operand(test, ctx)
    if scalar is not None:  # truth value: `if t.item():` is `if t:` (NaN is true in both)
        value, kind = scalar
        if kind == "int":
            verdict.lower(UNSAFE, "UNSAFE: int(t) truncates (int(0.5) is falsy, 0.5 is not)")
        return value.with_changes(lpar=list(test.lpar) + list(value.lpar), rpar=list(value.rpar) + list(test.rpar))
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        target = test.comparisons[0]
        left, right = _scalar_operand(test.left, ctx), _scalar_operand(target.comparator, ctx)
        if left is None and right is None:
            return test
        other = target.comparator if left is not None else test.left
        kinds = [s[1] for s in (left, right) if s is not None]
        if "int" in kinds:
            verdict.lower(UNSAFE, "UNSAFE: int(t) truncates before comparing; the tensor comparison does not")
        if not is_number(other) or (left is not None and right is not None):
            verdict.lower(UNSAFE, "UNSAFE: the comparison now runs in the tensor's dtype, not in Python floats")
        elif not exact_in_float_dtypes(number(other)):
            constant = ctx.code(other).strip()
            verdict.lower(UNSAFE, f"UNSAFE: {constant} is not exact in float16/bfloat16: "
                                  "values next to it may compare differently")
        return test.with_changes(
            left=left[0] if left is not None else test.left,
            comparisons=[target.with_changes(comparator=right[0] if right is not None else target.comparator)],
        )
    return test


# -- values: what torch.where(cond, a, b) needs ----------------------------------------------


def _is_tensor_value(node: cst.BaseExpression, ctx) -> bool:
    if ctx.is_tensor(node):
        return True
    name = ctx.qualify(node.func) if isinstance(node, cst.Call) else None
    return bool(name and name.startswith("torch."))


def pair_verdict(a: cst.BaseExpression, b: cst.BaseExpression, ctx, verdict: Verdict) -> bool:
    """Whether `torch.where(c, a, b)` may stand for `a if c else b`; lowers `verdict` as needed."""
    for value in (a, b):
        if isinstance(value, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString, cst.Tuple,
                              cst.List, cst.Dict, cst.Set, cst.Lambda)):
            return False
        if isinstance(value, cst.Name) and value.value in ("None", "True", "False"):
            return False
        if not pure(value, ctx):
            return False  # module calls, RNG, in-place ops: evaluating the unused side changes things
    if not (_is_tensor_value(a, ctx) or _is_tensor_value(b, ctx)):
        return False
    qualify = ctx.qualify
    if _indexes(a, b, qualify) or _indexes(b, a, qualify):
        return False  # `x[..., :-n]` vs `x`: the branch is there to change the shape
    ca, cb = chain(a, qualify), chain(b, qualify)
    if ca is None or cb is None or ca.base.value != cb.base.value:
        verdict.lower(UNSAFE, f"UNSAFE: {BROADCAST_NOTE}")
        return True
    if not (ctx.is_tensor(ca.base) or ctx.is_tensor(cb.base)):
        verdict.lower(UNSAFE, f"UNSAFE: `{ca.base.value}` may not be a tensor")
    if ca.float_literal or cb.float_literal:
        verdict.lower(UNSAFE, "UNSAFE: a float constant would turn an integer tensor into float32 on both sides")
    return True


def _indexes(value: cst.BaseExpression, other: cst.BaseExpression, qualify) -> bool:
    """`value` indexes or slices the tensor `other` is (through elementwise ops): their shapes
    differ whenever the branch matters, so torch.where raises or broadcasts to a wrong shape."""
    if not isinstance(value, cst.Subscript):
        return False
    inner, base = chain(value.value, qualify), chain(other, qualify)
    return inner is not None and base is not None and inner.base.value == base.base.value


def condition_verdict(test: cst.BaseExpression, ctx, verdict: Verdict):
    condition = tensor_condition(test, ctx)
    if condition is None:
        return None
    if not condition.zero_dim:
        verdict.lower(UNSAFE, "UNSAFE: the condition is not provably a 0-d tensor: torch.where would broadcast it")
    if not condition.exact:
        verdict.lower(UNSAFE, "UNSAFE: `and`/`or` now evaluate both operands")
    return condition


# -- `if` statements ----------------------------------------------------------------------------


def _small_statements(block) -> list[tuple[cst.BaseSmallStatement, cst.CSTNode | None]] | None:
    if isinstance(block, cst.SimpleStatementSuite):
        return [(s, None) for s in block.body]
    if not isinstance(block, cst.IndentedBlock):
        return None
    out = []
    for line in block.body:
        if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
            return None
        out.append((line.body[0], line))
    return out


def _assignments(block) -> list[tuple[str, cst.BaseExpression]] | None:
    statements = _small_statements(block)
    if not statements:
        return None
    out, seen = [], set()
    for small, _ in statements:
        if not (isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name)):
            return None
        name = small.targets[0].target.value
        if name in seen:
            return None
        seen.add(name)
        out.append((name, small.value))
    return out


def _split_temporaries(values, is_result):
    """(temporaries, results): temporaries are the leading assignments of names that are not
    results; a temporary after a result would see the result's new value, so that is refused."""
    temporaries, results = [], []
    for name, value in values:
        if is_result(name):
            results.append((name, value))
        elif results:
            return None
        else:
            temporaries.append((name, value))
    return temporaries, results


def _local_temporaries(temporaries, if_node: cst.If, ctx) -> bool:
    """Each temporary is pure and read nowhere outside the if's branches (so hoisting it above
    the rewrite binds a name nothing else looks at)."""
    if not temporaries:
        return True
    blocks = [if_node.body] + ([if_node.orelse.body] if if_node.orelse is not None else [])
    inside: dict[str, int] = {}
    for block in blocks:
        for node in _name_nodes(block):
            inside[node.value] = inside.get(node.value, 0) + 1
    everywhere: dict[str, int] = {}
    for node in _name_nodes(ctx.function.node.body):
        everywhere[node.value] = everywhere.get(node.value, 0) + 1
    for name, value in temporaries:
        if everywhere.get(name, 0) != inside.get(name, 0) or not pure(value, ctx):
            return False
    return True


def _single_return(block) -> cst.BaseExpression | None:
    statements = _small_statements(block)
    if statements and len(statements) == 1 and isinstance(statements[0][0], cst.Return):
        value = statements[0][0].value
        return value if value is not None and not isinstance(value, cst.Tuple) else None
    return None


def _sibling_after(statement: cst.CSTNode, ctx) -> cst.CSTNode | None:
    block = ctx.parent(statement)
    if not isinstance(block, cst.IndentedBlock):
        return None
    body = list(block.body)
    for i, item in enumerate(body):
        if item is statement:
            return body[i + 1] if i + 1 < len(body) else None
    return None


def _return_line(statement) -> cst.BaseExpression | None:
    if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 and isinstance(statement.body[0], cst.Return):
        value = statement.body[0].value
        return value if value is not None and not isinstance(value, cst.Tuple) else None
    return None


def bound_before(name: str, statement: cst.CSTNode, ctx) -> bool:
    """`name` is a parameter, or assigned by a straight-line statement before `statement`."""
    function = ctx.function.node
    params = function.params
    for param in [*params.posonly_params, *params.params, *params.kwonly_params]:
        if param.name.value == name:
            return True
    node = statement
    while node is not None and node is not function:
        parent = ctx.parent(node)
        if isinstance(parent, cst.IndentedBlock):
            for item in parent.body:
                if item is node:
                    break
                if isinstance(item, cst.SimpleStatementLine) and any(_binds(small, name) for small in item.body):
                    return True
        node = parent
    return False


def _binds(small: cst.BaseSmallStatement, name: str) -> bool:
    if isinstance(small, cst.Assign):
        return any(name in _target_names(t.target) for t in small.targets)
    if isinstance(small, cst.AnnAssign):
        return small.value is not None and name in _target_names(small.target)
    return False


def _target_names(target) -> set[str]:
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        names = set()
        for element in target.elements:
            value = element.value
            names |= _target_names(value.value if isinstance(value, cst.StarredElement) else value)
        return names
    return set()


def _comments(if_node: cst.If, consumed=None) -> tuple[list[cst.EmptyLine], cst.Comment | None]:
    """Statement-level comments of the if statement (and of a consumed `return` after it), as
    lines to keep above the rewrite, and the `if` header's comment. Comments inside an
    expression stay where they are: the expression's code is reused verbatim."""
    lines: list[cst.EmptyLine] = []

    def keep(comment) -> None:
        if comment is not None:
            lines.append(cst.EmptyLine(comment=comment))

    def block(node) -> None:
        if isinstance(node, cst.SimpleStatementSuite):
            keep(node.trailing_whitespace.comment)
            return
        keep(node.header.comment)
        for line in node.body:
            for empty in line.leading_lines:
                keep(empty.comment)
            if isinstance(line, cst.SimpleStatementLine):
                keep(line.trailing_whitespace.comment)
        for empty in node.footer:
            keep(empty.comment)

    body = if_node.body
    header = body.header.comment if isinstance(body, cst.IndentedBlock) else body.trailing_whitespace.comment
    block(body)
    if if_node.orelse is not None:
        for empty in if_node.orelse.leading_lines:
            keep(empty.comment)
        block(if_node.orelse.body)
    if isinstance(consumed, cst.SimpleStatementLine):
        for empty in consumed.leading_lines:
            keep(empty.comment)
        keep(consumed.trailing_whitespace.comment)
    if header is not None:
        lines = [line for line in lines if line.comment is not header]
    return lines, header


def fix_if(finding, if_node: cst.If, test: cst.BaseExpression, ctx, verdict: Verdict) -> Fix | None:
    if isinstance(ctx.parent(if_node), cst.If):
        return None  # an `elif`
    if not isinstance(ctx.parent(if_node), cst.IndentedBlock):
        return None
    orelse = if_node.orelse
    if orelse is not None and not isinstance(orelse, cst.Else):
        return None
    where_verdict = Verdict(verdict.safety, list(verdict.notes))
    condition = condition_verdict(test, ctx, where_verdict)
    if condition is None:
        return None
    fix = _where_statements(finding, if_node, condition.code, ctx, where_verdict)
    if fix is None:
        fix = _cond_rewrite(finding, if_node, condition.code, ctx, verdict)
    return fix


def _where_statements(finding, if_node: cst.If, cond_code: str, ctx, verdict: Verdict) -> Fix | None:
    orelse = if_node.orelse
    consumed = None
    returns = None
    body_return = _single_return(if_node.body)
    if body_return is not None:
        if orelse is not None:
            other = _single_return(orelse.body)
        else:
            consumed = _sibling_after(if_node, ctx)
            other = _return_line(consumed) if consumed is not None else None
        if other is None:
            return None
        returns = (body_return, other)
    cond_line = 0
    if returns is not None:
        if not pair_verdict(returns[0], returns[1], ctx, verdict):
            return None
        code = f"return torch.where({cond_code}, {_arg(returns[0], ctx)}, {_arg(returns[1], ctx)})"
        statements = [ctx.statement(code)]
    else:
        true_values = _assignments(if_node.body)
        if true_values is None:
            return None
        if orelse is not None:
            false_values = _assignments(orelse.body)
            if false_values is None:
                return None
            common = {n for n, _ in true_values} & {n for n, _ in false_values}
            split_true = _split_temporaries(true_values, lambda n: n in common)
            split_false = _split_temporaries(false_values, lambda n: n in common)
            if split_true is None or split_false is None:
                return None
            temporaries = split_true[0] + split_false[0]
            false_map = dict(split_false[1])
            pairs = [(name, value, false_map[name]) for name, value in split_true[1]]
        else:
            split = _split_temporaries(true_values, lambda n: bound_before(n, if_node, ctx))
            if split is None:
                return None
            temporaries = split[0]
            pairs = [(name, value, None) for name, value in split[1]]
        if not pairs or not _local_temporaries(temporaries, if_node, ctx):
            return None
        if temporaries:
            names = ", ".join(n for n, _ in temporaries)
            verdict.lower(UNSAFE, f"UNSAFE: {names} now computed (and bound) when the branch is not taken")
        assigned: set[str] = set()
        for name, a, b in pairs:
            reads = names_in(a) | (names_in(b) if b is not None else set())
            if reads & assigned:
                return None  # reads a name an earlier line of the rewrite already changed
            if b is not None:
                ok = pair_verdict(a, b, ctx, verdict)
            else:
                ok = pair_verdict(a, cst.Name(name), ctx, verdict)  # the value before the `if`
            if not ok:
                return None
            assigned.add(name)
        code_lines = [f"{name} = {ctx.code(value).strip()}" for name, value in temporaries]
        cond = cond_code
        if len(pairs) > 1:
            temp = _fresh_name("_tcl_cond", ctx)
            code_lines.append(f"{temp} = {cond_code}")
            cond = temp
        for name, a, b in pairs:
            b_code = _arg(b, ctx) if b is not None else name
            code_lines.append(f"{name} = torch.where({cond}, {_arg(a, ctx)}, {b_code})")
        statements = [ctx.statement(line) for line in code_lines]
        cond_line = len(temporaries)
    comments, header = _comments(if_node, consumed)
    statements[0] = statements[0].with_changes(leading_lines=list(if_node.leading_lines) + comments)
    if header is not None:
        statements[cond_line] = statements[cond_line].with_changes(
            trailing_whitespace=cst.TrailingWhitespace(
                whitespace=cst.SimpleWhitespace("  "), comment=header, newline=cst.Newline()
            )
        )
    replacements = {if_node: cst.FlattenSentinel(statements) if len(statements) > 1 else statements[0]}
    if consumed is not None:
        replacements[consumed] = cst.RemoveFromParent()
    return Fix(
        code=finding.code, line=finding.line, col=finding.col,
        title="select with torch.where",
        safety=verdict.safety,
        replacements=replacements,
        note=verdict.note,
        needs_torch=True,
    )


def _name_nodes(node: cst.CSTNode) -> list[cst.Name]:
    found: list[cst.Name] = []

    class Collect(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            found.append(n)

        def visit_Attribute(self, n: cst.Attribute) -> bool:
            n.value.visit(self)
            return False

        def visit_Arg(self, n: cst.Arg) -> bool:
            n.value.visit(self)
            return False

    node.visit(Collect())
    return found


def _arg(node: cst.BaseExpression, ctx) -> str:
    return argument_code(node, ctx.code(node).strip())


def _fresh_name(stem: str, ctx) -> str:
    used = names_in(ctx.function.node)
    if stem not in used:
        return stem
    i = 2
    while f"{stem}{i}" in used:
        i += 1
    return f"{stem}{i}"


# -- conditional expressions ------------------------------------------------------------------


def fix_ifexp(finding, ifexp: cst.IfExp, test: cst.BaseExpression, ctx, verdict: Verdict) -> Fix | None:
    verdict = Verdict(verdict.safety, list(verdict.notes))
    condition = condition_verdict(test, ctx, verdict)
    if condition is None or not pair_verdict(ifexp.body, ifexp.orelse, ctx, verdict):
        return None
    code = f"torch.where({condition.code}, {_arg(ifexp.body, ctx)}, {_arg(ifexp.orelse, ctx)})"
    replacement = ctx.expression(code).with_changes(lpar=ifexp.lpar, rpar=ifexp.rpar)
    return Fix(
        code=finding.code, line=finding.line, col=finding.col,
        title="select with torch.where",
        safety=verdict.safety,
        replacements={ifexp: replacement},
        note=verdict.note,
        needs_torch=True,
    )


# -- torch.cond ---------------------------------------------------------------------------------


def _branch_function_body(block) -> tuple[list[cst.CSTNode], cst.BaseExpression] | None:
    """Pure assignments ending in `return value`: (lines before the return, returned value)."""
    if not isinstance(block, cst.IndentedBlock):
        return None
    lines = list(block.body)
    if not lines:
        return None
    for line in lines:
        if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
            return None
    *prefix, last = lines
    value = _return_line(last)
    if value is None:
        return None
    for line in prefix:
        small = line.body[0]
        if not (isinstance(small, cst.Assign) and all(isinstance(t.target, cst.Name) for t in small.targets)):
            return None
    return prefix, value


def _cond_rewrite(finding, if_node: cst.If, cond_code: str, ctx, verdict: Verdict) -> Fix | None:
    true_branch = _branch_function_body(if_node.body)
    consumed = None
    if if_node.orelse is not None:
        false_branch = _branch_function_body(if_node.orelse.body)
    else:
        consumed = _sibling_after(if_node, ctx)
        value = _return_line(consumed) if consumed is not None else None
        false_branch = ([], value) if value is not None else None
    if true_branch is None or false_branch is None:
        return None
    branches = [true_branch, false_branch]
    blocks = [if_node.body, if_node.orelse.body if if_node.orelse is not None else None]
    for (prefix, value), block in zip(branches, blocks):
        for line in prefix:
            small = line.body[0]
            if not pure(small.value, ctx):
                return None
            if _is_tensor_value(small.value, ctx) or _reads_tensor(small.value, ctx):
                # a tensor computed in the branch: later lines of the branch use it as one
                targets = {t.target.value for t in small.targets}
                for node in _name_nodes(block):
                    if node.value in targets:
                        ctx.kinds[node] = Kind.TENSOR
        if not pure(value, ctx) or not _is_tensor_value(value, ctx) and not _reads_tensor(value, ctx):
            return None
    operands = _operands(branches, ctx)
    if operands is None:
        return None
    true_name = _fresh_name("_tcl_true_fn", ctx)
    false_name = _fresh_name("_tcl_false_fn", ctx)
    params = ", ".join(operands)
    functions = []
    for name, (prefix, value) in zip((true_name, false_name), branches):
        value_code = ctx.code(value).strip()
        if isinstance(value, cst.Name) and value.value in operands:
            value_code += ".clone()"  # torch.cond rejects a branch returning its input itself
        template = ctx.statement(f"def {name}({params}):\n    pass")
        body = [line for line in prefix] + [ctx.statement(f"return {value_code}")]
        functions.append(template.with_changes(body=cst.IndentedBlock(body=body)))
    operand_tuple = f"({params},)" if len(operands) == 1 else f"({params})"
    call = ctx.statement(f"return torch.cond({cond_code}, {true_name}, {false_name}, {operand_tuple})")
    comments, header = _comments(if_node, consumed)
    functions[0] = functions[0].with_changes(leading_lines=list(if_node.leading_lines))
    if header is not None:
        call = call.with_changes(trailing_whitespace=cst.TrailingWhitespace(
            whitespace=cst.SimpleWhitespace("  "), comment=header, newline=cst.Newline()))
    replacements = {if_node: cst.FlattenSentinel([*functions, call])}
    if consumed is not None:
        replacements[consumed] = cst.RemoveFromParent()
    return Fix(
        code=finding.code, line=finding.line, col=finding.col,
        title="lift the branches into torch.cond",
        safety=min(verdict.safety, UNSAFE),
        replacements=replacements,
        note="UNSAFE: torch.cond raises unless both branches return tensors of the same shape and dtype, "
             "and its first eager call compiles the branches",
        needs_torch=True,
    )


def _reads_tensor(value: cst.BaseExpression, ctx) -> bool:
    return any(ctx.is_tensor(n) for n in _name_nodes(value))


def _operands(branches, ctx) -> list[str] | None:
    """Tensors the branches read from the enclosing function, in order of first use."""
    local = _function_locals(ctx)
    order: list[str] = []
    for prefix, value in branches:
        assigned: set[str] = set()
        nodes = []
        for line in prefix:
            nodes.extend(_name_nodes(line.body[0].value))
            assigned |= {t.target.value for t in line.body[0].targets}
        nodes.extend(_name_nodes(value))
        for node in nodes:
            name = node.value
            if name in assigned or name not in local or name in order:
                continue
            if ctx.is_tensor(node):
                order.append(name)
    return order or None


def _function_locals(ctx) -> set[str]:
    function = ctx.function.node
    params = function.params
    names = {p.name.value for p in [*params.posonly_params, *params.params, *params.kwonly_params]}

    class Collect(cst.CSTVisitor):
        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            names.update(_target_names(node.target))

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            names.update(_target_names(node.target))

    function.body.visit(Collect())
    return names - {"self", "cls"}
