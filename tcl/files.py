"""Finding the Python files to check and reading them safely."""

from __future__ import annotations

import fnmatch
import io
import os
import stat
import tokenize
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Iterator

DEFAULT_EXCLUDES = (
    ".git", ".hg", ".svn", "__pycache__", ".tox", ".nox", ".venv", "venv", "node_modules",
    ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tcl_cache", "*.egg-info", "build", "dist",
)


@dataclass(frozen=True)
class Problem:
    path: str
    message: str


class Excluder:
    """gitignore-style patterns: `name`, `dir/`, `*.py`, `path/to/**`, matched from the root."""

    def __init__(self, patterns: list[str], root: str) -> None:
        self.patterns = [p.strip() for p in patterns if p.strip() and not p.strip().startswith("#")]
        self.root = os.path.abspath(root)

    def excluded(self, path: str, is_dir: bool) -> bool:
        try:
            relative = PurePosixPath(os.path.relpath(os.path.abspath(path), self.root).replace(os.sep, "/"))
        except ValueError:  # another drive on Windows
            relative = PurePosixPath(path)
        name = relative.name
        text = str(relative)
        for pattern in self.patterns:
            dir_only = pattern.endswith("/")
            pattern = pattern.rstrip("/")
            if dir_only and not is_dir:
                continue
            if "/" in pattern.lstrip("/"):
                # Anchored at the root; `dir/**` excludes the directory itself, so it is pruned.
                pattern = pattern.lstrip("/")
                if pattern.endswith("/**"):
                    pattern = pattern[:-3]
                if fnmatch.fnmatchcase(text, pattern):
                    return True
            elif fnmatch.fnmatchcase(name, pattern):
                return True
        return False


def discover(paths: list[str], excluder: Excluder) -> Iterator[str | Problem]:
    """Python files under `paths` in a stable order; Problems for what cannot be walked."""
    for path in paths:
        if os.path.isdir(path):
            yield from _walk(path, excluder)
        elif os.path.exists(path) and not os.path.isfile(path):
            yield Problem(path, "not a regular file; skipped")  # a FIFO would block the read forever
        elif os.path.exists(path):
            yield path  # named explicitly: checked even if an exclude pattern matches
        else:
            yield Problem(path, "no such file or directory")


def _walk(top: str, excluder: Excluder) -> Iterator[str | Problem]:
    seen_dirs: set[str] = set()
    stack = [top]
    while stack:
        directory = stack.pop()
        real = os.path.realpath(directory)
        if real in seen_dirs:
            parent = os.path.realpath(os.path.dirname(directory))
            if parent == real or parent.startswith(real.rstrip(os.sep) + os.sep):
                yield Problem(directory, "symlink loop, directory already visited; skipped")
            continue  # else: a second path to a directory already checked
        seen_dirs.add(real)
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError as exc:
            yield Problem(directory, f"cannot list directory: {exc.strerror or exc}")
            continue
        subdirs = []
        for entry in entries:
            path = entry.path if directory != "." else entry.name
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            if is_dir:
                if not excluder.excluded(path, True):
                    subdirs.append(path)
            elif entry.name.endswith((".py", ".pyi")) and not excluder.excluded(path, False):
                if not _special(entry):
                    yield path
        stack.extend(reversed(subdirs))


def _special(entry: os.DirEntry) -> bool:
    """A FIFO, socket or device named *.py: never source, and reading a FIFO blocks forever.
    Dangling links and link loops are not special: reading them reports the problem."""
    try:
        return not stat.S_ISREG(entry.stat().st_mode)
    except OSError:
        return False


class SourceError(Exception):
    pass


def read_source(path: str) -> str:
    """Decode like Python does (BOM, PEP 263 cookie), with one-line errors. Only a regular file
    is read: one swapped for a FIFO or device after discovery is refused, never blocks."""
    return decode_source(read_source_bytes(path))


def read_source_bytes(path: str) -> bytes:
    from .safe_files import read_regular

    try:
        return read_regular(path)
    except OSError as exc:
        raise SourceError(f"cannot read: {exc.strerror or exc}") from None


def decode_source(data: bytes) -> str:
    if b"\x00" in data:
        line = data[: data.index(b"\x00")].count(b"\n") + 1
        raise SourceError(f"cannot parse: source contains a NUL byte (line {line})")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        raise SourceError(f"cannot decode: {exc.msg}") from None
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        raise SourceError(f"cannot decode as {encoding}: {exc.reason if hasattr(exc, 'reason') else exc}") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return text


def package_of(path: str) -> str:
    """Dotted package of a file, from the __init__.py files above it (for relative imports)."""
    parts = []
    directory = os.path.dirname(os.path.abspath(path))
    while os.path.isfile(os.path.join(directory, "__init__.py")):
        parts.append(os.path.basename(directory))
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    return ".".join(reversed(parts))
