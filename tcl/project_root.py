"""Which project a checked file belongs to, and which of its files may reach it.

One rule for every entry point (`tcl check FILE...`, pre-commit, flake8 on one file, the
language server): a file's **project root** is the nearest directory at or above it holding a
`pyproject.toml`, a `setup.cfg` or a `.git`. The cross-file facts of a run are those of the
whole project (which classes are nn.Modules, where each module lives), so that checking some
files of a project gives, for those files, the findings a whole-tree run gives. A file with no
marker above it has no project beyond the files checked with it (the language server: its
directory). A helper is reported where it is defined even when only
another file's compiled code calls it; the files that may do so are found cheaply: a file can
only call into module `pkg.helpers` through an import that names `helpers` (or through another
such file), so the candidates are the closure of "has an import statement naming the module's
last name".
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path

from .files import SourceError, read_source
from .project import module_name_of

ROOT_MARKERS = ("pyproject.toml", "setup.cfg", ".git")


def project_root(path: str | os.PathLike) -> str | None:
    """The project root of a file or directory, as an absolute path; None without a marker."""
    start = os.path.abspath(path)
    return _root_of(start if os.path.isdir(start) else os.path.dirname(start))


def forget_roots() -> None:
    """Look at the disk again (a long-lived process: a marker may have appeared since)."""
    _root_of.cache_clear()


@lru_cache(maxsize=4096)
def _root_of(directory: str) -> str | None:
    if any(os.path.exists(os.path.join(directory, marker)) for marker in ROOT_MARKERS):
        return directory
    parent = os.path.dirname(directory)
    return None if parent == directory else _root_of(parent)


def reaching_files(targets: list[str], candidates: list[str], texts: dict[str, str] | None = None) -> list[str]:
    """The files of `candidates` whose compiled code may call into `targets`: those naming a
    target's module, then those naming theirs, and so on. `texts`: sources already read."""
    texts = texts if texts is not None else {}
    wanted = {_last_name(t) for t in targets}
    found: list[str] = []
    remaining = [c for c in candidates if c not in set(targets)]
    while wanted and remaining:
        pattern = re.compile(r"\b(?:%s)\b" % "|".join(sorted(map(re.escape, wanted))))
        wanted = set()
        still = []
        for path in remaining:
            if any(pattern.search(statement) for statement in _imports(_text(path, texts))):
                found.append(path)
                wanted.add(_last_name(path))
            else:
                still.append(path)
        remaining = still
    return found


# `import a.b as c` and `from a.b import (c, d)` statements, at any indentation (lazy imports).
_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+[\w.]+[ \t]+import[ \t]*(?:\([^)]*\)|[^\n]*)|import[ \t]+[^\n]*)",
                     re.MULTILINE)


def _imports(source: str) -> list[str]:
    return _IMPORT.findall(source) if "import" in source else []


def _last_name(path: str) -> str:
    """`helpers` for pkg/helpers.py, `pkg` for pkg/__init__.py: what an import of it names."""
    return module_name_of(path).rpartition(".")[2] or Path(path).stem


def _text(path: str, texts: dict[str, str]) -> str:
    if path not in texts:
        try:
            texts[path] = read_source(path)
        except SourceError:
            texts[path] = ""
    return texts[path]


def note_reach_into(analyzer, path: str, files: list[str], noted: set[str]) -> None:
    """For an analysis of `path`'s text on its own (an editor's buffer): analyse the project's
    files that may call into it (each once: `noted`), so that `analyzer` analyses the helpers
    they reach in `path` as entries, with the arguments those callers pass (Analyzer.note_reached)."""
    from .files import package_of

    for caller in reaching_files([path], files):
        if caller in noted:
            continue
        try:
            source = read_source(caller)
        except SourceError:
            source = None
        if source is not None:
            analyzer.note_reached(analyzer.check_source_with_nodes(source, caller, package_of(caller)))
        noted.add(caller)  # after: an analysis cut short (the editor's budget) is done again
