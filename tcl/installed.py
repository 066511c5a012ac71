"""Installed packages, read (never imported) when compiled code calls into them (--follow-imports).

`tcl check train.py --follow-imports` follows calls from the user's compiled code into the
packages of the running environment, as mypy's `follow_imports` does: a dotted module name is
looked up as a file in the environment's site-packages directories (`a/b.py` or
`a/b/__init__.py`) without importing anything, and read with the same parser as checked files.
Which classes of those files are nn.Modules comes from their class headers, read with `ast` on
demand and followed through the packages' own imports and re-exports (`zuko.flows.NSF` ->
`zuko.flows.spline.NSF` -> `MAF` -> `Flow` -> `LazyDistribution` -> `nn.Module`). torch and the
numeric libraries Dynamo handles itself are never followed, nor are the packages Dynamo skips
whole on the targeted release (its THIRDPARTY_SKIPLIST, generated into tcl/torch_facts). A package's version (from its
installed metadata) names its results in the cache, so a second run pays nothing for them.

The class hierarchies are read with or without --follow-imports (`hierarchy()`): a user's
`class Lit(L.LightningModule)` or `class Mine(PreTrainedModel)` is an nn.Module, and its
forward an entry, whether or not calls into lightning or transformers are followed.
"""

from __future__ import annotations

import ast
import os
import re
import site
import sysconfig

from .files import SourceError, read_source
from .module_index import is_torch_module_base

# Dynamo traces these itself (torch) or through its own models of them (numpy): following
# their source would report what the compiler never runs.
NOT_FOLLOWED = frozenset({
    "torch", "functorch", "triton", "numpy", "scipy", "sympy", "typing_extensions", "_pytest", "pytest",
    "setuptools", "pip", "pkg_resources",
})
MODULE_ROOTS = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"})
MAX_DEPTH = 12
# A class or function defined at a module's top level: what `from pkg import *` chains re-export
_TOP_DEFINITION = re.compile(r"^(?:class|def|async def)\s+([A-Za-z_]\w*)", re.MULTILINE)
MAX_EXPORT_FILES = 20_000


def site_directories() -> list[str]:
    """The running environment's site-packages directories (purelib, platlib, user site)."""
    dirs = []
    for name in ("purelib", "platlib"):
        path = sysconfig.get_paths().get(name)
        if path:
            dirs.append(path)
    try:
        dirs.extend(site.getsitepackages())
    except AttributeError:  # pragma: no cover -- virtualenv's old site.py
        pass
    user = site.getusersitepackages() if site.ENABLE_USER_SITE else None
    if user:
        dirs.append(user)
    out = []
    for path in dirs:
        real = os.path.realpath(path)
        if os.path.isdir(real) and real not in out:
            out.append(real)
    return out


_HIERARCHY: dict[tuple[str, ...], "InstalledPackages"] = {}


def hierarchy() -> "InstalledPackages":
    """The running environment's installed packages, for their class hierarchies only: read
    with or without --follow-imports (`class Lit(L.LightningModule)`, `class Mine(PreTrainedModel)`
    are nn.Modules whether or not calls into those packages are followed). One per process and
    set of site directories."""
    directories = tuple(site_directories())
    if directories not in _HIERARCHY:
        _HIERARCHY.clear()
        _HIERARCHY[directories] = InstalledPackages(list(directories))
    return _HIERARCHY[directories]


def environment_fingerprint() -> str:
    """The installed distributions (their `.dist-info` / `.egg-info` names, which carry the
    versions): what the installed class hierarchies a report used were read from. Installing or
    upgrading a package changes it, and the cache starts over (tcl/cache.py)."""
    names = []
    for directory in site_directories():
        try:
            names.extend(n for n in os.listdir(directory) if n.endswith((".dist-info", ".egg-info", ".egg-link", ".pth")))
        except OSError:
            continue
    return "|".join(sorted(names))


class InstalledPackages:
    """Module files and class hierarchies of the installed packages."""

    def __init__(self, directories: list[str] | None = None, skipped: frozenset[str] = frozenset()) -> None:
        self.directories = site_directories() if directories is None else [os.path.realpath(d) for d in directories]
        # The packages the targeted release's Dynamo skips whole (THIRDPARTY_SKIPLIST: tqdm,
        # pandas, ...): it never traces their code, and a call into one is itself the break.
        self.skipped = skipped
        self._files: dict[str, str | None] = {}
        self._headers: dict[str, tuple[dict, dict] | None] = {}
        self._is_module: dict[str, bool] = {}
        self._versions: dict[str, str] = {}
        self._export_index: dict[str, dict[str, list[str]]] = {}

    # -- files -----------------------------------------------------------------------------
    def find(self, module: str) -> str | None:
        """The file of an installed module, or None (not installed, or not followed)."""
        if module in self._files:
            return self._files[module]
        found = None
        parts = module.split(".")
        if parts[0] not in NOT_FOLLOWED and parts[0] not in self.skipped and all(p.isidentifier() for p in parts):
            for directory in self.directories:
                base = os.path.join(directory, *parts)
                for candidate in (base + ".py", os.path.join(base, "__init__.py")):
                    if os.path.isfile(candidate):
                        found = candidate
                        break
                if found:
                    break
        self._files[module] = found
        return found

    def owns(self, path: str) -> bool:
        """Whether `path` lies in one of the site-packages directories."""
        real = os.path.realpath(path)
        return any(real.startswith(d + os.sep) for d in self.directories)

    def short(self, path: str) -> str:
        """`zuko/flows/core.py`: a path as it reads below its site-packages directory."""
        real = os.path.realpath(path)
        for directory in self.directories:
            if real.startswith(directory + os.sep):
                return os.path.relpath(real, directory)
        return path

    def version_of(self, path: str) -> str:
        """`zuko==1.6.0` for a file of an installed package (its distribution's metadata, read
        without importing it); the top-level name alone when no metadata says more."""
        top = self.short(path).split(os.sep)[0].removesuffix(".py")
        if top not in self._versions:
            from importlib import metadata

            version = ""
            try:
                names = metadata.packages_distributions().get(top, [])
                if names:
                    version = f"{names[0]}=={metadata.version(names[0])}"
            except Exception:  # noqa: BLE001 -- broken metadata: fall back to the name
                version = ""
            self._versions[top] = version or top
        return self._versions[top]

    # -- re-exports --------------------------------------------------------------------------
    def exported(self, qualname: str) -> str | None:
        """Where `pkg.Name` is defined when the package re-exports it through lazy or star
        imports tcl's import map does not follow (transformers: `from .models import *` under
        TYPE_CHECKING, `_LazyModule` at run time): the one module of the package whose top
        level defines a class or function of that name, preferring modules below the named
        one. None when no module or several unrelated ones do."""
        module, _, name = qualname.rpartition(".")
        top = module.split(".")[0]
        if not module or top in NOT_FOLLOWED:
            return None
        candidates = self._exports(top).get(name, [])
        below = [m for m in candidates if m == module or m.startswith(module + ".")]
        chosen = below if below else candidates
        if len(chosen) != 1:
            return None
        return f"{chosen[0]}.{name}"

    def _exports(self, top: str) -> dict[str, list[str]]:
        """name -> modules of the installed package `top` defining it at their top level, from
        one text scan of the package's files (no parse), kept per package."""
        if top in self._export_index:
            return self._export_index[top]
        index: dict[str, list[str]] = {}
        root = self.find(top)
        if root is not None and root.endswith("__init__.py"):
            base = os.path.dirname(os.path.dirname(root))
            count = 0
            for directory, dirs, files in os.walk(os.path.dirname(root)):
                dirs[:] = [d for d in dirs if d.isidentifier()]
                for file in files:
                    if not file.endswith(".py") or count > MAX_EXPORT_FILES:
                        continue
                    count += 1
                    path = os.path.join(directory, file)
                    try:
                        text = read_source(path)
                    except SourceError:
                        continue
                    dotted = os.path.relpath(path, base)[:-3].replace(os.sep, ".").removesuffix(".__init__")
                    for name in set(_TOP_DEFINITION.findall(text)):
                        index.setdefault(name, []).append(dotted)
        self._export_index[top] = index
        return index

    # -- class hierarchies -----------------------------------------------------------------
    def is_module_class(self, qualname: str, depth: int = 0) -> bool:
        """Whether an installed class (by qualified name, re-exports allowed) is an nn.Module."""
        if qualname in MODULE_ROOTS or is_torch_module_base(qualname):
            return True
        if qualname in self._is_module:
            return self._is_module[qualname]
        if depth > MAX_DEPTH:
            return False
        self._is_module[qualname] = False  # a cycle of re-exports is no module
        answer = any(self.is_module_class(base, depth + 1) for base in self._bases(qualname, depth))
        self._is_module[qualname] = answer
        return answer

    def _bases(self, qualname: str, depth: int) -> list[str]:
        module, _, name = qualname.rpartition(".")
        while module:
            headers = self._module_headers(module)
            if headers is not None:
                classes, aliases = headers
                if f"{module}.{name}" in classes:
                    return classes[f"{module}.{name}"]
                if name in aliases and aliases[name] != qualname and depth < MAX_DEPTH:
                    return self._bases(aliases[name], depth + 1)
                return []
            # `a.b.C` where `a.b` is no file: perhaps the class `b.C` of module `a`; not followed
            return []
        return []

    def _module_headers(self, module: str):
        if module in self._headers:
            return self._headers[module]
        path = self.find(module)
        headers = None
        if path is not None:
            from .project import _ClassHeaders

            try:
                tree = ast.parse(read_source(path))
            except (SourceError, SyntaxError, ValueError, RecursionError, MemoryError):
                tree = None
            if tree is not None:
                package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
                visitor = _ClassHeaders(module, package)
                visitor.visit(tree)
                headers = (visitor.classes, visitor.aliases)
        self._headers[module] = headers
        return headers
