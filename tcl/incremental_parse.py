"""Re-parse only the top-level statements an edit touched (the language server's parse).

libcst parses a 1.5k-line file in about 0.25 s, most of what one re-check after a keystroke
costs. Top-level statements parse independently of one another, so the text is cut at their
boundaries (found by the `ast` tree the crash guard builds anyway), each piece is parsed on its
own and remembered by its text, and the module is put together from the pieces: after an edit
only the statement that changed is parsed again, and every other statement keeps the very same
libcst nodes, which is what lets later stages (the per-function memo, positions) recognise
unchanged code by identity. The result equals `libcst.parse_module(text)` node for node (a test
checks it on the fixtures and torch's own modules); where the cut could differ from libcst's
own ownership of comments, or anything looks unusual, the whole text is parsed as before.
"""

from __future__ import annotations

import ast
import re

import libcst as cst

# A piece of a non-last chunk is parsed followed by this statement, so that an indented block at
# its end owns its trailing comments exactly as it does when another statement follows it.
_SENTINEL = "pass\n"
_INDENTED_COMMENT = re.compile(r"[ \t]+#")
_INDENTED = re.compile(r"^[ \t]+[^ \t#\r\n]", re.MULTILINE)
MAX_REMEMBERED = 4096  # pieces kept; more means many files or a long session: start over


class StatementMemo:
    """Parsed pieces by text, shared by every version of every document one analyzer sees."""

    def __init__(self) -> None:
        self.pieces: dict[tuple[str, str, bool, bool, int], tuple] = {}
        self.parsed = 0  # pieces parsed (misses), for tests and the benchmark
        self.reused = 0

    def piece(self, text: str, first: bool, last: bool, repeat: int = 0, owner: str = "") -> tuple[cst.Module, list | None, bool]:
        """The piece parsed on its own, its statements as the whole module has them (None: the
        cut gave a comment to another owner than libcst would), and whether it has indented code."""
        # `repeat`: the same text seen earlier in this module (a file pasted twice) must still
        # give nodes of its own: later stages tell places in the module apart by node identity.
        # `owner` (the file's path): nodes are never shared between files, whose analyses key
        # some results by node identity (a decorator's wrapper, a helper's settled walk).
        key = (owner, text, first, last, repeat)
        kept = self.pieces.get(key)
        if kept is None:
            if len(self.pieces) >= MAX_REMEMBERED:
                self.pieces.clear()
            module = cst.parse_module(text if last else text + _SENTINEL)
            kept = self.pieces[key] = (module, _statements(module, first, last), bool(_INDENTED.search(text)))
            self.parsed += 1
        else:
            self.reused += 1
        return kept


def _statements(module: cst.Module, first: bool, last: bool) -> list | None:
    statements = list(module.body)
    if not last:
        sentinel = statements.pop() if statements else None
        if not _is_sentinel(sentinel) or module.footer:
            return None
    if not statements:
        return None
    if not first and module.header:  # the lines before a statement are its own in the whole module
        statements[0] = statements[0].with_changes(leading_lines=[*module.header, *statements[0].leading_lines])
    return statements


def parse_incrementally(source: str, tree: ast.Module | None, memo: StatementMemo, owner: str = "") -> cst.Module:
    """`libcst.parse_module(source)`, reusing the pieces `memo` has parsed before for `owner`."""
    chunks = _chunks(source, tree)
    if chunks is None or len(chunks) < 2:
        return cst.parse_module(source)
    body: list[cst.BaseStatement] = []
    header: tuple = ()
    footer: tuple = ()
    first_module = last_module = None
    default_indent = None  # the whole module's: libcst takes the file's first indentation
    seen: dict[str, int] = {}
    for number, text in enumerate(chunks):
        first, last = number == 0, number == len(chunks) - 1
        repeat = seen[text] = seen.get(text, -1) + 1
        module, statements, indented = memo.piece(text, first, last, repeat, owner)
        if statements is None:
            return cst.parse_module(source)
        if indented:
            # A block records its indentation only where it differs from the module's default,
            # and a piece's default is its own first indentation: they must agree.
            default_indent = default_indent or module.default_indent
            if module.default_indent != default_indent:
                return cst.parse_module(source)
        if first:
            header, first_module = module.header, module
        if last:
            footer, last_module = module.footer, module
        body.extend(statements)
    return cst.Module(
        body=tuple(body), header=header, footer=footer, encoding=first_module.encoding,
        default_indent=default_indent or "    ", default_newline=first_module.default_newline,
        has_trailing_newline=last_module.has_trailing_newline,
    )


def _is_sentinel(statement) -> bool:
    return (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1
            and isinstance(statement.body[0], cst.Pass) and not statement.leading_lines)


def _chunks(source: str, tree: ast.Module | None) -> list[str] | None:
    """The text cut before each top-level statement (its comments and decorators included)."""
    if tree is None or not tree.body or "\r" in source or "\x0c" in source or "\\\n" in source:
        return None  # line counting or continuation lines that ast and a plain split may see apart
    lines = source.split("\n")
    starts: list[int] = []  # 0-based first line of each piece
    previous_end = 0  # 1-based last line of the previous statement
    for statement in tree.body:
        first = min([d.lineno for d in getattr(statement, "decorator_list", ())] + [statement.lineno])
        if starts and first <= previous_end:  # `a = 1; b = 2`: one line, one piece
            previous_end = max(previous_end, statement.end_lineno or first)
            continue
        if starts:
            # Comments indented deeper than this statement, after the previous block, are that
            # block's (libcst gives them to its footer): the cut goes after the last of them.
            cut = previous_end
            for row in range(previous_end, first - 1):
                if _INDENTED_COMMENT.match(lines[row]):
                    cut = row + 1
            starts.append(cut)
        else:
            starts.append(0)
        previous_end = statement.end_lineno or first
    pieces = []
    for number, start in enumerate(starts):
        end = starts[number + 1] if number + 1 < len(starts) else len(lines)
        pieces.append("\n".join(lines[start:end]) + ("\n" if number + 1 < len(starts) else ""))
    return pieces
