"""What the walker makes of a rule's hit: a Candidate finding, and what the walk knows there.

A rule calls `report(rule, node)`; this mixin of FunctionWalker turns that into a Candidate
with the evidence of the value judged tensor data (`_evidence`: the name, where it was
assigned, or why a parameter is taken for a tensor), and decides what the break means for the
rest of the frame: a break Dynamo cannot resume after, or one inside a loop, makes Dynamo run
the frame eagerly, which hides the breaks after it and the recompile hazards of the frame
(`_note_skip`, tcl/frame_skips.py); the first use that fixes a size is the one Dynamo guards
(`_note_size_guard`); a break every call reaches ends the caller's graph (`_graph_ends`).
It reads the walker's state (`stack`, `env`, `origins`, `parameters`, `_skips`, ...), which
FunctionWalker.__init__ sets up.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from . import syntax_walk
from .branches import target_names
from .dataflow import is_tensor
from .evidence import torch_only_evidence
from .frame_skips import CONDITIONAL as _CONDITIONAL, skip_scope
from .kinds import SELF
from .module_index import FunctionInfo
from .names import dotted, names_in, short_source
from .params import all_params as _all_params, body_evidence
from .rules.base import DEFAULT_MODE

if TYPE_CHECKING:
    from .rules.base import Rule

# The evidence of a parameter taken for tensor data on nothing but its position (an entry's).
ASSUMED_PARAMETER = "parameter, assumed a tensor"
# Findings that happen only where the compiled frame runs, every call: a first-call-only branch
# or an earlier break that makes Dynamo skip the frame takes them away (graph breaks and the
# compiler's own crashes; recompile hazards are decided apart).
STEADY_STATE_CATEGORIES = frozenset({"graph-break", "crash"})


@dataclass
class Candidate:
    """A finding before positions are known (they are computed only for files that have one)."""

    rule: type["Rule"]
    node: cst.CSTNode
    function: FunctionInfo
    message: str
    gb: str | None
    amplifier: str | None  # "for loop", "with block", "try block" when the frame falls back
    # The value judged tensor data and where it comes from (rules with `explains_value`):
    # (its text, the expression last assigned to it or None, how it got its kind).
    evidence: tuple[str, cst.CSTNode | None, str] | None = None
    # A recompile hazard in a frame that a default-mode break inside one of its loops makes
    # Dynamo skip: the frame runs eagerly, so nothing in it guards or recompiles (dropped in
    # default mode; under fullgraph=True the break is an error and the hazard is what follows).
    # The rules of those breaks (None: a call into a helper that breaks): a Dynamo setting that
    # removes every one of them leaves the frame compiled.
    eager_frame: tuple = ()
    # A break that comes after such a frame-skipping break in the block that holds it
    # (tcl/frame_skips.py): Dynamo never reaches it while the earlier one stands. The rules of
    # the earlier breaks, as in eager_frame; `masked_at` is the first of them (None: a call into
    # a helper that breaks).
    masked_by: tuple = ()
    masked_at: "Candidate | None" = None
    # False: Dynamo cannot resume after this break (Rule.resumes): the rest of the frame, from
    # here on, runs eagerly.
    resumes: bool = True
    # Found in a nested def or lambda: it runs in whichever frame calls it (a forward hook runs
    # in the hooked module's), so this frame's skipping neither hides nor removes it.
    nested: bool = False
    # A size-specialising use of a size an earlier use in this frame already fixed to one value
    # on every path here (`h = [nan] * n` ... `torch.tensor([ids] * n)`): Dynamo guards the
    # value once, at the first use, and the recompile cites that line; this one adds no guard.
    guarded_at: "Candidate | None" = None
    # The settings that remove this finding where they differ from its rule's (`report`'s
    # `removed_by`): TCL501 on a module-level dict is not removed by a module-attribute setting.
    removed_by: frozenset | None = None
    # Whether it is reported in code reached only from public functions tcl guesses users
    # compile (Rule.on_guessed_entries, or `report`'s argument for this one finding).
    on_guessed_entries: bool = True

    @property
    def removed_settings(self) -> frozenset:
        return self.rule.removed_by if self.removed_by is None else self.removed_by

    def holds_under(self, settings: frozenset[str]) -> bool:
        """Whether the hazard exists when the program turns on `settings` (Rule.holds_under,
        with this finding's own `removed_by`)."""
        return self.rule.holds_under(settings, self.removed_settings)


class FindingReports:
    """FunctionWalker's side that reports: see the module docstring."""

    def report(self, rule: type["Rule"], node: cst.CSTNode, message: str | None = None, gb: str | None = None,
               resumes: bool | None = None, guards: cst.BaseExpression | None = None,
               removed_by: frozenset | None = None, on_guessed_entries: bool | None = None) -> None:
        """A finding of `rule` at `node`; `resumes=False`: Dynamo cannot resume after this one
        break although the rule's others resume (default: the rule's `resumes`); `guards`: the
        size whose exact value this use fixes (a recompile rule's specialising use); `removed_by`:
        the settings that remove this finding, where they differ from the rule's;
        `on_guessed_entries=False`: not in code only a guessed public entry reaches (default:
        the rule's `on_guessed_entries`)."""
        if self.first_call_branches and rule.category in STEADY_STATE_CATEGORIES:
            return  # breaks only the first call (is_state_initialisation): not a steady-state hazard
        amplifier = next((a for a in reversed(self.amplifiers) if a), None)
        evidence = self._evidence(node) if getattr(rule, "explains_value", False) else None
        candidate = Candidate(rule, node, self.function, message or rule.message, gb or rule.gb_for(self.version),
                              amplifier, evidence)
        candidate.nested = self.inside_nested_function()
        candidate.resumes = rule.resumes if resumes is None else resumes
        candidate.removed_by = removed_by
        candidate.on_guessed_entries = rule.on_guessed_entries if on_guessed_entries is None else on_guessed_entries
        if guards is not None and not candidate.nested:
            self._note_size_guard(guards, candidate)
        if rule.category == "recompile" and not candidate.nested:
            self._recompile_hazards.append(candidate)
            self._hazard_exits.append(self._exits)
            # After a break Dynamo cannot resume from, the rest of the frame runs eagerly.
            rest = self._earlier_skips(rest_only=True)
            if rest:
                candidate.eager_frame = tuple(dict.fromkeys(r for r, _ in rest))
        if self._skips and rule.category in STEADY_STATE_CATEGORIES and not candidate.nested:
            earlier = self._earlier_skips()
            if earlier:
                candidate.masked_by = tuple(dict.fromkeys(r for r, _ in earlier))
                candidate.masked_at = earlier[0][1]
        self.result.candidates.append(candidate)
        # A rule that exists only under a Dynamo setting is decided after the walk (the walk
        # itself does not depend on settings, so its results are shared by every file).
        if rule.category == "graph-break" and DEFAULT_MODE in rule.modes and not rule.needs_settings:
            if self._unconditional(node):
                self._graph_ends()
            self._note_skip(rule, candidate)

    def _note_size_guard(self, size: cst.BaseExpression, candidate: Candidate) -> None:
        """Measured on 2.13 (tests/test_guard_facts.py): of several uses that fix one size
        (`a = [0.0] * n`, then `[1.0] * n`, then `range(m)` with `m = x.shape[0]` too), only the
        first specialises it; the later ones see a constant and add no guard."""
        key = self._size_key(size)
        within = {id(n) for n in self.stack}
        for earlier_key, scope, earlier in self._size_guards:
            if earlier_key == key and (scope is None or id(scope) in within):
                candidate.guarded_at = earlier
                return
        self._size_guards.append((key, skip_scope(self.stack, self._resumable)[1], candidate))

    def _size_key(self, size: cst.BaseExpression, depth: int = 0) -> tuple:
        """What identifies a size's value in this frame: its text with names bound to a single
        value replaced by what they were assigned (`n = x.shape[0]` and `m = x.shape[0]` are
        one size), and the assignment each remaining name holds now (a reassigned `x` is
        another tensor)."""
        if isinstance(size, cst.Name) and depth < 4:
            origin = self.origins.get(size.value)
            if origin is not None and origin is not size and size.value not in self._loop_names():
                return self._size_key(origin, depth + 1)
        names = sorted(names_in(size))
        return (_dim_text(size), tuple((n, id(self.origins.get(n))) for n in names))

    def _loop_names(self) -> set[str]:
        """Names a `for` of the walk's ancestors binds: their origin is the iterable, not a value."""
        found: set[str] = set()
        for ancestor in self.stack:
            if isinstance(ancestor, cst.For):
                found |= set(target_names(ancestor.target))
        return found

    def runs_eagerly_here(self) -> bool:
        """Whether this point runs eagerly inside a compiled call: an earlier frame-skipping
        break holds it (tcl/frame_skips.py), or it is in an __init__ that itself runs as a frame
        of its own (`eager_construction`). Dynamo still compiles every frame called from there
        on its own; measured on 2.13 (tests/test_guard_facts.py), an nn.Module built there has
        its `__init__` compiled as a frame whose `self` is not initialised yet, which breaks at
        `super().__init__()` (GB0119) and runs the rest eagerly, so the modules it builds break
        the same way."""
        return self.eager_construction or bool(self._earlier_skips())

    def _earlier_skips(self, rest_only: bool = False) -> list[tuple]:
        """(rule, candidate) of the frame-skipping breaks so far whose block holds the walk's
        position; `rest_only`: only those after which the rest runs eagerly but not what came
        before (not `whole`)."""
        if not self._skips:
            return []
        within = {id(n) for n in self.stack}
        return [(r, c) for r, scope, c, whole, _ in self._skips
                if not (rest_only and whole) and (scope is None or id(scope) in within)]

    def _evidence(self, node: cst.CSTNode) -> tuple[str, cst.CSTNode | None, str] | None:
        """The first name or `self.attr` in `node` (source order) that holds tensor data, with
        its origin: an assignment in this function, a parameter (assumed a tensor, or given
        one), or a module attribute."""
        stack = [node]
        first_call = None  # `torch.isfinite(total)` when no name in it is known tensor data
        while stack:
            current = stack.pop()
            if first_call is None and isinstance(current, cst.Call) and dotted(current.func) \
                    and is_tensor(self.kind(current)):
                first_call = current
            if isinstance(current, cst.Subscript) and isinstance(current.value, cst.Name) \
                    and current.value.value in self.tuple_env and is_tensor(self.kind(current)):
                # `x[0]` of a `*x` (or a tuple parameter) every caller fills with tensors
                return short_source(current), None, "an element of the tuple its callers pass"
            text = dotted(current) if isinstance(current, (cst.Name, cst.Attribute)) else None
            if isinstance(current, cst.Attribute) and not (text or "").startswith(SELF + "."):
                text = None  # `loss.item`, `x.shape`: look at the receiver
            if text and is_tensor(self.kind(current)):
                if isinstance(current, cst.Attribute):
                    return text, None, "attribute"
                name = current.value
                if name in self.origins:
                    return text, self.origins[name], "assigned"
                if name in self.parameters and name not in self.assigned:
                    return text, None, self._parameter_basis(name)
                if name in self.element_origins:
                    return text, self.element_origins[name], "element"
                return text, None, "local"
            if isinstance(current, (cst.Lambda, cst.FunctionDef)):
                continue
            stack.extend(reversed(syntax_walk.children(current)))
        if first_call is not None:
            return f"{dotted(first_call.func)}()", None, "call"
        return None

    def assumed_tensor(self, node: cst.BaseExpression) -> bool:
        """A bare parameter taken for tensor data on no evidence: not annotated, not used as a
        tensor in the body, no traced caller passing one (rules whose construct is as common
        on dicts and lists as on tensors, like `k in d`, ask for more than that)."""
        return (isinstance(node, cst.Name) and node.value in self.parameters and node.value not in self.assigned
                and self._parameter_basis(node.value) == ASSUMED_PARAMETER)

    def _parameter_basis(self, name: str) -> str:
        if self.params_from_callers and name in self.body_typed:
            return "parameter used as a tensor here, its callers' value unknown"
        if self.params_from_callers:
            return "parameter, tensor data at its call sites"
        param = next((p for p in _all_params(self.function.node.params) if p.name.value == name), None)
        if param is not None and param.annotation is not None:
            return "parameter, annotated a tensor"
        if body_evidence(self.function).get(name) == "tensor" or name in torch_only_evidence(self.function):
            return "parameter, used as a tensor"
        return ASSUMED_PARAMETER

    def crossed_break(self, node: cst.BaseExpression) -> bool:
        """A name whose value was live at an earlier default-mode graph break in this function:
        an input of the frame Dynamo resumes in."""
        return isinstance(node, cst.Name) and node.value in self.crossed

    @property
    def cpu_tensors(self) -> bool:
        """`assume device = "cpu"`. Measured (2.11 and 2.13): Dynamo reads a 0-d CPU tensor
        that is a frame input as a number, so as a size of torch.arange/zeros/... or a narrow()
        length it does not break; the same CUDA tensor does (GB0033)."""
        return bool(self.assume) and self.assume.get("device") == "cpu"

    def _graph_ends(self) -> None:
        # The function breaks on every call only if no earlier return can leave before
        # (torchtune's `if not normalize: return ...` ahead of a data-dependent test).
        self.result.breaks = self.result.breaks or not self._exits
        self.crossed = set(self.env)

    def _note_skip(self, rule, candidate: "Candidate | None") -> None:
        """Record a default-mode break here (`rule`, or None for a call into a helper that
        breaks) if it makes Dynamo skip the frame (tcl/frame_skips.py), with the block whose
        later breaks it hides (`report`) and whose recompile hazards never recompile (`run`).
        After a return / break / continue that may leave before it, it still hides what
        follows it in that block (every path there passes it), not what came before."""
        skips, scope = skip_scope(self.stack, self._resumable)
        if skips:
            self._skips.append((rule, scope, candidate, not self._exits, self._exits))
        elif candidate is not None and not candidate.resumes and not candidate.nested:
            # Dynamo compiles the graph up to here and runs the rest of the frame eagerly.
            self._skips.append((rule, scope, candidate, False, None))

    def _note_branch_skips(self, node: cst.If) -> None:
        """`if batched: <loop that breaks> else: <loop that breaks>`: when both branches hold a
        frame-skipping break on a plain path (its block is the branch itself) and the same rules
        remove them, every call that passes the `if` skips the frame: what follows the `if` in
        its block is hidden too."""
        if node.orelse is None:
            return
        body = [entry for entry in self._skips if entry[1] is node.body]
        orelse = [entry for entry in self._skips if entry[1] is node.orelse]
        if not body or not orelse or {e[0] for e in body} != {e[0] for e in orelse}:
            return
        _, scope = skip_scope(self.stack, self._resumable)
        whole = all(entry[3] for entry in body + orelse)
        exits = None if any(entry[4] is None for entry in body + orelse) else self._exits
        for rule, _, candidate, _, _ in body:
            self._skips.append((rule, scope, candidate, whole, exits))

    def _unconditional(self, node: cst.CSTNode) -> bool:
        """Whether every call of the function reaches `node` (the walk is at `node`): only `if`
        tests, the left of `and`/`or` and a for loop's iterable lie above it."""
        stack = self.stack
        for i, ancestor in enumerate(stack[:-1]):
            child = stack[i + 1]
            if isinstance(ancestor, cst.For):
                if child is not ancestor.iter:
                    return False  # the body or the else: clause
            elif isinstance(ancestor, (cst.If, cst.IfExp)):
                if child is not ancestor.test:
                    return False
            elif isinstance(ancestor, cst.BooleanOperation):
                if child is ancestor.right:
                    return False
            elif isinstance(ancestor, _CONDITIONAL):
                return False
        return True


def _dim_text(size: cst.BaseExpression) -> str:
    """A size's text, with `x.size(0)` and `len(x)` written as `x.shape[0]`: one dim."""
    code = cst.Module([]).code_for_node
    if isinstance(size, cst.Call) and len(size.args) == 1 and isinstance(size.args[0].value, cst.Integer) \
            and isinstance(size.func, cst.Attribute) and size.func.attr.value == "size":
        return f"{code(size.func.value)}.shape[{size.args[0].value.value}]"
    if isinstance(size, cst.Call) and len(size.args) == 1 and isinstance(size.func, cst.Name) \
            and size.func.value == "len":
        return f"{code(size.args[0].value)}.shape[0]"
    return code(size)
