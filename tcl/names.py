"""Import aliases and dotted names: `T.nn.functional.relu` -> `torch.nn.functional.relu`.

A deliberately small replacement for libcst's QualifiedNameProvider: one pass over the
module's import statements instead of a full scope analysis, which costs several parses.
"""

from __future__ import annotations

import builtins

import libcst as cst

from . import syntax_walk

BUILTIN_NAMES = frozenset(dir(builtins))

# Logging as TCL104 and its fix see it: `logger.debug(...)` on a name that looks like a logger.
LOG_METHODS = frozenset({
    "debug", "info", "warning", "warn", "error", "exception", "critical", "log", "fatal",
    "warning_once", "info_once",
})
LOGGER_NAMES = frozenset({"logger", "_logger", "LOGGER", "log", "_log"})


def source_text(node: cst.CSTNode) -> str:
    """The source of one node as written (for messages and evidence)."""
    return cst.Module([]).code_for_node(node)


def string_value(node: cst.SimpleString) -> str | bytes:
    """`node.evaluated_value` without a parse for a plain literal ('abc', "abc": no prefix, no
    backslash, not triple-quoted): libcst's evaluated_value runs ast.literal_eval every time."""
    raw = node.value
    if raw[0] in "'\"" and "\\" not in raw and not raw.startswith(("'''", '"""')):
        return raw[1:-1]
    return node.evaluated_value


def int_literal(node: cst.BaseExpression) -> int | None:
    """The value of an int literal, `3` or `-1`; None for anything else."""
    if isinstance(node, cst.Integer):
        return int(node.value, 0)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus) and isinstance(node.expression, cst.Integer):
        return -int(node.expression.value, 0)
    return None


def short_source(node: cst.CSTNode, limit: int = 40) -> str:
    """`source_text` on one line, cut at `limit` characters: a message's first line stays short
    even when the expression spans a dozen lines."""
    text = " ".join(source_text(node).split())
    text = text.replace("( ", "(").replace("[ ", "[").replace(" )", ")").replace(" ]", "]")
    return text if len(text) <= limit else text[:limit - 3] + "..."


def dotted(node: cst.BaseExpression) -> str | None:
    """`a.b.c` for a Name/Attribute chain, else None."""
    parts = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if not isinstance(node, cst.Name):
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


def module_name(node: cst.BaseExpression | None) -> str:
    return dotted(node) or "" if node is not None else ""


class ImportMap:
    """Local name -> fully qualified name, from the imports anywhere in a module."""

    def __init__(self, package: str = "") -> None:
        self.aliases: dict[str, str] = {}
        self.package = package  # dotted package of the file, for relative imports

    def add_import(self, node: cst.Import) -> None:
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            full = module_name(alias.name)
            if alias.asname is not None:
                self.aliases[alias.asname.name.value] = full
            else:
                head = full.split(".")[0]
                self.aliases[head] = head

    def add_import_from(self, node: cst.ImportFrom) -> None:
        base = module_name(node.module)
        if node.relative:
            base = self._absolute(len(node.relative), base)
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            name = alias.name.value if isinstance(alias.name, cst.Name) else module_name(alias.name)
            local = alias.asname.name.value if alias.asname is not None else name
            self.aliases[local] = f"{base}.{name}" if base else name

    def _absolute(self, dots: int, rest: str) -> str:
        parts = self.package.split(".") if self.package else []
        if dots > 1:
            parts = parts[: len(parts) - (dots - 1)] if dots - 1 <= len(parts) else []
        base = ".".join(parts)
        if rest:
            return f"{base}.{rest}" if base else rest
        return base

    def qualify(self, node: cst.BaseExpression, local_defs: frozenset[str] = frozenset()) -> str | None:
        """The qualified name an expression refers to, or None if it is not a plain name chain.

        Names defined in the module itself come back unchanged; unbound names that are
        builtins come back as `builtins.X`.
        """
        name = dotted(node)
        if name is None:
            return None
        head, _, rest = name.partition(".")
        if head in local_defs:
            return name
        full = self.aliases.get(head)
        if full is None:
            if head in BUILTIN_NAMES and not rest:
                return f"builtins.{head}"
            return name
        return f"{full}.{rest}" if rest else full


def canonical(qualname: str | None) -> str | None:
    """Fold the spellings torch offers for one function into one name."""
    if qualname is None:
        return None
    for prefix, target in _CANONICAL_PREFIXES:
        if qualname.startswith(prefix):
            return target + qualname[len(prefix):]
    return qualname


_CANONICAL_PREFIXES = (
    ("torch.nn.modules.module.Module", "torch.nn.Module"),
    ("torch._C._nn.", "torch.nn.functional."),
    ("torch._dynamo.eval_frame.disable", "torch._dynamo.disable"),
    ("torch._dynamo.decorators.", "torch._dynamo."),
)


def names_in(node: cst.CSTNode) -> set[str]:
    """The plain names an expression reads (not attribute names: `x` of `x.shape`)."""
    found: set[str] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Name):
            found.add(current.value)
        elif isinstance(current, cst.Attribute):
            stack.append(current.value)
        else:
            stack.extend(syntax_walk.children(current))
    return found
