"""What a re-check of edited text can keep from the last one: the language server's memo.

An editor re-checks one file after every pause in typing; most of it did not change. An
`Analyzer` given an `EditMemo` (only the language server makes one) keeps, across checks:

* the parsed top-level statements, by text (tcl.incremental_parse): unchanged statements keep
  their libcst nodes, so unchanged functions are recognised by the identity of their nodes;
* the FunctionInfo of every function whose node and decorators did not change ("adopted" into
  the new index), so results that name a callee stay valid;
* each function's walk (its FunctionResult), keyed by the function, its node, what its callers
  pass it, and the file's *facts* (imports, module-level statements, class headers and `self.`
  attributes, compile targets: everything outside function bodies a walk may read), and valid
  only while every question the walk asked (which function a call reaches, what a callee
  returns, whether it breaks) gets the same answer again;
* the line/column ranges inside each function holding a finding, shifted when lines above it
  were added or removed.

Anything else (another file changed on disk, the settings) makes the server start a new
Analyzer, and with it a new memo.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import libcst as cst
from libcst._position import CodePosition, CodeRange

from .incremental_parse import StatementMemo
from .module_index import ModuleIndex
from .positions import _RangeSink, _ast_def_starts, _function_ranges, _state

# A function is walked a few times during a fixpoint (callee results arrive, callers' argument
# kinds change); each of those walks is kept, so that the next check's fixpoint finds them all.
MAX_WALKS_PER_FUNCTION = 8
MAX_FUNCTIONS = 20_000
MAX_FACTS = 20_000


@dataclass(eq=False)
class _Walk:
    function: object
    node: cst.CSTNode
    inputs: tuple
    facts: str
    queries: list  # (question, argument, answer) in the order the walk asked them
    result: object


@dataclass
class EditMemo:
    statements: StatementMemo = field(default_factory=StatementMemo)
    previous_index: dict[str, ModuleIndex] = field(default_factory=dict)  # path -> last index
    walks: dict[int, list[_Walk]] = field(default_factory=dict)  # id(FunctionInfo) -> walks
    ranges: dict[int, tuple] = field(default_factory=dict)  # id(function node) -> ranges at a line
    node_texts: dict[int, tuple[cst.CSTNode, str]] = field(default_factory=dict)  # id(node) -> its code
    statement_facts: dict[int, tuple[cst.CSTNode, str]] = field(default_factory=dict)  # -> _statement_facts
    compile_calls: dict = field(default_factory=dict)  # for module_index.collect_compile_calls
    # FunctionInfo made from another (a method bound to a subclass, a nested def): key ->
    # (what it was made from, the copy), so walks of it are found again (`derived`)
    derived_functions: dict[tuple, tuple] = field(default_factory=dict)
    walked = 0  # walks run (misses) and reused (hits), for tests and the benchmark
    reused = 0

    # -- FunctionInfo identity across versions ----------------------------------------------
    def adopt(self, index: ModuleIndex, path: str) -> None:
        """Put last version's FunctionInfo in place of each function whose node is unchanged."""
        previous = self.previous_index.get(path)
        self.previous_index[path] = index
        if previous is None:
            return
        for name, info in list(index.functions.items()):
            old = previous.functions.get(name)
            if _same_function(old, info):
                old.top, old.index = info.top, index
                index.functions[name] = old
        for class_name, cls in index.classes.items():
            old_class = previous.classes.get(class_name)
            if old_class is None:
                continue
            if old_class.node is cls.node and old_class._scanned:  # `self.` attributes: same methods
                cls._attributes, cls._buffers, cls._scanned = old_class._attributes, old_class._buffers, True
            for name, info in list(cls.methods.items()):
                old = old_class.methods.get(name)
                if _same_function(old, info):
                    old.top, old.index, old.owner = info.top, index, cls
                    cls.methods[name] = old

    def derived(self, key: tuple, made_from: tuple, make):
        """The FunctionInfo `make()` builds from the objects `made_from` (its own first): last
        check's object for `key` while it was made from the same objects, refreshed from its
        source (adopt() moves an unchanged function into the new index), else a new one. A
        method bound to a subclass and a nested def are made afresh by every analysis; without
        this their walks, kept by identity, would never be found again, nor those of their
        callers (a `call` question's answer names them)."""
        if len(self.derived_functions) > MAX_FUNCTIONS:
            self.derived_functions.clear()
        kept = self.derived_functions.get(key)
        if kept is not None and len(kept[0]) == len(made_from) and all(a is b for a, b in zip(kept[0], made_from)):
            copy = kept[1]
            if copy is not None:
                fresh = make()
                if fresh is None or fresh.node is not copy.node:
                    self.derived_functions[key] = (made_from, fresh)
                    return fresh
                copy.__dict__.update(fresh.__dict__)
            return copy
        made = make()
        self.derived_functions[key] = (made_from, made)
        return made

    # -- walks ------------------------------------------------------------------------------
    def facts(self, index: ModuleIndex) -> str:
        """A digest of everything outside function bodies that a walk in this file may read."""
        cached = getattr(index, "_tcl_facts", None)
        if cached is not None:
            return cached
        digest = hashlib.sha1()
        if len(self.statement_facts) > MAX_FACTS:
            self.statement_facts.clear()
        for statement in index.module.body:
            kept = self.statement_facts.get(id(statement))
            if kept is None or kept[0] is not statement:
                kept = self.statement_facts[id(statement)] = (statement, _statement_facts(index.module, statement))
            digest.update(kept[1].encode("utf-8", "surrogatepass"))
        for cls in index.classes.values():
            digest.update(repr((cls.name, cls.bases, cls.is_module, sorted(cls.buffers))).encode())
            for name, value in cls.attributes.items():
                digest.update(f"{name}={self._code(index.module, value)}\n".encode("utf-8", "surrogatepass"))
        digest.update(repr((sorted(index.compile_targets), sorted(index.dynamic_false_targets),
                            sorted(index.loggers), "mark_dynamic" in index.source)).encode())
        index._tcl_facts = digest.hexdigest()
        return index._tcl_facts

    def _code(self, module: cst.Module, node: cst.CSTNode) -> str:
        if len(self.node_texts) > MAX_FACTS:
            self.node_texts.clear()
        kept = self.node_texts.get(id(node))
        if kept is None or kept[0] is not node:
            kept = self.node_texts[id(node)] = (node, module.code_for_node(node))
        return kept[1]

    def find_walk(self, function, inputs: tuple, facts: str, ask) -> object | None:
        """The kept result of walking `function` on these inputs, if every question the walk
        asked has the same answer now (`ask(question, argument)` answers it)."""
        for walk in self.walks.get(id(function), ()):
            if (walk.function is function and walk.node is function.node and walk.inputs == inputs
                    and walk.facts == facts and all(ask(q, a) == answer for q, a, answer in walk.queries)):
                self.reused += 1
                return walk.result
        return None

    def keep_walk(self, function, inputs: tuple, facts: str, queries: list, result) -> None:
        self.walked += 1
        if len(self.walks) > MAX_FUNCTIONS:
            self.walks.clear()
        kept = [w for w in self.walks.get(id(function), ()) if w.function is function and w.node is function.node]
        kept = kept[-(MAX_WALKS_PER_FUNCTION - 1):]
        self.walks[id(function)] = [*kept, _Walk(function, function.node, inputs, facts, queries, result)]

    # -- positions --------------------------------------------------------------------------
    def function_ranges(self, index: ModuleIndex, functions) -> "_Ranges":
        """positions.function_ranges for this file's functions, from kept ranges where it can."""
        module = index.module
        starts = _ast_def_starts(index.source, index.python_tree)
        found = _Ranges()
        slow_tops: set[int] = set()
        if len(self.ranges) > MAX_FUNCTIONS:
            self.ranges.clear()
        for function in functions:
            owner = function.owner.name if function.owner is not None else None
            start = starts.get((owner, function.name))
            indent = (function.owner.node.body.indent or module.default_indent) if function.owner is not None else None
            layout = (indent, module.default_indent, module.default_newline)
            kept = self.ranges.get(id(function.node))
            if start is not None and kept is not None and kept[0] is function.node and kept[1] == layout:
                found.parts.append((kept[3], start[0] - kept[2]))
                continue
            sink = _RangeSink()
            if start is None or not _function_ranges(module, function, starts, sink):
                slow_tops.add(id(function.top))
                continue
            self.ranges[id(function.node)] = (function.node, layout, start[0], sink._computed)
            found.parts.append((sink._computed, 0))
        if slow_tops:
            self._statement_ranges(module, slow_tops, found)
        return found

    def _statement_ranges(self, module: cst.Module, tops: set[int], found: "_Ranges") -> None:
        """positions.statement_ranges, per module-level statement, shifted like functions'."""
        layout = ("<module>", module.default_indent, module.default_newline)
        line = 1 + len(module.header)
        for statement in module.body:
            if id(statement) in tops:
                kept = self.ranges.get(id(statement))
                if kept is None or kept[0] is not statement or kept[1] != layout:
                    sink = _RangeSink()
                    state = _state(module, sink)
                    state.line = line
                    statement._codegen(state)
                    kept = self.ranges[id(statement)] = (statement, layout, line, sink._computed)
                found.parts.append((kept[3], line - kept[2]))
            line += self._code(module, statement).count("\n")


class _Ranges:
    """node -> CodeRange over several functions' kept ranges, each shifted by whole lines."""

    def __init__(self) -> None:
        self.parts: list[tuple[dict, int]] = []

    def get(self, node, default=None):
        for ranges, shift in self.parts:
            where = ranges.get(node)
            if where is not None:
                if not shift:
                    return where
                return CodeRange(CodePosition(where.start.line + shift, where.start.column),
                                 CodePosition(where.end.line + shift, where.end.column))
        return default


def _same_function(old, new) -> bool:
    return old is not None and old.node is new.node and old.decorators == new.decorators


def _statement_facts(module: cst.Module, statement: cst.CSTNode) -> str:
    """What a top-level statement tells walks elsewhere: all of it, except function bodies."""
    if isinstance(statement, cst.FunctionDef):
        return f"def {_header(module, statement)}\n"
    if isinstance(statement, cst.ClassDef):
        parts = [f"class {_header(module, statement)}"]
        for item in statement.body.body:
            if isinstance(item, cst.FunctionDef):
                parts.append(f"  def {_header(module, item)}")
            else:
                parts.append(module.code_for_node(item))
        return "\n".join(parts) + "\n"
    return module.code_for_node(statement)


def _header(module: cst.Module, node: cst.FunctionDef | cst.ClassDef) -> str:
    """Name, decorators and (for a class) bases: what an index reads of a definition."""
    decorators = ",".join(module.code_for_node(d.decorator) for d in node.decorators)
    bases = ",".join(module.code_for_node(a) for a in getattr(node, "bases", ()))
    return f"{node.name.value}[{decorators}]({bases})"
