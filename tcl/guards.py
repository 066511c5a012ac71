"""The checks every file passes before libcst sees it, in every entry point.

libcst's native parser recurses once per nesting level and allocates a few kilobytes per token:
input beyond its limits is not an exception but a segfault (the C stack overflows) or a process
that grows until the OOM killer ends the whole run. `refusal(path, source)` finds such input
first, cheaply, and answers a one-line FileError naming the file (and the line, where one is to
blame); `tcl check` (-j1 and -jN), `tcl fix` (its input and every rewrite it makes), flake8 and
the LSP all reach libcst only through `tcl.engine.parse_source` and `tcl.fixing.apply
.syntax_problem`, which ask it first. The limits sit far above real code: over the 10,000 .py
files of a scientific Python install the longest dotted name has 23 parts and the longest line
72,574 characters.
"""

from __future__ import annotations

import ast
import re
import warnings

from .findings import FileError

# `import a.a.a...` with 7,000 parts: CPython parses a dotted name in a loop, libcst recurses per
# part (a segfault); 500 parts already exhaust Python's recursion limit in fix's tree visitors.
MAX_DOTTED_PARTS = 100
# One line of code this long (a 1 MB list literal) costs libcst tens of seconds and gigabytes.
MAX_LINE_CHARS = 200_000
# About this many tokens (names, numbers, strings, operators) in one file: ~2.5 KB of libcst
# nodes each (493,000 tokens peaked at 1.25 GB in `tcl check`); the largest real file seen
# (torch's common_methods_invocations.py, 1.4 MB) has 268,000.
MAX_TOKENS = 1_000_000
# `a and a and ...`: CPython keeps the chain flat, libcst nests it. More than this many `and`/`or`
# overflow even the big parsing stack (tcl.engine.PARSE_STACK_BYTES).
MAX_BOOLEAN_OPERATORS = 50_000

_DOTTED_RUN = re.compile(r"(?:\.[ \t\f\\\r\n]*\w+[ \t\f\\\r\n]*){%d}" % MAX_DOTTED_PARTS)
_TOKEN = re.compile(r"\w+|[^\w\s]")
_BOOLEAN_WORD = re.compile(r"\b(?:and|or)\b")


def refusal(path: str, source: str) -> tuple[FileError | None, ast.Module | None]:
    """(None, the `ast` tree or None) for input libcst can take; (one-line error, None) if not.

    The `ast` tree is built anyway (CPython's C parser finds too-deep nesting, at ~1/14 of a
    libcst parse); callers that want positions reuse it instead of parsing again."""
    problem = _too_long_line(path, source) or _too_many_tokens(path, source)
    if problem is not None:
        return problem, None
    problem, tree = _beyond_python_limits(path, source)
    if problem is not None:
        return problem, None
    problem = _long_dotted_name(path, source) or _long_boolean_chain(path, source)
    return problem, (tree if problem is None else None)


def _too_long_line(path: str, source: str) -> FileError | None:
    if len(source) <= MAX_LINE_CHARS:
        return None
    lines = source.split("\n") if "\n" in source else source.split("\r")  # old Mac line endings
    for number, line in enumerate(lines, 1):
        if len(line) > MAX_LINE_CHARS:
            return FileError(path, number, f"cannot parse: line {number} is {len(line):,} characters long "
                                           f"(tcl's limit: {MAX_LINE_CHARS:,})")
    return None


def _too_many_tokens(path: str, source: str) -> FileError | None:
    if len(source) <= MAX_TOKENS:  # every token is at least one character
        return None
    count = sum(1 for _ in _TOKEN.finditer(source))
    if count > MAX_TOKENS:
        return FileError(path, 0, f"cannot parse: file too large (about {count:,} tokens; tcl's limit: {MAX_TOKENS:,})")
    return None


def _beyond_python_limits(path: str, source: str) -> tuple[FileError | None, ast.Module | None]:
    """Nesting CPython itself refuses (`((((...`, `1+1+...` with 10,000 terms, 100 levels of
    indentation): libcst would recurse on it until the C stack overflows, or run for minutes."""
    try:
        with warnings.catch_warnings():  # SyntaxWarnings about the checked code are not tcl's output
            warnings.simplefilter("ignore")
            return None, compile(source, path, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except RecursionError:
        return FileError(path, 0, "cannot parse: expressions nested too deeply (Python cannot compile this file either)"), None
    except MemoryError:
        return FileError(path, 0, "cannot parse: file too large to parse"), None
    except SyntaxError as exc:
        # "too many nested parentheses", "too many levels of indentation"; other syntax errors
        # (or syntax newer than this Python) are left to libcst, which reports them.
        if (exc.msg or "").startswith("too many"):
            return FileError(path, exc.lineno or 0, f"cannot parse: {exc.msg}"), None
        return None, None
    except Exception:  # ValueError (NUL bytes) and the like: libcst decides
        return None, None


def _long_dotted_name(path: str, source: str) -> FileError | None:
    if source.count(".") < MAX_DOTTED_PARTS:
        return None
    match = _DOTTED_RUN.search(source)
    if match is None:
        return None
    line = source.count("\n", 0, match.start()) + 1
    return FileError(path, line, f"cannot parse: a dotted name of more than {MAX_DOTTED_PARTS} parts "
                                 "(too deep for libcst's parser)")


def _long_boolean_chain(path: str, source: str) -> FileError | None:
    if boolean_operators(source) > MAX_BOOLEAN_OPERATORS:
        return FileError(path, 0, f"cannot parse: more than {MAX_BOOLEAN_OPERATORS:,} `and`/`or` operators "
                                  "(too large for libcst's parser)")
    return None


def boolean_operators(source: str) -> int:
    """At least how deep libcst nests the file's boolean chains: the words `and` and `or`
    (across lines too; those in comments and strings count, which errs on the safe side)."""
    if "and" not in source and "or" not in source:
        return 0
    return sum(1 for _ in _BOOLEAN_WORD.finditer(source))
