"""What one checked module's analysis computes: the functions torch.compile traces from its
entry points, walked to a fixpoint over what each caller passes.

FileAnalysis finds the entries (tcl/entry_points.py), walks each with the rules
(tcl/walker.py), records what every call passes its callee and walks the callee again when that
changes, until nothing changes; it keeps helper results settled across the files of one run
(`Analyzer.settled`), and answers which candidates are reached from which compiled entries
(`_candidates_with_reach`). The Analyzer (tcl/engine.py) turns those candidates into findings.
"""

from __future__ import annotations

import dataclasses
import os
from collections import defaultdict
from typing import TYPE_CHECKING

import libcst as cst

from .dataflow import Kind, is_tensor
from .call_resolution import CallResolver
from .api_entries import API_MARK, PUBLIC_API, PUBLIC_STATE_API, api_entries, draws, is_api_reach
from .entry_points import EntryPoints, wrapper_param_kinds
from .guard_facts import NOT_NONE, agreed
from .module_index import FunctionInfo, ModuleIndex, decorator_names
from .summaries import CallSiteReturns
from .params import (agreed_literals, all_params, constant_params, crossed_params, entry_constants, entry_param_kinds,
                     fixed_params, helper_param_kinds, sized_params, tuple_params)
from .local_constants import MAX_HELPER_STATEMENTS, TRANSPARENT_DECORATORS, falls_off_end, is_generator, joined_literal
from .walker import FunctionResult, FunctionWalker
from .walker_findings import Candidate

if TYPE_CHECKING:
    from .engine import Analyzer

MAX_ANALYSES_PER_FUNCTION = 6
SETTLED_LIMIT = 20_000  # settled helper results kept per process


def _without_crossings(key: tuple) -> tuple:
    """A settled key (`_settled_key`) without the arguments that cross a break (its 4th part)."""
    return key[:3] + key[4:]


def _recorded(question: str, answer, asked: list):
    """`answer`, noting each question and its answer for the edit memo. A walk asks the same
    question many times with the same answer (nothing it depends on changes during one walk):
    each is noted once."""
    seen: set = set()

    def ask(argument):
        reply = answer(argument)
        # A tuple is built per question (a callee and one call's argument kinds): its contents,
        # not its id, say whether it was noted.
        key = (id(argument[0]), argument[1:]) if isinstance(argument, tuple) else id(argument)
        if key not in seen:
            seen.add(key)
            asked.append((question, argument, list(reply) if isinstance(reply, list) else reply))
        return reply
    return ask



class FileAnalysis(EntryPoints, CallResolver):
    """Finds the functions torch.compile traces in one module and runs the rules over them.

    Calls are followed into the module's own functions and, through the project, into helper
    functions of other checked files; findings there are reported against those files.
    """

    def __init__(self, index: ModuleIndex, analyzer: Analyzer) -> None:
        self.analyzer = analyzer
        self.project = analyzer.project
        self.index = index
        self.results: dict[int, FunctionResult] = {}
        self._str_enums: dict[tuple[str, int], bool] = {}  # (class name, index id) -> str Enum?
        self.param_kinds: dict[int, dict[str, Kind]] = {}
        self.functions: dict[int, FunctionInfo] = {}
        self.entries: dict[int, str] = {}
        self.other_entries: dict[str, bool] = {}  # FileReport.other_entries
        # callee id -> caller id -> call sites (walker.CallSite)
        self.sites: dict[int, dict[int, list]] = defaultdict(dict)
        self.from_callers: set[int] = set()  # entries whose parameter kinds come from callers
        self.api_entries: set[int] = set()  # public functions taken as entries (tcl/api_entries.py)
        # those of them that update their module's tensors in place (api_entries.updates_tensor_state)
        self.state_updaters: set[int] = set()
        # What a helper returns for one call's argument kinds (tcl/summaries.py).
        self.summaries = CallSiteReturns(
            self._return_kind, lambda function: self.param_kinds.get(id(function)),
            lambda function, kinds: self._walk(function, hooks={}, param_kinds=kinds),
        )
        self.crossed: dict[int, frozenset] = {}  # parameters every caller fills from across a break
        self.sized: dict[int, dict] = {}  # parameters every caller fills with a size (tcl/sizes.py)
        self.fixed: dict[int, frozenset] = {}  # tensor parameters of sizes every caller's module fixes
        # parameters no caller says anything of, taken for tensor data from the body's use (tcl/params.py)
        self.body_typed: dict[int, frozenset] = {}
        self.facts: dict[int, frozenset] = {}  # guard facts every caller agrees on (tcl/guard_facts.py)
        self.constants: dict[int, dict] = {}  # parameters every caller gives one literal (tcl/params.py)
        self.tuples: dict[int, dict] = {}  # parameters every caller fills with a tuple display
        self.callers: dict[int, set[int]] = defaultdict(set)
        self.resolved: dict[tuple[int, int], FunctionInfo | None] = {}
        self.tables: dict[tuple[int, str], list[tuple[str | None, FunctionInfo]]] = {}  # _table_items
        self.overrides: dict[tuple[int, str], list[FunctionInfo]] = {}
        self.call_nodes: dict[tuple[int, int], cst.CSTNode] = {}  # (callee, caller) -> a call node
        self.init_instance_memos()
        self.compile_anchors: dict[int, tuple] = {}  # entry -> (index, torch.compile call, statement)
        # An entry only compile calls of this file make -> the literals of every call of what
        # they compile (tcl/entry_calls.py); None where some call cannot be seen
        self.entry_calls: dict[int, list | None] = {}
        # Compile calls of installed code that this run does not read: (call, statement, origin)
        self.unfollowed_compiles: list[tuple] = []
        self._returned_literals: dict[tuple, tuple | None] = {}  # returned_literal's answers

    def foreign_indexes(self) -> list[ModuleIndex]:
        return list({id(f.index): f.index for f in self.functions.values() if f.index is not self.index}.values())

    # -- the fixpoint over traced functions ------------------------------------------------
    def run(self) -> list[tuple[Candidate, tuple[str, ...]]]:
        queue: list[FunctionInfo] = []
        for entry in self.entry_points():
            key = id(entry)
            self.functions[key] = entry
            self.entries[key] = entry.qualname
            self.param_kinds[key] = entry_param_kinds(entry)
            if self.entry_calls.get(key):  # `gen(ids, max_new_tokens=4)`: what Dynamo specialises on
                self.constants[key] = entry_constants(entry, self.entry_calls[key])
            queue.append(entry)
            for wrapper, wrapped in self.decorator_wrappers(entry):
                # Named after the decorated entry: findings read "reached from Model.forward".
                self.functions[id(wrapper)] = wrapper
                named = self.entries.get(id(wrapper))  # one wrapper of a decorator serves every entry it decorates
                self.entries[id(wrapper)] = f"{named}, {entry.qualname}" if named else entry.qualname
                self.param_kinds[id(wrapper)] = wrapper_param_kinds(wrapper, wrapped, is_method=entry.owner is not None)
                queue.append(wrapper)
        reached = self.analyzer.reached_entries  # filled by `tcl fix` only
        for qualname, (kinds, reached_from) in (reached.get(os.path.realpath(self.index.path), {}).items()
                                                if reached else ()):
            function = self._lookup(qualname)
            if function is None or id(function) in self.entries:
                continue
            self.functions[id(function)] = function
            self.entries[id(function)] = ", ".join(reached_from) or qualname
            self.from_callers.add(id(function))  # its parameters hold what other files pass
            self.param_kinds[id(function)] = dict(kinds)
            queue.append(function)
        analyses: dict[int, int] = defaultdict(int)
        self._settle(queue, analyses)
        # The public API no entry above reaches (tcl/api_entries.py): walked after, so that what
        # the entries reach keeps what its callers pass.
        walked = {id(self.functions[key].node) for key in self.results}
        queue = []
        for function, kinds, updates_state in api_entries(self.index, self.analyzer.config.api_entries, walked):
            key = id(function)
            if key in self.entries:
                continue
            self.functions[key] = function
            self.entries[key] = function.qualname
            self.api_entries.add(key)
            if updates_state:
                self.state_updaters.add(key)
            self.param_kinds[key] = kinds
            queue.append(function)
        self._settle(queue, analyses)
        self._remember_settled()
        return self._candidates_with_reach()

    def _settle(self, queue: list[FunctionInfo], analyses: dict[int, int]) -> None:
        """Walk `queue` and whatever its walks reach until nothing they pass on changes."""
        while queue:
            function = queue.pop(0)
            key = id(function)
            if analyses[key] >= MAX_ANALYSES_PER_FUNCTION:
                continue
            analyses[key] += 1
            previous = self.results.get(key)
            # a helper of another file settled for these inputs (any pass: the key holds them)
            result = self._settled(function)
            if result is None:
                result = self._walk(function)
            self.results[key] = result
            if previous is None or (previous.returns, previous.tuple_returns, previous.breaks) != (
                result.returns, result.tuple_returns, result.breaks
            ):
                queue.extend(self.functions[c] for c in self.callers[key] if self.functions[c] not in queue)
            for callee in self._record_calls(function, result):
                if callee not in queue:
                    queue.append(callee)

    # Helpers of other files are reached from many checked files with the same arguments
    # (transformers: every model's `self.loss_function` reaches the same ~25 loss functions).
    # Their settled results are kept per (function, argument kinds) and reused; they cannot
    # depend on the calling file: nothing in another file resolves calls into this one.
    def compiled_functions(self) -> list[list[str]]:
        """[real path, qualname] of each walked function that an entry other than a public API
        one reaches (tcl/api_entries.py), in this file or another."""
        callees: dict[int, list[int]] = defaultdict(list)
        for callee, callers in self.callers.items():
            for caller in callers:
                callees[caller].append(callee)
        stack = [key for key in self.entries if key not in self.api_entries]
        seen: set[int] = set()
        while stack:
            key = stack.pop()
            if key not in seen:
                seen.add(key)
                stack.extend(callees.get(key, ()))
        out = set()
        for key in seen:
            function = self.functions.get(key)
            if function is not None and function.index is not None and function.index.path:
                out.add((os.path.realpath(function.index.path), function.qualname))
        return [list(item) for item in sorted(out)]

    def _computes_tensors(self, key: int) -> bool:
        """A public API entry counts when it returns tensor data, alone or in a tuple: takes
        tensors and gives tensors, as what users compile does; or when it updates its module's
        tensors in place (an EMA's or a metric's `update`)."""
        result = self.results.get(key)
        if result is None:
            return False
        if key in self.state_updaters:
            return True
        return is_tensor(result.returns) or any(is_tensor(k) for k in result.tuple_returns or ())

    def _settled_key(self, function: FunctionInfo):
        key = id(function)
        return (
            id(function.node), id(function.receiver), frozenset(self.param_kinds[key].items()),
            self.crossed.get(key, frozenset()),
            frozenset(self.tuples.get(key, {}).items()),
            frozenset(self.sized.get(key, {}).items()),
            self.fixed.get(key, frozenset()),
            self.body_typed.get(key, frozenset()),
            self.facts.get(key, frozenset()),
            frozenset((k, type(v), v) for k, v in self.constants.get(key, {}).items()),
        )

    def _settled(self, function: FunctionInfo) -> FunctionResult | None:
        if function.index is self.index or (id(function) in self.entries and not function.index.installed):
            return None  # (an installed entry, `torch.compile(model.generate)`, reads nothing of this file)
        key = self._settled_key(function)
        kept = self.analyzer.settled.get(key)
        if kept is None and not key[3]:
            # First reached, before any caller said which arguments cross a break: the result
            # the same inputs settled on last time (crossings included) is where this
            # fixpoint converges too; a later change of the crossings asks again by full key.
            # Every other input (sizes, fixed tensors, facts, constants) must match: a result
            # settled for another file's callers would make this file's report depend on
            # which files the process checked before it (-j1 and -j2 disagreed).
            kept = self.analyzer.settled.get(_without_crossings(key))
        if kept is None or kept[0] is not function.node:
            return None
        result = kept[1]
        if any(c.function is not function for c in result.candidates):
            # Settled by an earlier check through another FunctionInfo of the same node (an
            # installed class compiled as an object gets one per check): its candidates must
            # name this one, which this check's compile anchors and callers know. `tcl fix`
            # checks a file again after each round with the same analyzer, and found no user
            # line for the library's findings in the second round (issue 17).
            result = dataclasses.replace(result, candidates=[
                c if c.function is function else dataclasses.replace(c, function=function)
                for c in result.candidates])
        return result

    def _remember_settled(self) -> None:
        settled = self.analyzer.settled
        if len(settled) > SETTLED_LIMIT:
            settled.clear()
        for key, result in self.results.items():
            function = self.functions[key]
            if function.index is not self.index and (key not in self.entries or function.index.installed):
                full = self._settled_key(function)
                settled[full] = (function.node, result)
                settled[_without_crossings(full)] = (function.node, result)  # found before crossings are known

    def _walk(self, function: FunctionInfo, hooks=None, param_kinds=None, constants=None) -> FunctionResult:
        # `hooks`: other rule hooks for a re-walk (`tcl fix` snapshots kinds at findings' nodes;
        # {} for a summary walk). `param_kinds`: one call site's, for a summary walk, and
        # `constants` the literals it passes (returned_literal).
        summary = param_kinds is not None
        memo = self.analyzer.memo if hooks is None and not summary and function.index is self.index else None
        questions = {
            "call": lambda call: self.resolve_call(call, function),
            # (callee, positional kinds, keyword kinds) of one call: tcl/summaries.py
            "returns": lambda asked: self.summaries.return_kind(
                asked[0], None if asked[1] is None else (list(asked[1]), dict(asked[2]))),
            "tuple": self._tuple_returns,
            "property": lambda node: self.resolve_property(node, function),
            "field": lambda node: self.field_kind(node, function, function.index),
            "dispatch": lambda call: self.dispatch_targets(call, function),
            "named_methods": lambda call: self.named_method_values(call.func, function),
            "overrides": lambda call: self.override_targets(call, function),
            "breaks": self._breaks,
            "str_enum": lambda name: self.is_str_enum(name, function.index),
            "returned_literal": lambda asked: self.returned_literal(asked[0], asked[1:], function),
        }
        asked: list | None = None
        if memo is not None:  # an editor's re-check: reuse the walk if nothing it read changed
            key = id(function)
            inputs = (dict(self.param_kinds[key]), self.crossed.get(key, frozenset()),
                      dict(self.tuples.get(key) or {}), key in self.entries, key in self.from_callers,
                      dict(self.sized.get(key) or {}), self.fixed.get(key, frozenset()),
                      self.body_typed.get(key, frozenset()),
                      self.facts.get(key, frozenset()),
                      dict(self.constants.get(key) or {}))
            facts = memo.facts(self.index)
            kept = memo.find_walk(function, inputs, facts, lambda question, arg: questions[question](arg))
            if kept is not None:
                return kept
            asked = []
            questions = {name: _recorded(name, answer, asked) for name, answer in questions.items()}
        returns = questions["returns"]

        def return_kind(callee: FunctionInfo, site=None) -> Kind:
            if site is None:
                return returns((callee, None, None))
            return returns((callee, tuple(site[0]), frozenset(site[1].items())))

        walker = FunctionWalker(
            function,
            function.index,
            self.analyzer.hooks if hooks is None else hooks,
            param_kinds if summary else self.param_kinds[id(function)],
            questions["call"],
            return_kind,
            self.analyzer.version,
            is_entry=id(function) in self.entries and not summary,
            params_from_callers=summary or id(function) not in self.entries or id(function) in self.from_callers,
            crossed=frozenset() if summary else self.crossed.get(id(function), frozenset()),
            tuples=None if summary else self.tuples.get(id(function)),
            sized=None if summary else self.sized.get(id(function)),
            fixed=frozenset() if summary else self.fixed.get(id(function), frozenset()),
            body_typed=frozenset() if summary else self.body_typed.get(id(function), frozenset()),
            facts=None if summary else dict(self.facts.get(id(function), ())),
            constants=constants if summary else self.constants.get(id(function)),
            plans=self.analyzer.plans if hooks is None else {},  # plans embed the hooks
            tuple_returns=questions["tuple"],
            resolve_property=questions["property"],
            dispatch_targets=questions["dispatch"],
            named_method_targets=questions["named_methods"],
            override_targets=questions["overrides"],
            callee_breaks=questions["breaks"],
            field_kind=questions["field"],
            str_enum=questions["str_enum"],
            returned_literal=questions["returned_literal"],
            tracks_returned_literal=constants is not None,
            assume=self.analyzer.config.assume,
        )
        result = walker.run()
        if memo is not None:
            memo.keep_walk(function, inputs, facts, asked, result)
        return result

    def returned_literal(self, call: cst.Call, site: tuple, caller: FunctionInfo):
        """(True, value) when the helper `call` resolves to returns one literal for the literals
        this call passes (`site`: how many positional arguments, the keywords, and the
        (position or keyword, literal) pairs of those passing one), by a rule-free walk of the
        helper with them as its constants (tcl/local_constants.py); else None. Kept per
        (helper, constants); a helper already being walked for it answers None."""
        callee = self.resolve_call(call, caller)
        if callee is None or callee.node is None or callee.is_disabled or callee.name in ("__init__", "__new__"):
            return None  # a constructor call's value is the object, not what __init__ returns
        if any(name not in TRANSPARENT_DECORATORS
               for name in decorator_names(callee.node, callee.index.imports)):
            return None  # a decorator may return something else than the function
        body = callee.node.body
        if len(getattr(body, "body", ())) > MAX_HELPER_STATEMENTS:
            return None
        positional, keywords, literals = site
        constants = agreed_literals(callee, [(positional, keywords, dict(literals))])
        key = (id(callee.node), id(callee.receiver),
               tuple(sorted((name, type(value).__name__, repr(value)) for name, value in constants.items())))
        if key in self._returned_literals:
            return self._returned_literals[key]
        self._returned_literals[key] = None  # while it is walked: a recursive call learns nothing
        kinds = dict(self.param_kinds.get(id(callee)) or {})
        for param in all_params(callee.node.params):
            kinds.setdefault(param.name.value, Kind.UNKNOWN)
        result = self._walk(callee, hooks={}, param_kinds=kinds, constants=constants)
        found = result.returns_literal
        if is_generator(callee.node):
            found = None
        elif not result.stops_early and falls_off_end(callee.node):
            found = joined_literal(found, (True, None))  # the implicit `return None`
        found = found if isinstance(found, tuple) else None
        self._returned_literals[key] = found
        return found

    def is_str_enum(self, name: str, index) -> bool:
        """Whether the class `name` (as `index` knows it: local or from the checked tree) is a
        str-valued Enum: it derives from str and an Enum, or from enum.StrEnum, directly or
        through its bases. Asked at every str-method call in traced code: answered once per name."""
        key = (name, id(index))
        if key not in self._str_enums:
            self._str_enums[key] = self._derives_str_enum(name, index)
        return self._str_enums[key]

    def _derives_str_enum(self, name: str, index) -> bool:
        queue, seen, has_str, has_enum = [self.class_named(name, index)], set(), False, False
        while queue:
            cls = queue.pop()
            if cls is None or id(cls) in seen or len(seen) > 16:
                continue
            seen.add(id(cls))
            for base in cls.bases:
                if base == "enum.StrEnum":
                    return True
                if base == "builtins.str":
                    has_str = True
                elif base in ("enum.Enum", "enum.IntEnum"):
                    has_enum = has_enum or base == "enum.Enum"
                else:
                    queue.append(self.class_named(base, cls.index))
        return has_str and has_enum

    def _breaks(self, function: FunctionInfo) -> bool:
        result = self.results.get(id(function))
        return result is not None and result.breaks

    def _tuple_returns(self, function: FunctionInfo):
        result = self.results.get(id(function))
        return result.tuple_returns if result is not None else None

    def _return_kind(self, function: FunctionInfo) -> Kind:
        result = self.results.get(id(function))
        return result.returns if result is not None and result.returns is not None else Kind.UNKNOWN

    def _record_calls(self, caller: FunctionInfo, result: FunctionResult) -> list[FunctionInfo]:
        """Remember what `caller` passes to each callee; return callees whose inputs changed."""
        caller_key = id(caller)
        per_callee: dict[int, list] = defaultdict(list)
        for position, (callee, site) in enumerate(result.calls):
            if callee.is_disabled:
                continue
            per_callee[id(callee)].append(site)
            self.functions[id(callee)] = callee
            if position < len(result.call_nodes):
                self.call_nodes.setdefault((id(callee), caller_key), result.call_nodes[position])
        changed = []
        for callee_key, sites in per_callee.items():
            self.sites[callee_key][caller_key] = sites
            self.callers[callee_key].add(caller_key)
            callee = self.functions[callee_key]
            all_sites = [site for s in self.sites[callee_key].values() for site in s]
            filled: set[str] = set()
            kinds = helper_param_kinds(callee, all_sites, filled)
            crossed = crossed_params(callee, all_sites)
            tuples = tuple_params(callee, all_sites)
            sized = sized_params(callee, all_sites)
            fixed = frozenset() if callee_key in self.entries else fixed_params(callee, all_sites)
            # An entry is also called from outside, where no caller's test holds.
            facts = frozenset() if callee_key in self.entries else agreed([site.facts for site in all_sites])
            if callee_key not in self.entries:
                constants = constant_params(callee, all_sites)
            elif self.entry_calls.get(callee_key):  # also called from the user's code, as it says
                constants = entry_constants(callee, self.entry_calls[callee_key], all_sites)
            else:
                constants = {}
            if callee_key not in self.entries:
                # `sequence_mask(lengths, max_len=y.size(1))` at every call: `max_len is None` is False
                for name in sized:
                    constants.setdefault(name, NOT_NONE)
            if callee_key in self.entries:
                # A submodule's forward called from traced code: what the caller passes is
                # better evidence than the "parameters are tensors" default.
                defaults = (self.param_kinds[callee_key] if callee_key in self.api_entries
                            else entry_param_kinds(callee))
                kinds = {name: kinds.get(name, Kind.UNKNOWN) if kinds.get(name, Kind.UNKNOWN) != Kind.UNKNOWN else kind
                         for name, kind in defaults.items()}
                filled = set()  # an entry's own defaults read the body already (entry_param_kinds)
            body_typed = frozenset(filled)
            if (callee_key not in self.results or kinds != self.param_kinds.get(callee_key)
                    or crossed != self.crossed.get(callee_key, frozenset())
                    or tuples != self.tuples.get(callee_key, {})
                    or sized != self.sized.get(callee_key, {})
                    or fixed != self.fixed.get(callee_key, frozenset())
                    or body_typed != self.body_typed.get(callee_key, frozenset())
                    or facts != self.facts.get(callee_key, frozenset())
                    or constants != self.constants.get(callee_key, {})):
                self.param_kinds[callee_key] = kinds
                self.crossed[callee_key] = crossed
                self.tuples[callee_key] = tuples
                self.sized[callee_key] = sized
                self.fixed[callee_key] = fixed
                self.body_typed[callee_key] = body_typed
                self.facts[callee_key] = facts
                self.constants[callee_key] = constants
                changed.append(callee)
        return changed

    def _candidates_with_reach(self) -> list[tuple[Candidate, tuple[str, ...]]]:
        reach: dict[int, set[str]] = defaultdict(set)
        callees: dict[int, list[int]] = defaultdict(list)  # caller -> callees, built once
        for callee, callers in self.callers.items():
            for caller in callers:
                callees[caller].append(callee)
        drawing: dict[int, bool] = {}  # function -> whether its own body draws (api_entries.draws)
        for key, name in self.entries.items():
            if key in self.api_entries and not self._computes_tensors(key):
                continue  # a utility (I/O, a training loop, a data filter): not what users compile
            stack, seen = [key], set()
            while stack:
                current = stack.pop()
                if current not in seen:
                    seen.add(current)
                    stack.extend(callees.get(current, ()))
            if key in self.api_entries:
                for current in seen:
                    if current not in drawing:
                        drawing[current] = draws(self.functions[current])
                if any(drawing[current] for current in seen):
                    continue  # visualisation (`Results.plot`): not what users compile either
                name += API_MARK  # `reached from odeint (public API)`: why it counts as compiled
            for current in seen:
                reach[current].update(name.split(", "))  # a wrapper's or reached entry's several names
        output = []
        for key, result in self.results.items():
            if not reach[key]:
                continue  # reached only from public functions that compute no tensor
            # An entry's own findings name no callers, except a decorator's wrapper: its name
            # (`deco.<locals>.wrapper`) says nothing about which forward it wraps.
            own = key in self.entries and self.entries[key] == self.functions[key].qualname
            if own and key in self.api_entries:
                # its own findings say why it counts as compiled
                entries = (PUBLIC_STATE_API if key in self.state_updaters else PUBLIC_API,)
                guessed = True
            else:
                names = reach[key] - {self.functions[key].qualname}
                compiled = {name for name in names if not is_api_reach(name)}
                entries = () if own else tuple(sorted(compiled or names))
                guessed = not own and not compiled
            for candidate in result.candidates:
                if guessed and not candidate.on_guessed_entries:
                    continue  # an int argument's per-call change, in code only guessed compiled
                output.append((candidate, entries))
        return output
