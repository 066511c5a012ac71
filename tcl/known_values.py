"""What a walk knows before tracing: the tests Dynamo decides from values that are no tensor data.

Dynamo runs a traced function's Python with the values it has, so a test on something that is
not tensor data is decided while tracing and only one branch is traced. The walker
(tcl/walker.py) decides such a test before walking it from, in this order: what holds under
compile whatever the program (`torch.compiler.is_compiling()`, `TYPE_CHECKING`, the targeted
torch's version, the config's `assume`; `static_truth`); what the callers' tests said about the
object's own attributes (tcl/guard_facts.py); the literals every caller passes, the keywords
every call of a compiled entry puts in its `**kwargs` (tcl/params.py) and the locals bound once
to a value known before tracing (tcl/local_constants.py); the module's literal flags
(tcl/module_constants.py); and what the tests before an `elif` proved (tcl/branches.py).
`KnownValues` is the walker's part that answers these questions, and `literal` the one that
says which argument a call passes is such a value.
"""

from __future__ import annotations

import libcst as cst

from . import syntax_walk
from .assume import assumed_truth
from .branches import settled_text
from .guard_facts import _decide, constant_truth, decided_by, keyword_value
from .local_constants import single_bindings
from .module_constants import function_locals, module_constants
from .module_index import ModuleIndex
from .names import names_in
from .params import KnownKeywords, keywords_escape, literal_value
from .version_tests import version_truth

# Under torch.compile these return constants, so branches on them are decided statically.
COMPILING_TRUE = frozenset({
    "torch.compiler.is_compiling", "torch.compiler.is_dynamo_compiling",
    "torch._dynamo.is_compiling", "torch._utils.is_compiling",
})
# Library helpers that wrap those checks (transformers' is_torchdynamo_compiling() and
# is_tracing(x), accelerate's, ...): matched by their last name.
COMPILING_TRUE_HELPERS = frozenset({"is_torchdynamo_compiling", "is_compiling", "is_tracing", "is_dynamo_compiling"})
COMPILING_FALSE = frozenset({
    "torch.jit.is_scripting", "torch.jit.is_tracing", "torch.compiler.is_exporting",
    "torch._C._get_tracing_state",
})


def static_truth(test: cst.BaseExpression, index: ModuleIndex, assume: dict | None = None,
                 version: tuple[int, ...] | None = None) -> bool | None:
    """True/False when a condition is decided under torch.compile, else None. `assume` (the
    config's) decides `self.training` and dtype tests as well; `version` (the targeted torch
    release) tests on torch.__version__ (tcl/version_tests.py)."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = static_truth(test.expression, index, assume, version)
        return None if inner is None else not inner
    if isinstance(test, cst.Call):
        name = index.qualify(test.func) or ""
        if name in COMPILING_TRUE and not test.args:
            return True
        if name in COMPILING_FALSE and not test.args:
            return False
        if name.rsplit(".", 1)[-1] in COMPILING_TRUE_HELPERS and not name.startswith("torch."):
            return True
    if isinstance(test, cst.Name) and test.value == "TYPE_CHECKING":
        return False
    if version is not None and isinstance(test, (cst.Comparison, cst.Call)):
        truth = version_truth(test, index, version)
        if truth is not None:
            return truth
    if assume:
        truth = assumed_truth(test, index, assume)
        if truth is not None:
            return truth
    if isinstance(test, cst.BooleanOperation):
        left, right = static_truth(test.left, index, assume, version), static_truth(test.right, index, assume, version)
        if isinstance(test.operator, cst.And):
            if left is False or right is False:
                return False
            if left is True and right is True:
                return True
        else:
            if left is True or right is True:
                return True
            if left is False and right is False:
                return False
    return None


class KnownValues:
    """The walker's answers to "is this decided before tracing?" (see the module docstring).
    Reads the walker's state: `function`, `index`, `assume`, `version`, `constants`,
    `local_constants`, `_local_candidates`, `assigned`, `fact_scopes`, `self_writes`,
    `settled_scopes` and the engine's `returned_literal` question ((the call, how many
    positional arguments, the keywords, the literals passed) -> (True, value) or None)."""

    def truth(self, test: cst.BaseExpression) -> bool | None:
        """The test's value when it is decided under compile or by the guard facts."""
        truth = static_truth(test, self.index, self.assume, self.version)
        if truth is None:
            truth = decided_by(test, self.guard_facts())
        if truth is None and (self.constants or self.local_constants or self._local_candidates):
            truth = constant_truth(test, self.live_constants(test))
        if truth is None:
            truth = constant_truth(test, self.module_constants())
        if truth is None and self.settled_scopes:
            known = {text: value for scope in self.settled_scopes for text, value in scope.items()}
            truth = _decide(test, lambda atom: known.get(settled_text(atom)))
        return truth

    def live_constants(self, at: cst.CSTNode) -> dict:
        """The parameters' constants that hold at `at`: not rebound so far, and a `**kwargs`'s
        known keywords only in the statements before the first that may change the dict
        (tcl/params.py keywords_escape; a later statement, or one inside the same loop, is
        after it)."""
        live = {}
        for name, value in self.constants.items():
            if name in self.assigned:
                continue
            if isinstance(value, KnownKeywords):
                if name not in self._keywords_escape:
                    named = {k: v for k, v in self.constants.items()
                             if k not in self.assigned and not isinstance(v, KnownKeywords)}

                    def decided(test: cst.BaseExpression):
                        truth = static_truth(test, self.index, self.assume, self.version)
                        return truth if truth is not None else constant_truth(test, named)

                    self._keywords_escape[name] = keywords_escape(self.function, name, value, decided)
                here = self._statement_index(at)
                if here is None or here >= self._keywords_escape[name]:
                    continue
            live[name] = value
        if self._local_candidates and isinstance(at, cst.BaseExpression):
            for name in names_in(at) & self._local_candidates.keys():
                self._local_value(name, helpers=True)
        live.update(self.local_constants)
        return live

    def _note_local_candidate(self, node: cst.Assign) -> None:
        """`name = value` as a statement of its own at the top of the body: a local that may be
        bound once to a value known before tracing (tcl/local_constants.py), judged when read."""
        if (len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name)
                and self.parent(2) is self.function.node.body):
            self._local_candidates[node.targets[0].target.value] = node

    def _local_value(self, name: str, helpers: bool) -> tuple | None:
        """(True, value) of a local bound once to a known value, else None. `helpers`: also
        walk a helper for the literal it returns (a test's question; a call's argument asks
        only for literals and keywords no call passes)."""
        if name in self.local_constants:
            return True, self.local_constants[name]
        node = self._local_candidates.get(name)
        if node is None:
            return None
        value = node.value
        if not helpers and isinstance(value, cst.Call) and keyword_value(value, self.constants) is None:
            return None  # judged when a test reads it
        del self._local_candidates[name]
        bound = single_bindings(self.function.node).get(name)
        if bound is None or bound[1] is not node:
            return None
        literal = self.literal(value)
        if literal is None and self.constants:
            literal = keyword_value(value, self.live_constants(value))
        if literal is None and isinstance(value, cst.Call) and not any(arg.star for arg in value.args):
            positional = sum(1 for arg in value.args if arg.keyword is None)
            keywords = frozenset(arg.keyword.value for arg in value.args if arg.keyword is not None)
            literal = self.returned_literal((value, positional, keywords,
                                             tuple(self.call_literals(value.args).items())))
        if literal is not None:
            self.local_constants[name] = literal[1]
        return literal

    def call_literals(self, args) -> dict:
        """Position or keyword -> the literal a call's argument passes (`literal`), for the
        arguments that pass one (spread ones skipped): CallSite.literals."""
        literals = {}
        for i, arg in enumerate(arg for arg in args if not arg.star):
            literal = self.literal(arg.value)
            if literal is not None:
                literals[arg.keyword.value if arg.keyword is not None else i] = literal[1]
        return literals

    def _statement_index(self, node: cst.CSTNode) -> int | None:
        """The position in the function's body of the statement that holds `node`."""
        if self._statement_of is None:
            self._statement_of = {}
            body = self.function.node.body
            if isinstance(body, cst.IndentedBlock):
                for position, statement in enumerate(body.body):
                    stack = [statement]
                    while stack:
                        current = stack.pop()
                        self._statement_of[id(current)] = position
                        stack.extend(syntax_walk.children(current))
        return self._statement_of.get(id(node))

    def module_constants(self) -> dict:
        """The module's literal flags this function does not shadow (tcl/module_constants.py)."""
        if self._module_constants is None:
            found = module_constants(self.index)
            if found:
                shadowed = function_locals(self.function)
                found = {k: v for k, v in found.items() if k not in shadowed}
            self._module_constants = found
        return self._module_constants

    def guard_facts(self) -> dict:
        """The guard facts that hold here: callers' and enclosing `if`s', minus what was assigned."""
        merged: dict = {}
        for scope in self.fact_scopes:
            merged.update(scope)
        return {key: value for key, value in merged.items() if key[0] not in self.self_writes}

    def literal(self, node: cst.BaseExpression):
        """(True, value) for a literal, or for a parameter every traced caller gives one literal
        and the function has not reassigned (`self._once(x, profile)` where every caller gave
        profile=False); None otherwise."""
        literal = literal_value(node)
        if literal is None and isinstance(node, cst.Name) and node.value in self.constants \
                and node.value not in self.assigned and not isinstance(self.constants[node.value], KnownKeywords):
            literal = (True, self.constants[node.value])
        if literal is None and isinstance(node, cst.Name) and (
                node.value in self.local_constants or node.value in self._local_candidates):
            literal = self._local_value(node.value, helpers=False)
        return literal
