"""What a fixer returns (`Fix`) and what it gets to look at (`FixContext`)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterator

import libcst as cst

from ..dataflow import Kind, is_tensor

if TYPE_CHECKING:
    from ..findings import Finding
    from ..module_index import FunctionInfo, ModuleIndex


class Safety(enum.IntEnum):
    SUGGESTION = 0  # shown, never applied
    UNSAFE = 1      # applied with --unsafe-fixes
    SAFE = 2        # applied with --apply

    @property
    def label(self) -> str:
        return {0: "suggestion", 1: "unsafe", 2: "safe"}[int(self)]


SAFE, UNSAFE, SUGGESTION = Safety.SAFE, Safety.UNSAFE, Safety.SUGGESTION


@dataclass
class Fix:
    """One rewrite: original nodes of the parsed module -> what replaces them.

    A replacement is a node, `cst.RemoveFromParent()` or a `cst.FlattenSentinel` of statements.
    `guard=True` marks statement wrappers (`if not torch.compiler.is_compiling(): ...`): the
    driver merges adjacent ones into a single `if`.
    """

    code: str
    line: int
    col: int
    title: str
    safety: Safety
    replacements: dict = field(default_factory=dict)
    note: str = ""          # what the user should know (shown next to the diff)
    needs_torch: bool = False
    imports: tuple = ()     # other modules the new code names (`import warnings` is added if missing)
    guard: bool = False
    held_back: bool = False  # an unsafe fix `tcl fix --verify` leaves out of one variant

    def describe(self) -> str:
        # line 0: a fix of the whole file (a setting the examples call for), not of one finding
        text = f"{self.code} {self.line}:{self.col} {self.title}" if self.line else f"{self.code} {self.title}"
        return f"{text} -- {self.note}" if self.note else text


Fixer = Callable[["Finding", cst.CSTNode, "FixContext"], "Fix | None"]


class FixContext:
    """The module around one finding: parents, names, the kinds the engine inferred there."""

    def __init__(
        self,
        module: cst.Module,
        index: "ModuleIndex",
        version: tuple[int, int],
        parents: dict,
        function: "FunctionInfo",
        kinds: dict,
    ) -> None:
        self.module = module
        self.index = index
        self.version = version
        self.parents = parents
        self.function = function
        self.kinds = kinds  # expression node -> Kind, with the environment at the finding

    # -- navigation --------------------------------------------------------------------------
    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self.parents.get(node)

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        node = self.parents.get(node)
        while node is not None:
            yield node
            node = self.parents.get(node)

    def statement_of(self, node: cst.CSTNode) -> cst.BaseStatement | None:
        """The statement line or compound statement holding `node`."""
        for current in [node, *self.ancestors(node)]:
            if isinstance(current, cst.BaseStatement):
                return current
        return None

    # -- names and kinds ---------------------------------------------------------------------
    def qualify(self, node: cst.BaseExpression) -> str | None:
        return self.index.qualify(node)

    def kind(self, node: cst.BaseExpression) -> Kind:
        return self.kinds.get(node, Kind.UNKNOWN)

    def is_tensor(self, node: cst.BaseExpression) -> bool:
        return is_tensor(self.kind(node))

    def torch_bound(self) -> bool:
        return self.index.imports.aliases.get("torch") == "torch"

    # -- code ---------------------------------------------------------------------------------
    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    def expression(self, code: str) -> cst.BaseExpression:
        return cst.parse_expression(code, config=self.module.config_for_parsing)

    def statement(self, code: str) -> cst.BaseStatement:
        newline = self.module.default_newline
        return cst.parse_statement(code.rstrip("\n") + newline, config=self.module.config_for_parsing)

    def is_compiling(self) -> str:
        """The call that is constant True under torch.compile on the target torch release."""
        return "torch.compiler.is_compiling()" if self.version >= (2, 3) else "torch._dynamo.is_compiling()"
