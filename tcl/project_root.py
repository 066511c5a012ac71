"""Which project a checked file belongs to, and which of its files may reach it.

One rule for every entry point (`tcl check FILE...`, pre-commit, flake8 on one file, the
language server): a file's **project root** is the nearest directory at or above it holding a
`pyproject.toml`, a `setup.cfg` or a `.git`; a file with none above it is its own directory's.
The cross-file facts of a run are those of the whole project (which classes are nn.Modules,
where each module lives), so that checking some files of a project gives, for those files,
the findings a whole-tree run gives. A helper is reported where it is defined even when only
another file's compiled code calls it; the files that may do so are found cheaply: a file can
only call into module `pkg.helpers` through an import that names `helpers` (or through another
such file), so the candidates are the closure of "mentions the module's last name as a word".
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from .files import SourceError, read_source
from .project import module_name_of

ROOT_MARKERS = ("pyproject.toml", "setup.cfg", ".git")


def project_root(path: str | os.PathLike) -> str:
    """The project root of a file or directory (see the module docstring)."""
    start = Path(os.path.abspath(path))
    directory = start if start.is_dir() else start.parent
    for candidate in (directory, *directory.parents):
        if any((candidate / marker).exists() for marker in ROOT_MARKERS):
            return str(candidate)
    return str(directory)


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
            if pattern.search(_text(path, texts)):
                found.append(path)
                wanted.add(_last_name(path))
            else:
                still.append(path)
        remaining = still
    return found


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
