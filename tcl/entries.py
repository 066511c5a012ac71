"""Declared and recorded entry points: what the user compiles, named where tcl cannot see it.

tcl finds most entries itself (forwards, `@torch.compile`, `torch.compile(obj.method)` in the
checked code). What it cannot see is named as `module.path:Qual.name` — a function, a class
(compiling an instance runs its `__call__` / `forward`), a method (`Class.method`, looked up
through the class's bases) or a nested def (`make.<locals>.step`) — in three places:
`[tool.tcl] entries = [...]`, `--entry SPEC` on the command line, and the file `pytest
--tcl-record` writes with every callable that went through `torch.compile` while the tests
ran (`.tcl/recorded_entries.json`, read automatically when present), with the classes of the
submodules of each compiled module (their forwards are traced too). The module is looked up
among the checked files (by module name, and by the recorded file's path), then, with
--follow-imports, in the installed packages. A declared entry that names nothing is a one-line
error; a recorded one that has gone stale (the code moved since the recording) is reported the
same way, naming the recording.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass

RECORDED_FORMAT = "tcl-recorded-entries"
DEFAULT_RECORDED = os.path.join(".tcl", "recorded_entries.json")
_SPEC = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_]\w*)*:[A-Za-z_<][\w<>]*(\.[A-Za-z_<][\w<>]*)*$")


class EntryError(Exception):
    """A one-line problem with an entry or with the file that records entries."""


@dataclass(frozen=True)
class EntrySpec:
    module: str
    qualname: str
    origin: str  # where it was named: "--entry", "pyproject.toml", the recording's path
    file: str | None = None  # the defining file, when a recording knows it
    # A recorded function's free variables and globals -> the classes their objects had when it
    # ran (`(("opt", ("torch_optimizer.adamp:AdamP",)),)`): CallResolver reads `opt.step()` as
    # those classes' step (tcl.entry_recording.bindings_of).
    bindings: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # Set for the class of a submodule the recording saw inside a compiled entry (the entry's
    # spec): its forward is traced when the entry calls it, which a container of modules hides
    # from static reading. Such an entry that names nothing here is left out, not an error.
    submodule_of: str | None = None

    @property
    def text(self) -> str:
        return f"{self.module}:{self.qualname}"


def parse(text: str, origin: str, file: str | None = None, bindings=(), submodule_of: str | None = None) -> EntrySpec:
    text = text.strip()
    if not _SPEC.match(text):
        raise EntryError(f"{origin}: entry {text!r}: expected module.path:Name, module.path:Class.method "
                         f"or module.path:func.<locals>.inner")
    module, _, qualname = text.partition(":")
    return EntrySpec(module, qualname, origin, file, tuple(bindings), submodule_of)


def submodule_entries(item: dict, origin: str) -> list[EntrySpec]:
    """The recorded submodule classes of one entry (`"modules": ["pkg.mod:Class", ...]`), each
    an entry of its own (compiling an instance of a class runs its forward); malformed or
    local-class specs are skipped (a hand-edited or older recording without them is fine)."""
    raw = item.get("modules")
    if not isinstance(raw, list):
        return []
    owner = item.get("entry")
    return [parse(spec, origin, None, (), owner) for spec in raw
            if isinstance(spec, str) and _SPEC.match(spec) and "<locals>" not in spec and spec != owner]


def read_recorded(path: str) -> list[EntrySpec]:
    """The entries of a recording `pytest --tcl-record` wrote; EntryError when it is unreadable."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise EntryError(f"{path}: cannot read recorded entries: {' '.join(str(exc).split())}") from None
    if not isinstance(data, dict) or data.get("format") != RECORDED_FORMAT or not isinstance(data.get("entries"), list):
        raise EntryError(f"{path}: not a recording of compiled entries (expected format {RECORDED_FORMAT!r})")
    specs = []
    for item in data["entries"]:
        if not isinstance(item, dict) or not isinstance(item.get("entry"), str):
            raise EntryError(f"{path}: an entry without a spec: {str(item)[:60]}")
        file = item.get("file") if isinstance(item.get("file"), str) else None
        specs.append(parse(item["entry"], path, file, _bindings(item.get("bindings"))))
        specs.extend(submodule_entries(item, path))
    return specs


def _bindings(raw) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """A recording's `{"opt": ["pkg.mod:Class", ...]}`, keeping only well-formed names and specs
    (a hand-edited or older recording without them is fine)."""
    if not isinstance(raw, dict):
        return ()
    out = []
    for name in sorted(raw):
        specs = raw[name]
        if not (isinstance(name, str) and name.isidentifier() and isinstance(specs, list)):
            continue
        kept = tuple(s for s in specs if isinstance(s, str) and _SPEC.match(s) and "<locals>" not in s)
        if kept:
            out.append((name, kept))
    return tuple(out)


def configured(config) -> list[EntrySpec]:
    """Every entry a run starts from besides the ones tcl finds: declared, then recorded."""
    specs = list(config.entries)
    recording = config.recorded_entries
    if recording is None:
        base = config.source.parent if config.source is not None else None
        candidate = os.path.join(str(base), DEFAULT_RECORDED) if base is not None else DEFAULT_RECORDED
        recording = candidate if os.path.isfile(candidate) else None
    if recording:
        specs.extend(read_recorded(recording))
    return list(dict.fromkeys(specs))


def module_file(spec: EntrySpec, module_paths: dict[str, str], installed=None) -> str | None:
    """The file that defines the spec's module: a checked file of that module name, the file a
    recording names when it is a checked file, else (with --follow-imports) an installed one."""
    path = module_paths.get(spec.module)
    if path is not None:
        return path
    if spec.file:
        real = os.path.realpath(spec.file)
        for candidate in module_paths.values():
            if os.path.realpath(candidate) == real:
                return candidate
    if installed is not None:
        return installed.find(spec.module)
    return None


def functions_named(resolver, index, qualname: str):
    """The functions `qualname` denotes in `index` (what compiling it traces), or a one-line
    reason it denotes nothing. `resolver`: a CallResolver over `index` (FileAnalysis)."""
    parts = qualname.split(".")
    head = parts[0]
    current = index.functions.get(head)
    cls = index.classes.get(head) if current is None else None
    if current is None and cls is None:
        alias = index.imports.aliases.get(head)
        found = resolver.project.find(alias) if alias else None
        if found is not None and hasattr(found, "methods"):
            cls = found
        elif found is not None:
            current = found
        else:
            return f"defines no {head}"
    rest = parts[1:]
    if cls is not None:
        if not rest:
            method = resolver.call_method_of(cls)
            return [method] if method is not None else f"class {head} has no forward or __call__ tcl can read"
        current = resolver.bind(resolver.method_of(cls, rest[0]), cls)
        if current is None:
            return f"class {head} has no method {rest[0]}"
        rest = rest[1:]
    while rest:
        if rest[0] != "<locals>" or len(rest) < 2:
            return f"cannot name {'.'.join(rest)} inside {current.qualname} (expected <locals>.name)"
        inner = resolver.nested_def(current, rest[1])
        if inner is None:
            return f"{current.qualname} defines no nested {rest[1]}"
        current, rest = inner, rest[2:]
    return [current]


def problems(analyzer, files: list[str]) -> tuple[list, list[str]]:
    """(one-line errors for entries that name nothing, files of the project the entries live in
    that are not among `files`: they are analysed and reported too)."""
    from .file_analysis import FileAnalysis
    from .findings import FileError
    from .project import module_name_of

    errors: list = []
    config = analyzer.config
    try:
        configured(config)
    except EntryError as exc:
        errors.append(FileError(config.recorded_entries or DEFAULT_RECORDED, 0, str(exc).split(": ", 1)[-1]))
    by_name = dict(analyzer.project.paths)
    for path in files:
        by_name.setdefault(module_name_of(path), path)
    extra: list[str] = []
    known = {os.path.realpath(p) for p in files}
    for spec in analyzer.entry_specs:
        path = module_file(spec, by_name, getattr(analyzer, "installed", None))
        where = spec.origin
        if path is None and spec.submodule_of:
            continue  # a submodule class of an installed package, without --follow-imports
        if path is None:
            scope = "the checked files or the installed packages" if config.follow_imports else "the checked files"
            errors.append(FileError(where, 0, f"entry {spec.text}: no module {spec.module} among {scope}"))
            continue
        index = analyzer.project.index_of(spec.module) if spec.module in analyzer.project.paths else None
        if index is None:
            index = analyzer.load_index(path)
        if index is None:
            continue  # the file's own error is reported when it is checked
        found = functions_named(FileAnalysis(index, analyzer), index, spec.qualname)
        if isinstance(found, str) and spec.submodule_of:
            continue  # a submodule class with no forward of its own to start from
        if isinstance(found, str):
            errors.append(FileError(where, 0, f"entry {spec.text}: {path} {found}"))
        elif os.path.realpath(path) not in known:
            known.add(os.path.realpath(path))
            extra.append(path)
    return errors, extra
