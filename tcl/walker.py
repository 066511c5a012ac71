"""Walks one traced function: keeps the local environment, skips code Dynamo never traces, and
hands every node to the rules that asked for its type.
"""

from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

import libcst as cst

from . import syntax_walk
from .dataflow import Kind, is_tensor, join
from .frame_skips import RESUMABLE_CONTEXTS, ancestor_ids
from .guard_facts import assigned_attributes, facts_if, is_own_method_call
from .local_constants import joined_literal
from .branches import (
    exits_if_true, exits_under_compile, names_bound_in, none_when, not_tensors_when, settled_operands,
    target_names,
)
from .kinds import SELF, KindEvaluator, string_key
from .module_index import FunctionInfo, ModuleIndex
from .names import LOGGER_NAMES, dotted, names_in
from .params import all_params as _all_params, positional_params, tensor_evidenced_names
from .sizes import expand_shape_slices, fixed_tensor, size_of, unpacked_shape_origins
from .known_values import KnownValues
from .walker_findings import Candidate, FindingReports

if TYPE_CHECKING:
    from .rules.base import Rule

# A guard fact a constructor call carries to the __init__ it reaches (CallSite.facts) when the
# call runs eagerly inside a compiled call (FunctionWalker.runs_eagerly_here).
EAGER_CONSTRUCTION = ("<built where the compiled call runs eagerly>",)
# A method run on an object the traced code itself built (`solver = make_solver(...);
# solver.integrate(t)`): its attributes start afresh on every call, so nothing Dynamo reads from
# them carries over between calls (TCL507). Passed on to the object's own `self.m()` calls.
FRESH_OBJECT = ("<an object the traced code built>",)

AMPLIFIERS = (cst.For, cst.While, cst.With, cst.Try)


class CallSite(NamedTuple):
    """What one call passes its callee (a method's `self` excluded)."""

    positional: list[Kind]  # kinds of the positional arguments
    keywords: dict[str, Kind]  # kinds of the keyword arguments
    crossed: frozenset = frozenset()  # positions / keywords of values live at a graph break
    tuples: dict = {}  # position / keyword -> element kinds of a tuple display passed there
    sizes: dict = {}  # position / keyword -> whether the size passed there varies (tcl/sizes.py)
    facts: frozenset = frozenset()  # guard facts on `self` attributes at a `self.m()` call (tcl/guard_facts.py)
    # position / keyword -> the literal passed there (tcl/params.py constant_params); None when
    # the call spreads *args / **kwargs or its target is one of several (positions differ)
    literals: dict | None = None
    # positions / keywords of tensors whose sizes the caller's module fixes (`self.weight`, a
    # factory of constants: tcl/sizes.py fixed_tensor)
    fixed: frozenset = frozenset()


@dataclass
class FunctionResult:
    candidates: list[Candidate] = field(default_factory=list)
    returns: Kind | None = None
    # When every `return` gives a tuple of one length: the kind of each element, joined.
    tuple_returns: tuple[Kind, ...] | None = None
    returns_other: bool = False  # some `return` is not such a tuple
    calls: list[tuple[FunctionInfo, "CallSite"]] = field(default_factory=list)
    call_nodes: list[cst.CSTNode] = field(default_factory=list)  # the node of each of `calls`
    # A default-mode graph break on a path every call takes: the caller's graph ends at the call.
    breaks: bool = False
    # The literal every `return` the walk reached gives, as (True, value); None when it reached
    # none, MIXED when they differ or one is not a literal (tcl/local_constants.py). Only on a
    # walk with tracks_returned_literal.
    returns_literal: object = None
    stops_early: bool = False  # a return or raise decided before tracing ends the body's walk


class FunctionWalker(FindingReports, KnownValues, cst.CSTVisitor):
    def __init__(
        self,
        function: FunctionInfo,
        index: ModuleIndex,
        rules: dict[str, list[tuple["Rule", str]]],
        param_kinds: dict[str, Kind],
        resolve_call,
        return_kind,
        version: tuple[int, int],
        is_entry: bool = False,
        plans: dict | None = None,
        crossed: frozenset = frozenset(),
        tuples: dict | None = None,
        sized: dict | None = None,
        fixed: frozenset = frozenset(),
        body_typed: frozenset = frozenset(),
        tuple_returns=lambda function: None,
        resolve_property=lambda node: None,
        dispatch_targets=lambda call: (),
        named_method_targets=lambda call: [],
        override_targets=lambda call: (),
        callee_breaks=lambda function: False,
        assume: dict | None = None,
        params_from_callers: bool | None = None,
        facts: dict | None = None,
        constants: dict | None = None,
        field_kind=lambda node: None,
        str_enum=lambda name: False,
        returned_literal=lambda asked: None,
        tracks_returned_literal: bool = False,
    ) -> None:
        self.assume = assume or None
        # Guard facts every caller's `if` established on `self` attributes (tcl/guard_facts.py),
        # then those of the `if`s the walk is inside, innermost last.
        self.fact_scopes: list[dict] = [dict(facts or {})]
        # Operands the tests before an `elif` proved (tcl/branches.py settled_operands), in force
        # while the `elif` chain is walked.
        self.settled_scopes: list[dict[str, bool]] = []
        self.self_writes: set[str] = set()  # `self.attr` assigned so far: its facts no longer hold
        # Parameters every traced caller gives the same literal (tcl/params.py constant_params).
        self.constants: dict = dict(constants or {})
        # Locals bound once to a value known before tracing (tcl/local_constants.py): name ->
        # the value. Judged when first read (`_local_value`): until then, the `name = value`
        # statements at the top of the body walked so far. A helper's result is asked for
        # only by a test.
        self.local_constants: dict = {}
        self._local_candidates: dict[str, cst.Assign] = {}
        self.returned_literal = returned_literal  # tcl/known_values.py KnownValues
        # FunctionResult.returns_literal is kept only on a walk that asks for it (the engine's
        # returned_literal): every other walk would read its returns' literals for nothing.
        self.tracks_returned_literal = tracks_returned_literal
        self._body_stopped = False  # the walk left the body early: its end is never reached
        # Whether parameter kinds are what callers pass (a helper) or the entry's defaults.
        self.params_from_callers = (not is_entry) if params_from_callers is None else params_from_callers
        self.callee_breaks = callee_breaks
        self.str_enum = str_enum  # class name -> whether it is a str-valued Enum (engine)
        self.tuple_returns = tuple_returns
        self.dispatch_targets = dispatch_targets
        self.named_method_targets = named_method_targets
        self.override_targets = override_targets
        self.resolve_property = resolve_property
        self.function = function
        self.is_entry = is_entry  # torch.compile calls it directly: arguments come from outside
        self.parameters = {p.name.value for p in _all_params(function.node.params)}
        self.index = index
        self.rules = rules
        self.version = version
        self.env: dict[str, Kind] = dict(param_kinds)
        self.assigned: set[str] = set()  # names bound in the body (not only parameters)
        self._module_constants: dict | None = None  # computed on the first undecided test
        self._keywords_escape: dict[str, int] = {}  # **kwargs -> tcl/params.py keywords_escape
        self._statement_of: dict[int, int] | None = None  # node id -> its body statement's index
        self.memo: dict = {}  # per-function scratch space of rules (facts they gather in source order)
        self.origins: dict[str, cst.BaseExpression] = {}  # name -> the value last assigned to it
        self.element_origins: dict[str, cst.BaseExpression] = {}  # loop variable -> what it runs over
        # every plain loop variable -> what it runs over, whatever its kind (TCL421 reads where a
        # tensor comes from: `for p in group["params"]`)
        self.loop_sources: dict[str, cst.BaseExpression] = {}
        # names bound by `for row in t` of a tensor `t`: rows, so `row[0]` has one dim less
        self.tensor_rows: set[str] = set()
        self.kind = KindEvaluator(index, function.owner, self.env, resolve_call, return_kind, field_kind)
        self.resolve_call = resolve_call
        self.result = FunctionResult()
        self.plans: dict[type, _Plan] = plans if plans is not None else {}
        self.stack: list[cst.CSTNode] = []
        self.amplifiers: list[str] = []
        self.first_call_branches = 0  # depth of state-initialisation branches (is_state_initialisation)
        # Names whose values were live at a default-mode graph break: the resumed frame gets
        # them as inputs, not as values computed in its graph.
        self.crossed: set[str] = set(crossed)
        # Names holding a tuple whose element kinds are known (a parameter every caller fills
        # with a tuple display).
        self.tuple_env: dict[str, tuple[Kind, ...]] = dict(tuples or {})
        self.kind.tuples = self.tuple_env  # the same dict: a rebinding drops the name for both
        # Parameters every traced caller fills with a size of its inputs -> whether it varies.
        self.sized: dict[str, bool | None] = dict(sized or {})
        # Tensor parameters every traced caller fills with one whose sizes its module fixes.
        # Parameters whose callers say nothing, taken for tensors from how this body uses them.
        self.body_typed: frozenset[str] = frozenset(body_typed)
        # ... their sizes are as unknown as where they come from: the recompile rules, which
        # need a size that changes between calls, do not take them for sizes of the inputs
        # (peft's `make_kron(w1, w2)` of adapter weights out of a ParameterDict).
        self.fixed_params: frozenset[str] = frozenset(fixed) | self.body_typed
        self._breaking_call: tuple[cst.Call, bool] | None = None  # and whether every call runs it
        # Every default-mode break that makes Dynamo skip the frame when it runs (_note_skip):
        # (its rule or None, the block within which every later point comes after it -- None:
        # the function body --, its candidate, and whether every point of its block, earlier
        # ones too, runs eagerly: a break in a loop, try or with that no return/break/continue
        # came before. A break Dynamo cannot resume after (Rule.resumes) leaves the graph before
        # it compiled: False, only later points are eager), and the returns/breaks/continues
        # passed before it (None for a break Dynamo cannot resume after): a hazard walked after
        # as many exits reaches it on every path, so runs eagerly too.
        self._skips: list[tuple] = []
        self._recompile_hazards: list[Candidate] = []
        self._hazard_exits: list[int] = []  # the exits passed before each recompile hazard
        # Sizes a recompile rule saw fixed to one value (_size_key, the block within which
        # every later point comes after that use, its candidate): later uses add no guard.
        self._size_guards: list[tuple] = []
        self._exits = 0  # the returns, breaks and continues of this function the walk has passed
        # An nn.Module __init__ every traced caller runs where the compiled call runs eagerly:
        # Dynamo compiles it as a frame of its own (see runs_eagerly_here).
        self.eager_construction = bool(facts) and bool(facts.get(EAGER_CONSTRUCTION))
        self.fresh_object = bool(facts) and bool(facts.get(FRESH_OBJECT))
        self._returned_by_break: cst.Call | None = None

    # -- the public surface rules use ----------------------------------------------------
    def qualname(self, node: cst.BaseExpression) -> str | None:
        return self.index.qualify(node)

    def parent(self, depth: int = 1) -> cst.CSTNode | None:
        index = len(self.stack) - 1 - depth
        return self.stack[index] if index >= 0 else None

    def is_logger(self, node: cst.BaseExpression) -> bool:
        name = dotted(node)
        if name is None:
            return isinstance(node, cst.Call) and (dotted(node.func) or "").endswith(("getLogger", "get_logger"))
        if name in self.index.loggers:
            return True
        last = name.rsplit(".", 1)[-1]
        return last in LOGGER_NAMES and name not in self.env

    def data_dependent(self, test: cst.BaseExpression) -> bool:
        """Whether Python needs the truth value of tensor data to evaluate `test`."""
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            return self.data_dependent(test.expression)
        if isinstance(test, cst.BooleanOperation):
            # Short-circuit on what is decided under compile: `not is_tracing(x) and t.any()`.
            left = self.truth(test.left)
            if left is not None:
                stops = left is False if isinstance(test.operator, cst.And) else left is True
                return False if stops else self.data_dependent(test.right)
            if self.data_dependent(test.left):
                return True
            with self._narrowed(self._right_operand_narrowing(test)):
                return self.data_dependent(test.right)
        return is_tensor(self.kind(test))

    def _right_operand_narrowing(self, node: cst.BooleanOperation) -> frozenset[str]:
        """What the left operand proves where Python goes on to the right one (true for `and`,
        false for `or`): `not torch.is_tensor(losses) and losses == 0` compares a number,
        `(x is None or ...)` after `not (... or (x is not None and is_tracing(x)))` a None."""
        goes_on = isinstance(node.operator, cst.And)
        return (none_when(node.left, goes_on, self.truth)
                | not_tensors_when(node.left, goes_on, self.index))

    @contextlib.contextmanager
    def _narrowed(self, names: frozenset[str]):
        """The names hold no tensor data while the block runs, then what they held before."""
        if not names:
            yield
            return
        before = {name: self.env.get(name) for name in names}
        for name in names:
            self.env[name] = Kind.META
        self.kind.forget()
        try:
            yield
        finally:
            for name, kind in before.items():
                if self.env.get(name) == Kind.META:
                    if kind is None:
                        self.env.pop(name, None)
                    else:
                        self.env[name] = kind
            self.kind.forget()

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> bool:
        # The right operand runs only where the left one let Python go on: its narrowing holds.
        self.walk(node.left)
        with self._narrowed(self._right_operand_narrowing(node)):
            self.walk(node.right)
        return False

    # -- traversal -----------------------------------------------------------------------
    # A read-only walk over dataclass fields. libcst's own visit() rebuilds every node it
    # passes (it is shared with transformers), which costs about 15x this walk.
    def run(self) -> FunctionResult:
        self.walk(self.function.node.body)
        self.result.stops_early = self._body_stopped
        # A recompile hazard in the block of a frame-skipping break, before or after it, never
        # recompiles: whenever that block runs, the whole frame runs eagerly. (Some recompile
        # rules report once at the body about a node deep in it: its ancestors are looked up.)
        # A skip after a return/break/continue still covers the hazards walked after that exit
        # (`if len(x) == 1: return ...` then a loop whose body breaks): every path from such a
        # hazard reaches the skip; a hazard before the exit may leave without it.
        if self._skips and self._recompile_hazards:
            hazards = self._recompile_hazards
            for candidate, exits_before, within in zip(
                    hazards, self._hazard_exits, ancestor_ids(self.function.node.body, [c.node for c in hazards])):
                rules = [rule for rule, scope, _, whole, exits in self._skips
                         if (whole or (exits is not None and exits <= exits_before))
                         and (scope is None or id(scope) in within)]
                if rules:
                    candidate.eager_frame = tuple(dict.fromkeys(rules))
        return self.result

    def walk(self, node: cst.CSTNode) -> None:
        plan = _plan(type(node), self)
        self.stack.append(node)
        for rule, method in plan.rules:
            try:
                getattr(rule, method)(node, self)
            except Exception as exc:  # tag it: engine.check_source reports the rule and line
                if not hasattr(exc, "tcl_rule"):
                    exc.tcl_rule, exc.tcl_node = type(rule), node
                raise
        if plan.visit is None or plan.visit(self, node) is not False:
            # by type, not isinstance() against libcst's ABCs (tcl/syntax_walk.py)
            for child in syntax_walk.field_nodes(node, plan.fields, trivia=True):
                self.walk(child)
        if plan.leave is not None:
            plan.leave(self, node)
        self.stack.pop()

    # Skip what Dynamo never traces under compile.
    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> bool:
        narrowed: dict[str, tuple[Kind | None, int]] = {}  # name -> (kind before, statement index)
        for position, stmt in enumerate(node.body):
            self.walk(stmt)
            if not isinstance(stmt, cst.If):
                continue
            # `if torch.compiler.is_compiling(): return`: the rest of the block is never traced
            if exits_under_compile(stmt, self.truth):
                if node is self.function.node.body:
                    self._body_stopped = True
                break
            # `if mask is not None and is_tracing(mask): return`: the rest runs with mask None
            if exits_if_true(stmt) and self.truth(stmt.test) is None:
                names = none_when(stmt.test, False, self.truth) | not_tensors_when(stmt.test, False, self.index)
                for name in names:
                    narrowed.setdefault(name, (self.env.get(name), position))
                    self.env[name] = Kind.META
                if names:
                    self.kind.forget()
        # Other paths join after the enclosing statement: the names get back what they held,
        # unless the rest of the block assigned them.
        for name, (kind, position) in narrowed.items():
            rest = node.body[position + 1:]
            if self.env.get(name) == Kind.META and not any(name in names_bound_in(s) for s in rest):
                if kind is None:
                    self.env.pop(name, None)
                else:
                    self.env[name] = kind
        if narrowed:
            self.kind.forget()
        return False

    def visit_If(self, node: cst.If) -> bool:
        truth = self.truth(node.test)
        if truth is None:  # both branches, each knowing what the test said
            self.walk(node.test)
            for branch, outcome in ((node.body, True), (node.orelse, False)):
                if branch is None:
                    continue
                facts = facts_if(node.test, outcome)
                if facts:
                    self.fact_scopes.append(facts)
                narrowed = {name: self.env.get(name) for name in not_tensors_when(node.test, outcome, self.index)}
                for name in narrowed:
                    self.env[name] = Kind.META
                self.kind.forget()
                first_call = outcome and is_state_initialisation(node)
                self.first_call_branches += first_call
                settled = settled_operands(node.test, False, self.truth, branch) if isinstance(branch, cst.If) else {}
                if settled:  # an `elif`: its test runs where this one was false
                    self.settled_scopes.append(settled)
                self.walk(branch)
                if settled:
                    self.settled_scopes.pop()
                self.first_call_branches -= first_call
                for name, kind in narrowed.items():  # a branch that assigned the name keeps its value
                    if self.env.get(name) == Kind.META and name not in names_bound_in(branch):
                        if kind is None:
                            self.env.pop(name, None)
                        else:
                            self.env[name] = kind
                self.kind.forget()
                if facts:
                    self.fact_scopes.pop()
            if self._skips:
                self._note_branch_skips(node)
            return False
        live = node.body if truth else node.orelse
        if live is not None:
            self.walk(live)
        return False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        # A closure defined in the traced function: traced when called, parameters unknown.
        for param in _all_params(node.params):
            self._assign_name(param.name.value, Kind.UNKNOWN)
        return not _is_disabled(node, self.index)

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        for param in _all_params(node.params):
            self._assign_name(param.name.value, Kind.UNKNOWN)
        return True

    # Amplifiers: a break in these makes Dynamo skip the whole frame.
    def visit_For(self, node: cst.For) -> None:
        self._bind_loop_target(node.target, node.iter)
        self.amplifiers.append("for loop")

    def leave_For(self, original_node: cst.For) -> None:
        self.amplifiers.pop()

    def visit_While(self, node: cst.While) -> None:
        self.amplifiers.append("while loop")

    def leave_While(self, original_node: cst.While) -> None:
        self.amplifiers.pop()

    def visit_Try(self, node: cst.Try) -> None:
        self.amplifiers.append("try block")

    def leave_Try(self, original_node: cst.Try) -> None:
        self.amplifiers.pop()

    def _resumable(self, node: cst.With) -> bool:
        return all(isinstance(item.item, cst.Call) and self.qualname(item.item.func) in RESUMABLE_CONTEXTS
                   for item in node.items)

    def visit_With(self, node: cst.With) -> None:
        self.amplifiers.append(None if self._resumable(node) else "with block")
        for item in node.items:
            if item.asname is not None:
                self._bind_target(item.asname.name, Kind.UNKNOWN)

    def leave_With(self, original_node: cst.With) -> None:
        self.amplifiers.pop()

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._bind_loop_target(node.target, node.iter)

    def bind_comprehension_targets(self, comprehension: cst.BaseComp) -> None:
        """Bind a comprehension's loop variables now, for a rule that judges its element when
        it enters the comprehension (rules run before the walk reaches `for_in`); the walk
        binds them the same way again."""
        for_in = comprehension.for_in
        while for_in is not None:
            self._bind_loop_target(for_in.target, for_in.iter)
            for_in = for_in.inner_for_in

    def _bind_loop_target(self, target: cst.BaseExpression, iterable: cst.BaseExpression) -> None:
        """`for a, b in zip(xs, ys)` / `for i, x in enumerate(xs)`: bind element by element."""
        if isinstance(iterable, cst.Call) and isinstance(target, (cst.Tuple, cst.List)):
            name = self.qualname(iterable.func)
            args = [a.value for a in iterable.args if a.keyword is None and not a.star]
            elements = [e.value for e in target.elements]
            if name == "builtins.zip" and len(args) == len(elements):
                for element, arg in zip(elements, args):
                    self._bind_target(element, self._element_kind(arg))
                return
            if name == "builtins.enumerate" and len(elements) == 2 and args:
                self._bind_target(elements[0], Kind.META)
                self._bind_loop_target(elements[1], args[0])  # `for i, (a, b) in enumerate(zip(...))`
                return
        self._bind_target(target, self._element_kind(iterable))
        if isinstance(target, cst.Name):
            self.loop_sources[target.value] = iterable
        if isinstance(target, cst.Name) and is_tensor(self.env.get(target.value, Kind.UNKNOWN)):
            self.element_origins[target.value] = iterable  # the evidence: "an element of ..."
        if isinstance(target, cst.Name) and is_tensor(self.kind(iterable)):
            self.tensor_rows.add(target.value)

    # Environment updates.
    def leave_Assign(self, original_node: cst.Assign) -> None:
        value_kind = self.kind(original_node.value)
        if value_kind == Kind.UNKNOWN and self._untyped_call_of_tensors_used_as_tensor(original_node):
            value_kind = Kind.TENSOR
        for target in original_node.targets:
            self.self_writes.update(assigned_attributes(target.target))
            self._bind_target(target.target, value_kind, original_node.value)
            if isinstance(target.target, cst.Subscript):
                key = string_key(target.target)
                if key is not None:  # `state["exp_avg"] = torch.zeros_like(p)`
                    known = self.kind.keyed.get(key)
                    self.kind.keyed[key] = value_kind if known is None else join(known, value_kind)
                    self.kind.forget()
        if self._returned_by_break is original_node.value:
            for target in original_node.targets:
                self.crossed |= target_names(target.target)
        self._note_local_candidate(original_node)

    def _untyped_call_of_tensors_used_as_tensor(self, node: cst.Assign) -> bool:
        """`x = view_func(x)`: a call tcl cannot type, given tensor data, bound to a name the
        body then uses as a tensor (`x.norm(dim=1)`; params.tensor_evidenced_names). Two
        pieces of evidence together; either alone leaves the value unknown."""
        value = node.value
        if not (isinstance(value, cst.Call) and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name)):
            return False
        if not any(is_tensor(self.kind(arg.value)) for arg in value.args):
            return False
        return node.targets[0].target.value in tensor_evidenced_names(self.function)

    def leave_AnnAssign(self, original_node: cst.AnnAssign) -> None:
        self.self_writes.update(assigned_attributes(original_node.target))
        if original_node.value is not None:
            self._bind_target(original_node.target, self.kind(original_node.value), original_node.value)

    def leave_AugAssign(self, original_node: cst.AugAssign) -> None:
        self.self_writes.update(assigned_attributes(original_node.target))
        if isinstance(original_node.target, cst.Name):
            name = original_node.target.value
            current = self.env.get(name, Kind.UNKNOWN)
            value = self.kind(original_node.value)
            if is_tensor(value) or is_tensor(current):
                # `mask &= y > 0` keeps a boolean mask (as `mask & (y > 0)` does, kinds.py)
                bitwise = isinstance(original_node.operator, (cst.BitAndAssign, cst.BitOrAssign, cst.BitXorAssign))
                kind = Kind.BOOL_TENSOR if bitwise and Kind.BOOL_TENSOR in (current, value) else Kind.TENSOR
            else:
                kind = join(current, value)
            self._assign_name(name, kind)

    def leave_NamedExpr(self, original_node: cst.NamedExpr) -> None:
        self._bind_target(original_node.target, self.kind(original_node.value))

    def leave_Break(self, original_node: cst.Break) -> None:
        self._passed_exit()

    def _passed_exit(self) -> None:
        if not self.inside_nested_function():
            self._exits += 1

    leave_Continue = leave_Break

    def leave_Return(self, original_node: cst.Return) -> None:
        self._passed_exit()
        if self.parent(0) is not original_node:
            return
        if self.inside_nested_function():
            return
        value = original_node.value
        kind = self.kind(value) if value is not None else Kind.META
        result = self.result
        if self.tracks_returned_literal:
            result.returns_literal = joined_literal(
                result.returns_literal, self.literal(value) if value is not None else (True, None))
        if isinstance(value, cst.Tuple) and not any(isinstance(e, cst.StarredElement) for e in value.elements):
            elements = tuple(self.kind(el.value) for el in value.elements)
            kind = Kind.TENSOR if any(is_tensor(k) for k in elements) else kind
            if result.tuple_returns is None and not result.returns_other:
                result.tuple_returns = elements
            elif result.tuple_returns is not None and len(result.tuple_returns) == len(elements):
                result.tuple_returns = tuple(join(a, b) for a, b in zip(result.tuple_returns, elements))
            else:
                result.tuple_returns, result.returns_other = None, True
        elif isinstance(value, cst.Call):
            # `return Output(a, b, c)` next to `return (a, b, c)` (the `return_dict` pattern):
            # only the tuple can be unpacked into names, so its element kinds still hold.
            pass
        elif not (isinstance(value, cst.Name) and value.value == "None"):
            result.tuple_returns, result.returns_other = None, True
        result.returns = kind if result.returns is None else join(result.returns, kind)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        # Reading `self.loss_function` runs the property's getter: a call Dynamo traces.
        if isinstance(node.value, cst.Name) and node.value.value == SELF:
            getter = self.resolve_property(node)
            if getter is not None:
                self.result.calls.append((getter, CallSite([], {})))
                self.result.call_nodes.append(node)

    def visit_Call(self, node: cst.Call) -> None:
        callee = self.resolve_call(node)
        # A call through a dispatch table (`self.loss_function(...)`) may run any of its entries.
        callees = [callee] if callee is not None else self.named_method_targets(node)
        # One callee, or the family of methods `getattr(self, "{}_reduction".format(kind))(...)`
        # fetches by name, which one argument list must fit: positions carry kinds.
        same_signature = bool(callees)
        callees = callees or self.dispatch_targets(node)
        # `self.compute_loss(...)` in a base class: the subclasses' overrides run too (same
        # signature, so the argument kinds hold for them).
        overrides = [f for f in self.override_targets(node) if f not in callees]
        if not callees and not overrides:
            return
        args = node.args
        if (callee is None and same_signature and not isinstance(node.func, cst.Attribute) and args
                and args[0].keyword is None and not args[0].star and isinstance(args[0].value, cst.Name)
                and args[0].value.value == SELF and all(c.owner is not None for c in callees)):
            # `decoding_method(self, input_ids, ...)` after `decoding_method = getattr(type(self),
            # ...)`: a method fetched from the class, called with `self` spelled out
            args = args[1:]
        positional = [self.kind(arg.value) for arg in args if arg.keyword is None and not arg.star]
        keywords = {arg.keyword.value: self.kind(arg.value) for arg in args if arg.keyword is not None}
        if not same_signature and not overrides:
            # Table entries differ in signature: a position says nothing about another entry's
            # parameter there (`config` in one, `vocab_size` in another); names still do.
            positional = [Kind.UNKNOWN] * len(positional)
        crossed = frozenset(
            arg.keyword.value if arg.keyword is not None else i
            for i, arg in enumerate(args)
            if not arg.star and self.crossed_break(arg.value)
        ) if self.crossed and callee is not None else frozenset()
        tuples = {}
        for i, arg in enumerate(args if callee is not None else ()):
            elements = None if arg.star else self._display_kinds(arg.value)
            if elements is not None:
                tuples[arg.keyword.value if arg.keyword is not None else i] = elements
        star = callee.node.params.star_arg if callee is not None else None
        if isinstance(star, cst.Param) and not any(arg.star for arg in args):
            # `negative_norm_of_sum(h * r, -t, p=2)` into `def negative_norm_of_sum(*x, p=2)`:
            # `x` is the tuple of the positions past the named ones
            named = len(positional_params(callee))
            if len(positional) > named:
                tuples[star.name.value] = tuple(positional[named:])
        sizes, fixed = {}, set()
        for i, arg in enumerate(args if callee is not None else ()):
            if arg.star:
                continue
            key = arg.keyword.value if arg.keyword is not None else i
            size = size_of(arg.value, self)
            if size is not None and size.varies is not False:
                sizes[key] = size.varies
            if fixed_tensor(arg.value, self):
                fixed.add(key)
        facts = frozenset(self.guard_facts().items()) if is_own_method_call(node) else frozenset()
        if callee is not None and callee.name == "__init__" and callee.owner is not None \
                and callee.owner.is_module and self.runs_eagerly_here():
            facts |= {(EAGER_CONSTRUCTION, True)}
        receiver = node.func.value if isinstance(node.func, cst.Attribute) else None
        if isinstance(receiver, cst.Name) and receiver.value != SELF and receiver.value in self.assigned \
                and isinstance(self.origins.get(receiver.value), cst.Call):
            facts |= {(FRESH_OBJECT, True)}
        literals = None
        if callee is not None and all(self._forwards_entry_varargs(arg) for arg in args if arg.star):
            literals = self.call_literals(args)
        site = CallSite(positional, keywords, crossed, tuples, sizes, facts, literals, frozenset(fixed))
        for target in callees + overrides:
            self.result.calls.append((target, site))
            self.result.call_nodes.append(node)
        if callee is not None and self.callee_breaks(callee):
            self._breaking_call = (node, self._unconditional(node))
            self._note_skip(None, None)

    def _display_kinds(self, value: cst.BaseExpression) -> tuple[Kind, ...] | None:
        if isinstance(value, cst.Name) and value.value in self.tuple_env:
            return self.tuple_env[value.value]
        if isinstance(value, cst.Name) and isinstance(self.origins.get(value.value), cst.Tuple):
            value = self.origins[value.value]  # `tensors = (x, y)`: a tuple cannot change (a list can)
        if isinstance(value, (cst.Tuple, cst.List)) and not any(
            isinstance(e, cst.StarredElement) for e in value.elements
        ):
            return tuple(self.kind(e.value) for e in value.elements)
        return None

    def leave_Call(self, original_node: cst.Call) -> None:
        # The callee's frame breaks: the caller's graph ends at the call and what the call
        # returns reaches the resumed frame as an input (whenever the call runs at all).
        if self._breaking_call is not None and original_node is self._breaking_call[0]:
            if self._breaking_call[1]:
                self._graph_ends()
            self._breaking_call = None
            self._returned_by_break = original_node

    # -- helpers -------------------------------------------------------------------------
    def inside_nested_function(self) -> bool:
        return any(isinstance(n, (cst.FunctionDef, cst.Lambda)) for n in self.stack[:-1])

    def inside_loop_body(self) -> bool:
        """Whether the walk is inside a for/while body of this function (not the loop's own
        iterable or test): a graph break there makes Dynamo run the whole frame eagerly."""
        stack = self.stack
        for i, ancestor in enumerate(stack[:-1]):
            child = stack[i + 1]
            if isinstance(ancestor, cst.For) and child is not ancestor.iter:
                return True
            if isinstance(ancestor, cst.While) and child is not ancestor.test:
                return True
        return False

    def is_parameter(self, name: str) -> bool:
        """An argument of the function, never rebound in its body so far."""
        return name in self.parameters and name not in self.assigned

    def is_intermediate(self, name: str) -> bool:
        """A value created inside the traced function, not an input."""
        return name in self.assigned

    def _assign_name(self, name: str, kind: Kind) -> None:
        self.origins.pop(name, None)
        self.element_origins.pop(name, None)
        self.loop_sources.pop(name, None)
        if self.kind.keyed:  # a new dict under the name: what its keys held is gone
            for key in [k for k in self.kind.keyed if k[0] == name]:
                del self.kind.keyed[key]
        self.env[name] = kind
        self.assigned.add(name)
        self.crossed.discard(name)
        self.tuple_env.pop(name, None)
        self.kind.forget()

    def _bind_target(self, target: cst.BaseExpression, kind: Kind, value: cst.BaseExpression | None = None) -> None:
        if isinstance(target, cst.Name):
            self._assign_name(target.value, kind)
            self.tensor_rows.discard(target.value)
            if value is not None:
                self.origins[target.value] = value
        elif isinstance(target, (cst.Tuple, cst.List)):
            elements = [el.value for el in target.elements]
            value = expand_shape_slices(value, self) if value is not None else None
            values = None
            if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(elements):
                values = [el.value for el in value.elements]
            # `batch_size, seq_len = x.size(0), x.size(1)`: each name holds its own expression,
            # as after two assignments (not where one element is starred, nor for a swap, whose
            # right side reads the names the left rebinds).
            origins = values if values is not None and _plain_parallel(target, value) else None
            returned = self._returned_elements(value, len(elements))
            if returned is None and isinstance(value, cst.Name) and len(self.tuple_env.get(value.value, ())) == len(elements):
                returned = self.tuple_env[value.value]
            shape = unpacked_shape_origins(target.elements, value, self) if value is not None and values is None else {}
            for i, element in enumerate(elements):
                if isinstance(element, cst.StarredElement):
                    element = element.value
                    returned = None
                element_kind = self.kind(values[i]) if values else (returned[i] if returned else kind)
                if element_kind == Kind.BOOL_TENSOR and values is None:
                    element_kind = Kind.TENSOR
                self._bind_target(element, element_kind, origins[i] if origins is not None else None)
                if isinstance(element, cst.Name) and element.value in shape:
                    self.origins[element.value] = shape[element.value]  # `b, n, d = x.shape`
        elif isinstance(target, cst.StarredElement):
            self._bind_target(target.value, kind)

    def _returned_elements(self, value, count: int) -> tuple[Kind, ...] | None:
        """`a, b = helper(x)`: the kinds of the tuple the helper returns, element by element."""
        if not isinstance(value, cst.Call):
            return None
        callee = self.resolve_call(value)
        if callee is None:
            return None
        elements = self.tuple_returns(callee)
        return elements if elements is not None and len(elements) == count else None

    def _element_kind(self, iterable: cst.BaseExpression) -> Kind:
        if self._optimizer_params(iterable):
            return Kind.TENSOR
        if isinstance(iterable, cst.Call):
            name = self.qualname(iterable.func)
            if name == "builtins.range":
                return Kind.META
            if name in ("builtins.enumerate", "builtins.zip", "builtins.reversed"):
                return Kind.UNKNOWN  # tuples: bound element-wise below when possible
        kinds = self._display_kinds(iterable)
        if kinds and all(is_tensor(k) for k in kinds):
            return Kind.TENSOR  # `for t in (x, y)`: every element of the display is a tensor
        kind = self.kind(iterable)
        if kind == Kind.MODULE:
            return Kind.MODULE
        if is_tensor(kind):
            return Kind.TENSOR
        return Kind.META if kind == Kind.META else Kind.UNKNOWN


    def _forwards_entry_varargs(self, arg: cst.Arg) -> bool:
        """`self.predict(x, *args, **kwargs)` in an entry's `forward(self, x, *args, **kwargs)`:
        taken as forwarding nothing, as `model(x)` calls it; the callee's other parameters
        then hold their defaults (`profile=False`), as the call sites' literals say. A helper's
        varargs, or any other starred value, leave the call's literals unknown."""
        if self.params_from_callers or not isinstance(arg.value, cst.Name):
            return False
        params = self.function.node.params
        own = {p.name.value for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param)}
        return arg.value.value in own and arg.value.value not in self.assigned

    def _optimizer_params(self, iterable: cst.BaseExpression) -> bool:
        """`group["params"]` in a method of a torch.optim.Optimizer subclass: a parameter group's
        list of parameters, tensors by Optimizer's contract (`for p in group["params"]:`)."""
        key = string_key(iterable) if isinstance(iterable, cst.Subscript) else None
        if key is None or key[1] != "params":
            return False
        owner = self.function.receiver or self.function.owner
        return owner is not None and owner.is_optimizer


def is_state_initialisation(node: cst.If) -> bool:
    """`if len(state) == 0:` / `if "exp_avg" not in state:` / `if not state:` whose body fills
    that container (`state["step"] = 0`): an optimizer's per-parameter state, set up on the
    first step only. Under compile the first call traces the branch (a break there breaks that
    call) and installs a guard on the test; the next call fails it, recompiles without the
    branch, and every later step runs the graph without it. A break inside is a first-call
    cost, not a steady-state one, and is not reported."""
    test = node.test
    container = None
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        operator, right = test.comparisons[0].operator, test.comparisons[0].comparator
        if isinstance(operator, cst.Equal) and isinstance(right, cst.Integer) and right.value == "0" and \
                isinstance(test.left, cst.Call) and isinstance(test.left.func, cst.Name) and \
                test.left.func.value == "len" and len(test.left.args) == 1:
            container = test.left.args[0].value
        elif isinstance(operator, cst.NotIn) and isinstance(test.left, cst.SimpleString):
            container = right
    elif isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        container = test.expression
    if not isinstance(container, cst.Name):
        return False
    name = container.value

    class Fills(cst.CSTVisitor):
        found = False

        def visit_AssignTarget(self, target: cst.AssignTarget) -> None:
            if isinstance(target.target, cst.Subscript) and isinstance(target.target.value, cst.Name) \
                    and target.target.value.value == name:
                self.found = True

    visitor = Fills()
    syntax_walk.run(visitor, node.body)
    return visitor.found


# Fields that hold only whitespace, punctuation or formatting: never worth walking.
_SKIPPED_FIELD_PREFIXES = (
    "whitespace", "lpar", "rpar", "leading_lines", "lines_after", "header", "footer",
    "semicolon", "comma", "colon", "equal", "dot", "lbrac", "rbrac", "lbrace", "rbrace",
    "trailing", "indent", "newline", "default_indent", "default_newline", "encoding",
)
# Comprehensions bind their loop variables before the element is evaluated.
_FIELD_ORDER_OVERRIDES = {
    cst.ListComp: ("for_in", "elt"), cst.SetComp: ("for_in", "elt"),
    cst.GeneratorExp: ("for_in", "elt"), cst.DictComp: ("for_in", "key", "value"),
}


class _Plan:
    __slots__ = ("fields", "rules", "visit", "leave")

    def __init__(self, fields, rules, visit, leave) -> None:
        self.fields, self.rules, self.visit, self.leave = fields, rules, visit, leave


def _plan(node_type: type, walker: "FunctionWalker") -> _Plan:
    """What to do at a node of this type: rule hooks, the walker's own hooks, fields to walk."""
    cache = walker.plans
    plan = cache.get(node_type)
    if plan is None:
        fields = _FIELD_ORDER_OVERRIDES.get(node_type) or tuple(
            f.name for f in dataclasses.fields(node_type) if not f.name.startswith(_SKIPPED_FIELD_PREFIXES)
        )
        name = node_type.__name__
        plan = _Plan(
            fields,
            tuple(walker.rules.get(name, ())),
            getattr(type(walker), f"visit_{name}", None),
            getattr(type(walker), f"leave_{name}", None),
        )
        cache[node_type] = plan
    return plan


def _is_disabled(node: cst.FunctionDef, index: ModuleIndex) -> bool:
    from .module_index import DISABLE_NAMES, decorator_names

    return any(name in DISABLE_NAMES for name in decorator_names(node, index.imports))


def _plain_parallel(target: cst.BaseExpression, value: cst.BaseExpression) -> bool:
    """`a, b = e1, e2` with no starred element on either side and no `e` reading a name the
    left side binds (`a, b = b, a`)."""
    if any(isinstance(el, cst.StarredElement) for el in (*target.elements, *value.elements)):
        return False
    bound = {el.value.value for el in target.elements if isinstance(el.value, cst.Name)}
    return not any(bound & names_in(el.value) for el in value.elements)
