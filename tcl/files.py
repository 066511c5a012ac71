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
    """gitignore-style patterns: `name`, `dir/`, `*.py`, `path/to/**`, matched from the root.
    With `respect_gitignore`, also what the git repository a path lies in ignores (GitIgnore)."""

    def __init__(self, patterns: list[str], root: str, respect_gitignore: bool = False) -> None:
        self.patterns = [p.strip() for p in patterns if p.strip() and not p.strip().startswith("#")]
        self.root = os.path.abspath(root)
        self.respect_gitignore = respect_gitignore
        self._repositories: dict[str, GitIgnore | None] = {}  # directory -> its repository's rules

    def excluded(self, path: str, is_dir: bool) -> bool:
        try:
            relative = PurePosixPath(os.path.relpath(os.path.abspath(path), self.root).replace(os.sep, "/"))
        except ValueError:  # another drive on Windows
            relative = PurePosixPath(path)
        if _matches_any(self.patterns, relative, is_dir):
            return True
        if self.respect_gitignore:
            rules = self._repository_of(os.path.dirname(os.path.abspath(path)))
            return rules is not None and rules.ignored(path, is_dir)
        return False

    def _repository_of(self, directory: str) -> "GitIgnore | None":
        if directory not in self._repositories:
            parent = os.path.dirname(directory)
            if os.path.exists(os.path.join(directory, ".git")):
                self._repositories[directory] = GitIgnore(directory)
            elif parent == directory:
                self._repositories[directory] = None
            else:
                self._repositories[directory] = self._repository_of(parent)
        return self._repositories[directory]


def _matches(pattern: str, relative: PurePosixPath, is_dir: bool) -> bool:
    dir_only = pattern.endswith("/")
    pattern = pattern.rstrip("/")
    if dir_only and not is_dir:
        return False
    if pattern.startswith("**/") and "/" not in pattern[3:]:
        return fnmatch.fnmatchcase(relative.name, pattern[3:])  # `**/name`: at any depth
    if "/" in pattern:
        # Anchored at the root (`/build`, `docs/_build`); `dir/**` excludes the directory
        # itself, so it is pruned.
        pattern = pattern.lstrip("/")
        if pattern.endswith("/**"):
            pattern = pattern[:-3]
        return fnmatch.fnmatchcase(str(relative), pattern)
    return fnmatch.fnmatchcase(relative.name, pattern)


def _matches_any(patterns: list[str], relative: PurePosixPath, is_dir: bool) -> bool:
    return any(_matches(pattern, relative, is_dir) for pattern in patterns)


class GitIgnore:
    """What a git repository ignores, read from its top-level `.gitignore` and
    `.git/info/exclude` (never by running git): gitignore patterns matched from the repository
    root, the last matching pattern winning, `!pattern` re-including. Nested `.gitignore`
    files and the user's global excludes file are not read. A file named on the command line
    is checked whatever these say; they only prune what a directory walk visits."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.rules: list[tuple[bool, str]] = []  # (negated, pattern), in file order
        for name in (".gitignore", os.path.join(".git", "info", "exclude")):
            try:
                with open(os.path.join(root, name), encoding="utf-8", errors="replace") as handle:
                    lines = handle.read().splitlines()
            except OSError:
                continue
            for line in lines:
                line = line.rstrip()
                if not line or line.startswith("#"):
                    continue
                negated = line.startswith("!")
                pattern = line[1:] if negated else line
                if pattern.startswith("\\"):
                    pattern = pattern[1:]
                if pattern:
                    self.rules.append((negated, pattern))

    def ignored(self, path: str, is_dir: bool) -> bool:
        relative = os.path.relpath(os.path.abspath(path), self.root)
        if relative.startswith(".."):
            return False
        relative_path = PurePosixPath(relative.replace(os.sep, "/"))
        ignored = False
        for negated, pattern in self.rules:
            if _matches(pattern, relative_path, is_dir):
                ignored = not negated
        return ignored


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
