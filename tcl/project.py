"""Facts that cross file boundaries: which classes of the checked tree are nn.Modules.

`class LlamaModel(LlamaPreTrainedModel)` is a module only because `PreTrainedModel`, in another
file, derives from `nn.Module`. A per-file analysis cannot see that, so before analysing, tcl
reads every file's class headers and imports with Python's `ast` (about 1/14 of a libcst parse)
and resolves inheritance over the whole tree, and through the class headers of installed
packages for bases the tree does not define (`class Lit(L.LightningModule)`).
"""

from __future__ import annotations

import ast
import os

from dataclasses import dataclass

from .files import SourceError, package_of, read_source
from .module_index import OPTIMIZER_ROOTS, is_torch_module_base

MODULE_ROOTS = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"})
# OPTIMIZER_ROOTS: `torch.compile(opt.step)` compiles an optimizer's step whole, like a forward.


def module_name_of(path: str) -> str:
    package = package_of(path)
    stem = os.path.splitext(os.path.basename(path))[0]
    if stem == "__init__":
        return package
    return f"{package}.{stem}" if package else stem


class _ClassHeaders(ast.NodeVisitor):
    def __init__(self, module: str, package: str) -> None:
        self.module = module
        self.package = package
        self.aliases: dict[str, str] = {}
        self.classes: dict[str, list[str]] = {}
        self.methods: dict[str, list[str]] = {}

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.asname:
                self.aliases[alias.asname] = alias.name
            else:
                head = alias.name.split(".")[0]
                self.aliases[head] = head

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = node.module or ""
        if node.level:
            parts = self.package.split(".") if self.package else []
            parts = parts[: len(parts) - (node.level - 1)] if node.level - 1 <= len(parts) else []
            base = ".".join(p for p in parts + ([node.module] if node.module else []) if p)
        for alias in node.names:
            if alias.name != "*":
                self.aliases[alias.asname or alias.name] = f"{base}.{alias.name}" if base else alias.name

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        bases = [self._qualify(base) for base in node.bases]
        self.classes[f"{self.module}.{node.name}"] = [b for b in bases if b]
        self.methods[f"{self.module}.{node.name}"] = [
            n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        # nested classes are not module entry points; don't descend

    def visit_FunctionDef(self, node) -> None:
        return

    visit_AsyncFunctionDef = visit_FunctionDef

    def _qualify(self, node: ast.expr) -> str | None:
        if isinstance(node, ast.Subscript):  # a generic base, `Interaction[A, B]`: the class itself
            node = node.value
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        parts.append(node.id)
        head, *rest = reversed(parts)
        if head in self.aliases:
            head = self.aliases[head]
        elif not rest:
            head = f"{self.module}.{head}"  # a class of this module, or a builtin
        return ".".join([head, *rest])


@dataclass(frozen=True)
class ProjectScan:
    """What every file needs to know about the others; small enough to send to workers."""

    known_modules: frozenset[str] = frozenset()  # qualified nn.Module subclasses
    module_paths: tuple[tuple[str, str], ...] = ()  # (dotted module name, path as given)
    known_optimizers: frozenset[str] = frozenset()  # qualified torch.optim.Optimizer subclasses
    # (qualified class, its direct subclasses in the tree): `self.compute_loss()` in a base
    # class's forward runs the override of whichever subclass is compiled
    subclasses: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # (qualified class, the methods its body defines): which subclasses to load for an override
    class_methods: tuple[tuple[str, tuple[str, ...]], ...] = ()


def scan(paths: list[str]) -> ProjectScan:
    module_paths = tuple((module_name_of(p), p) for p in paths if p.endswith(".py"))
    methods: dict[str, list[str]] = {}
    bases = class_bases(paths, methods)
    children: dict[str, list[str]] = {}
    for name, parents in bases.items():
        for parent in parents:
            children.setdefault(parent, []).append(name)
    return ProjectScan(resolve_modules(bases, installed_module_test()), module_paths, resolve_optimizers(bases),
                       tuple(sorted((k, tuple(sorted(v))) for k, v in children.items())),
                       tuple(sorted((k, tuple(v)) for k, v in methods.items() if k in _with_bases(children))))


def _with_bases(children: dict[str, list[str]]) -> set[str]:
    """Classes that are some tree class's subclass: the only ones an override can be in."""
    return {c for kids in children.values() for c in kids}


def module_classes(paths: list[str]) -> frozenset[str]:
    """Qualified names of every class in `paths` that derives, transitively, from nn.Module."""
    return resolve_modules(class_bases(paths))


def class_bases(paths: list[str], methods: dict | None = None) -> dict[str, list[str]]:
    """Qualified class name -> qualified names of its bases, for every class in `paths`
    (`methods`, when given, gets each class's own method names)."""
    bases: dict[str, list[str]] = {}
    for path in paths:
        try:
            source = read_source(path)
        except SourceError:
            continue
        if "class " not in source:
            continue
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue  # reported by the main analysis
        headers = _ClassHeaders(module_name_of(path), package_of(path))
        headers.visit(tree)
        bases.update(headers.classes)
        if methods is not None:
            methods.update(headers.methods)
    return bases


def _descendants(bases: dict[str, list[str]], is_root) -> frozenset[str]:
    """Every class deriving, transitively, from a base for which `is_root` holds."""
    found: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, parents in bases.items():
            if name not in found and any(is_root(p) or p in found for p in parents):
                found.add(name)
                changed = True
    return frozenset(found)


def resolve_modules(bases: dict[str, list[str]], external=None) -> frozenset[str]:
    """`external(name)`: whether a base the tree does not define is an nn.Module (an installed
    package's class, `installed_module_test()`); None: only torch's own classes count."""
    answers: dict[str, bool] = {}

    def is_root(name: str) -> bool:
        if name not in answers:
            answers[name] = name in MODULE_ROOTS or is_torch_module_base(name) or (
                external is not None and name not in bases and not name.startswith("torch.") and external(name))
        return answers[name]

    return _descendants(bases, is_root)


def installed_module_test():
    """The test `name -> bool`: whether an installed package's class is an nn.Module
    (`lightning.LightningModule`, `transformers.PreTrainedModel`), from its class headers
    (tcl.installed.hierarchy)."""
    from .installed import hierarchy

    return hierarchy().is_module_class


def resolve_optimizers(bases: dict[str, list[str]]) -> frozenset[str]:
    return _descendants(bases, lambda p: p in OPTIMIZER_ROOTS)


class Project:
    """Lazily parsed modules of the checked tree, for following calls across files."""

    MAX_LOADED = 256

    def __init__(self, scan_result: ProjectScan, load, installed=None) -> None:
        self.scan = scan_result
        self.installed = installed  # tcl.installed.InstalledPackages with --follow-imports
        self.paths = dict(scan_result.module_paths)
        self.subclasses = {base: list(children) for base, children in scan_result.subclasses}
        self.class_methods = {name: frozenset(names) for name, names in scan_result.class_methods}
        self._load = load  # (path, module name) -> ModuleIndex | None
        self._loaded: dict[str, object] = {}

    def index_of(self, module_name: str):
        path = self.paths.get(module_name)
        if path is None and self.installed is not None:
            path = self.installed.find(module_name)
        if path is None:
            return None
        if module_name not in self._loaded:
            if len(self._loaded) >= self.MAX_LOADED:
                self._loaded.pop(next(iter(self._loaded)))
            self._loaded[module_name] = self._load(path, module_name)
        return self._loaded[module_name]

    def loaded(self, path: str):
        """The index already loaded for the file at `path` (traced code called into it), or None."""
        index = self._loaded.get(module_name_of(path))
        return index if index is not None and index.path == path else None

    def find(self, qualname: str, depth: int = 0):
        """The FunctionInfo or ClassInfo a qualified name denotes in the checked tree, or None.

        Follows re-exports (`from .layers import Block` in a package's __init__) a few levels.
        """
        if depth > 3 or not (self.paths or self.installed):
            return None
        parts = qualname.split(".")
        for split in range(len(parts) - 1, 0, -1):
            index = self.index_of(".".join(parts[:split]))
            if index is None:
                continue
            head, rest = parts[split], parts[split + 1:]
            found = index.functions.get(head) or index.classes.get(head)
            if found is None:
                alias = index.imports.aliases.get(head)
                if alias is None and self.installed is not None and getattr(index, "installed", False):
                    # re-exported through `import *` / a lazy module (tcl.installed.exported)
                    alias = self.installed.exported(".".join(parts[: split + 1]))
                return self.find(".".join([alias, *rest]), depth + 1) if alias else None
            if not rest:
                return found
            if len(rest) == 1 and hasattr(found, "methods"):
                return found.methods.get(rest[0])
            return None
        return None
