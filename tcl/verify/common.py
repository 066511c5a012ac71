"""Small pieces every part of `tcl verify` shares: exit codes, the usage error, and paths as the
report shows them (relative to the working directory) and as it compares them (real, normalised).
Standard library only, so that the child process can import it without tcl's static analyzer."""

from __future__ import annotations

import os

EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE = 0, 1, 2
# The phase a recompile record names when its guard tests a value the calls themselves change
# (recompiles.py finds it on identical inputs; explain.py explains it as state, not as a size).
STATE_PHASE = "every call"
_MAX_TEXT = 400


class UsageError(Exception):
    pass


def package_root(path: str) -> tuple[str, str]:
    """(directory to put on sys.path, dotted module name) for a .py file inside packages."""
    directory, filename = os.path.split(path)
    parts = [os.path.splitext(filename)[0]]
    while os.path.isfile(os.path.join(directory, "__init__.py")):
        directory, package = os.path.split(directory)
        parts.insert(0, package)
    return directory, ".".join(parts)


def _display(path: str) -> str:
    """A path relative to the working directory when it is under it, else absolute."""
    if path.startswith("<"):
        return path
    absolute = os.path.abspath(path)
    try:
        relative = os.path.relpath(absolute)
    except ValueError:
        return absolute
    return absolute if relative.startswith("..") else relative


def _norm(path: str) -> str:
    return os.path.normcase(os.path.realpath(path))


def _one_line(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 3] + "..."


def _describe(exc: BaseException) -> str:
    first = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), "")
    return _one_line(f"{type(exc).__name__}: {first}" if first else type(exc).__name__)
