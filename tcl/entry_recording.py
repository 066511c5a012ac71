"""Recording the callables that go through `torch.compile` ("recorded entries"), so that `tcl check`
can start its analysis exactly where the user's code is compiled: `entry_of` names a callable as
an entry spec `module.path:Qual.name` (an `nn.Module` by its class, a bound method by its
instance's class and the method's name, a function by its qualname, a `functools.partial` by what
it wraps, any other callable object by its class's `__call__`), or says in one line why it cannot
be named; `CompileRecorder` (`record_entries(path)`) replaces `torch.compile` while it is active
with a wrapper that records `entry_of(model)` for every call, the decorator forms included
(`@torch.compile`, `@torch.compile(fullgraph=True)`), then calls the original with the same
arguments, and on exit puts the original back and writes `{"format": "tcl-recorded-entries", ...}`
atomically (a temporary file created with O_CREAT|O_EXCL|O_NOFOLLOW, then os.replace);
`merge_entry_files` joins the parts pytest-xdist workers write. Recording never makes a compile
call fail (whatever goes wrong while naming the callable becomes a problem entry), every module's
entries are recorded, installed packages' too, and only the standard library is imported here:
torch is imported when recording starts. Not seen: code that bound the function before recording
started (`from torch import compile`, `compile = torch.compile`), `torch._dynamo.optimize`, and
calls made in processes forked from the recording one (their records stay in the child).
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import stat
import sys
import threading

ENTRIES_FORMAT = "tcl-recorded-entries"
ENTRIES_VERSION = 1
MAX_TESTS = 5  # test ids kept per entry or problem
_MAX_UNWRAP = 20  # partials of partials, compiled modules of compiled modules
MAX_BINDINGS = 32  # free-variable names kept per entry
MAX_CLASSES_PER_NAME = 8  # classes one name held across the calls
MAX_MODULE_CLASSES = 64  # submodule classes kept per entry
_READ_LIMIT = 64 << 20

# --------------------------------------------------------------------------- naming a callable


class _Named:
    __slots__ = ("spec", "file", "line", "what")

    def __init__(self, spec: str, file: str | None, line: int | None, what: str) -> None:
        self.spec, self.file, self.line, self.what = spec, file, line, what


class _Problem:
    __slots__ = ("what", "why")

    def __init__(self, what: str, why: str) -> None:
        self.what, self.why = what, why


def entry_of(target) -> tuple[str, str | None, int | None] | str:
    """(spec, source file, first line) of a callable handed to torch.compile, or one line saying
    why it cannot be named. The file is the real path of the function's or class's source (None
    when unknown: built in, made by exec); the line is the first line of its definition, its
    first decorator included, as `inspect` counts it."""
    named = describe(target)
    return named.why if isinstance(named, _Problem) else (named.spec, named.file, named.line)


def bindings_of(target) -> dict[str, str]:
    """The classes of the objects a compiled *function* reaches through its free variables
    (closure cells) and the module globals its code names, as `{name: "module:Qual"}`: a
    training step's `opt.step()` / `model(x)` / `loss_fn(...)` then resolves to exactly the
    classes that ran, which a closure over `opt = make(params)` never says statically. Only
    instances of importable classes count: no modules, functions, classes, tensors or builtin
    values (int, list, dict, ...). Empty for modules and methods (their `self` is the entry)."""
    values = _free_values(_innermost(target))
    out: dict[str, str] = {}
    for name in sorted(values):
        spec = _instance_spec(values[name])
        if spec is not None and len(out) < MAX_BINDINGS:
            out[name] = spec
    return out


def _free_values(function) -> dict[str, object]:
    """What a function's closure cells and the module globals its code names hold, by name
    (a closure cell wins over a global of the same name); empty for anything but a function."""
    if not inspect.isfunction(function):
        return {}
    function = _unwrapped(function)
    code = getattr(function, "__code__", None)
    if code is None:
        return {}
    values: dict[str, object] = {}
    for name, cell in zip(code.co_freevars, function.__closure__ or ()):
        try:
            values[name] = cell.cell_contents
        except ValueError:  # an empty cell: the name was never bound
            continue
    namespace = getattr(function, "__globals__", {})
    for name in _global_names(code):
        if name not in values and name in namespace:
            values[name] = namespace[name]
    return values


def module_classes_of(target) -> list[str]:
    """The classes of the nn.Modules inside what is compiled, as `["module:Qual", ...]`: the
    module itself, a bound method's module, the modules a function's free variables and globals
    hold, and every submodule of each (`model.modules()`). Dynamo traces the forward of every
    submodule the compiled code calls, including those a container holds that no static
    reading resolves (`for func in self._transforms: func(x)`); tcl starts from each class's
    forward. torch's own classes are left out (nothing to follow there)."""
    target = _innermost(target)
    roots = []
    if _is_module(target):
        roots.append(target)
    elif inspect.ismethod(target) and _is_module(target.__self__):
        roots.append(target.__self__)
    else:
        roots.extend(value for value in _free_values(target).values() if _is_module(value))
    out: list[str] = []
    for root in roots:
        for module in root.modules():
            spec = _instance_spec(module)
            if spec is not None and spec not in out:
                out.append(spec)
                if len(out) >= MAX_MODULE_CLASSES:
                    return out
    return out


def _global_names(code) -> list[str]:
    """Names a code object (and the code nested in it: lambdas, inner defs) may read as globals."""
    names, stack, seen = [], [code], set()
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        names.extend(n for n in current.co_names if n not in names)
        stack.extend(c for c in current.co_consts if hasattr(c, "co_names"))
    return names


_PLAIN_TYPES = (int, float, complex, bool, str, bytes, list, tuple, dict, set, frozenset, type(None))


def _instance_spec(value) -> str | None:
    if isinstance(value, _PLAIN_TYPES) or isinstance(value, type) or inspect.ismodule(value) \
            or inspect.isroutine(value) or isinstance(value, functools.partial):
        return None
    cls = type(value)
    module, qualname = getattr(cls, "__module__", None), getattr(cls, "__qualname__", None)
    if not isinstance(module, str) or module == "builtins" or module == "torch" or module.startswith("torch."):
        return None  # torch's own classes (tensors, devices, dtypes): nothing tcl follows
    if _unnamable(module, qualname):
        return None
    return f"{module}:{qualname}"


def describe(target) -> _Named | _Problem:
    """entry_of, with the kind of entry ("module", "method", "function" or "callable"), or what
    could not be named (partials and compiled modules unwrapped) and why."""
    named = _describe(target)
    if isinstance(named, str):
        inner = _innermost(target)
        return _Problem(_short(type(inner) if _is_module(inner) else inner), named)
    return named


def _innermost(target):
    for _ in range(_MAX_UNWRAP):
        if isinstance(target, functools.partial):
            target = target.func
        elif _is_module(target) and type(target).__name__ == "OptimizedModule" \
                and _is_module(getattr(target, "_orig_mod", None)):
            target = target._orig_mod
        else:
            break
    return target


def _is_module(obj) -> bool:
    module = _module_class()
    return module is not None and isinstance(obj, module)


def _describe(target) -> _Named | str:
    target = _innermost(target)
    if isinstance(target, functools.partial) or type(target).__name__ == "OptimizedModule":
        return f"`{_short(target)}` wraps itself more than {_MAX_UNWRAP} times (partials or compiled modules)"
    if _is_module(target):
        return _named_class(type(target), "module")
    if inspect.ismethod(target):
        return _method(target)
    if isinstance(target, type):
        return (f"`{_short(target)}` is a class: torch.compile would compile its construction; "
                "compile an instance or declare the entry with --entry")
    if inspect.isbuiltin(target) or type(target).__name__ in ("method-wrapper", "wrapper_descriptor",
                                                              "method_descriptor"):
        return f"`{_short(target)}` is built in: it has no Python source to start from"
    if inspect.isfunction(target):
        return _function(target)
    if not callable(target):
        return f"`{_short(target)}` is not callable"
    cls = type(target)
    problem = _unnamable(cls.__module__, cls.__qualname__)
    if problem:
        return problem
    call = _unwrapped(getattr(cls, "__call__", None))
    file, line = _source_of(call) if inspect.isfunction(call) else (None, None)
    return _Named(f"{cls.__module__}:{cls.__qualname__}.__call__", file, line, "callable")


def _module_class():
    """torch.nn.Module once torch is imported (nothing can be a module before), else None."""
    nn = sys.modules.get("torch.nn")
    return getattr(nn, "Module", None) if nn is not None else None


def _named_class(cls: type, what: str) -> _Named | str:
    problem = _unnamable(cls.__module__, cls.__qualname__)
    if problem:
        return problem
    file, line = _source_of(cls)
    return _Named(f"{cls.__module__}:{cls.__qualname__}", file, line, what)


def _method(method) -> _Named | str:
    owner = method.__self__
    function = method.__func__
    cls = owner if isinstance(owner, type) else type(owner)  # a classmethod: bound to the class
    module = _module_class()
    if module is not None and isinstance(owner, module) and _is_module_call(module, function):
        return _named_class(cls, "module")  # module.compile() compiles self._call_impl
    name = _attribute_name(cls, function)
    if name is None:
        return f"`{_short(cls)}` has no attribute holding the method `{_short(function)}`"
    problem = _unnamable(cls.__module__, cls.__qualname__)
    if problem:
        return problem
    file, line = _source_of(_unwrapped(function))
    return _Named(f"{cls.__module__}:{cls.__qualname__}.{name}", file, line, "method")


def _is_module_call(module: type, function) -> bool:
    return any(function is getattr(module, name, None) for name in ("__call__", "_call_impl", "_wrapped_call_impl"))


def _attribute_name(cls: type, function) -> str | None:
    """The name under which `cls` (through its MRO) holds `function`: its __name__ as a rule, the
    alias for `forward = _forward_impl` style assignments."""
    name = getattr(function, "__name__", None)
    if isinstance(name, str) and _holds(cls, name, function):
        return name
    for klass in cls.__mro__:
        for attr, value in vars(klass).items():
            if _same_function(value, function) and _holds(cls, attr, function):
                return attr
    return name if isinstance(name, str) and name.isidentifier() else None


def _holds(cls: type, name: str, function) -> bool:
    for klass in cls.__mro__:
        if name in vars(klass):
            return _same_function(vars(klass)[name], function)
    return False


def _same_function(value, function) -> bool:
    if isinstance(value, (classmethod, staticmethod)):
        value = value.__func__
    return value is function


def _function(function) -> _Named | str:
    module = getattr(function, "__module__", None)
    qualname = getattr(function, "__qualname__", None)
    problem = _unnamable(module, qualname, nested_ok=True)
    if problem:
        return problem
    file, line = _source_of(_unwrapped(function))
    return _Named(f"{module}:{qualname}", file, line, "function")


def _unnamable(module, qualname, nested_ok: bool = False) -> str | None:
    """Why `module:qualname` cannot be an entry, or None. `nested_ok`: a def nested in a
    function (`make.<locals>.step`) is named as such; tcl resolves it in its enclosing def.
    A class defined in a function is not: its methods cannot be named statically."""
    if not isinstance(qualname, str) or not qualname:
        return f"`{module}:?` has no qualified name"
    if not isinstance(module, str) or not module:
        return f"`{qualname}` has no module"
    if qualname.rsplit(".", 1)[-1] == "<lambda>":
        return f"`{qualname}` is a lambda, which has no name to start from: declare its caller with --entry"
    parts = qualname.split(".")
    if "<locals>" in parts and not (nested_ok and parts[0].isidentifier() and parts[-1].isidentifier()
                                    and all(p.isidentifier() or p == "<locals>" for p in parts)):
        return f"`{qualname}` is defined inside a function: declare its caller with --entry"
    if any(p != "<locals>" and not p.isidentifier() for p in parts):
        return f"`{qualname}` is not an importable name: declare its caller with --entry"
    return None


def _unwrapped(function):
    """What functools.wraps'd wrappers (a torch.compile'd function among them) wrap."""
    try:
        return inspect.unwrap(function)
    except Exception:  # noqa: BLE001 -- a __wrapped__ cycle or a proxy that raises
        return function


def _source_of(obj) -> tuple[str | None, int | None]:
    try:
        file = inspect.getsourcefile(obj)
    except Exception:  # noqa: BLE001 -- built in, made by exec, a proxy that raises
        return None, None
    if not file or not os.path.exists(file):
        return None, None
    file = os.path.realpath(file)
    line = None
    code = getattr(obj, "__code__", None)
    if code is not None:
        line = code.co_firstlineno
    else:
        try:
            line = inspect.getsourcelines(obj)[1]
        except Exception:  # noqa: BLE001 -- source gone or not parsable: the file alone
            line = None
    return file, line


def _short(obj) -> str:
    """`module:qualname` where the object has them, else its type's, as a problem's name."""
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    if not isinstance(qualname, str):
        module, qualname = type(obj).__module__, f"{type(obj).__qualname__} instance"
    text = f"{module}:{qualname}" if isinstance(module, str) and module else qualname
    return _one_line(text)[:200]


def _one_line(text) -> str:
    return " ".join(str(text).split())


# --------------------------------------------------------------------------- the recorder


class CompileRecorder:
    """While started, `torch.compile` records what it is given. `path` None records in memory only
    (`index()` then gives the document). `roots` is accepted for symmetry with tcl.recording's
    Recorder but filters nothing: every entry is recorded, wherever it is defined. Use it as a
    context manager (`record_entries`) or with start() / finish()."""

    def __init__(self, path: str | os.PathLike | None, roots: list[str] | None = None) -> None:
        self.path = os.path.abspath(os.fspath(path)) if path is not None else None
        self.roots = list(roots or [])
        self.current_test: str | None = None
        self.entries: dict[str, dict] = {}
        self.problems: dict[tuple[str, str], dict] = {}
        self.active = False
        self.torch_version: str | None = None
        self._lock = threading.RLock()
        self._inside = threading.local()  # set while a wrapped decorator calls the original
        self._original = None
        self._wrapper = None
        self._classes: dict[type, object] = {}  # module class -> its description (parsing a class's file once)

    # -- patching ---------------------------------------------------------------------------
    def start(self) -> CompileRecorder:
        import torch

        if self.active:
            return self
        self.torch_version = str(torch.__version__)
        original = torch.compile
        recorder = self

        @functools.wraps(original)
        def compile(*args, **kwargs):  # noqa: A001 -- torch.compile's own name, for reprs and tracebacks
            if recorder.active and not getattr(recorder._inside, "depth", 0):
                model = args[0] if args else kwargs.get("model")
                if model is None:
                    return recorder._decorator(original(*args, **kwargs))
                recorder.record(model)
            return original(*args, **kwargs)

        self._original, self._wrapper = original, compile
        torch.compile = compile
        self.active = True
        return self

    def stop(self) -> None:
        """Put the original torch.compile back (idempotent). A torch.compile someone replaced
        on top of the wrapper meanwhile is left as it is; the wrapper then only passes calls on."""
        if not self.active:
            return
        self.active = False
        torch = sys.modules.get("torch")
        if torch is not None and getattr(torch, "compile", None) is self._wrapper:
            torch.compile = self._original

    def _decorator(self, decorator):
        """torch.compile(fullgraph=True) gave `decorator`: the same, recording what it is given."""
        try:
            recorder = self

            @functools.wraps(decorator)
            def compile_decorator(model, *args, **kwargs):
                if recorder.active:
                    recorder.record(model)
                inside = recorder._inside
                inside.depth = getattr(inside, "depth", 0) + 1  # its torch.compile(model) is not a second record
                try:
                    return decorator(model, *args, **kwargs)
                finally:
                    inside.depth -= 1

            return compile_decorator
        except Exception:  # noqa: BLE001 -- recording never changes what torch.compile does
            return decorator

    # -- recording --------------------------------------------------------------------------
    def record(self, target) -> None:
        """Record one callable handed to torch.compile. Never raises."""
        try:
            named = self._describe(target)
            test = self.current_test
            with self._lock:
                if isinstance(named, _Problem):
                    key = (named.what, named.why)
                    item = self.problems.setdefault(key, {"what": named.what, "why": named.why, "tests": []})
                else:
                    item = self.entries.get(named.spec)
                    if item is None:
                        item = self.entries[named.spec] = {"entry": named.spec, "file": named.file,
                                                           "line": named.line, "what": named.what,
                                                           "count": 0, "tests": []}
                    bindings = bindings_of(target) if named.what == "function" else {}
                    if bindings:  # every class a name held across the calls: one may differ per test
                        kept = item.setdefault("bindings", {})
                        for name, spec in bindings.items():
                            specs = kept.setdefault(name, [])
                            if spec not in specs and len(specs) < MAX_CLASSES_PER_NAME:
                                specs.append(spec)
                    classes = module_classes_of(target)
                    if classes:
                        _join_classes(item.setdefault("modules", []), classes)
                    item["count"] += 1
                if test and test not in item["tests"] and len(item["tests"]) < MAX_TESTS:
                    item["tests"].append(test)
        except Exception as exc:  # noqa: BLE001 -- the compile call goes on whatever happens here
            try:
                try:
                    what = _short(target)
                except Exception:  # noqa: BLE001
                    what = type(target).__qualname__
                why = _one_line(f"tcl could not name it: {type(exc).__name__}: {exc}")[:300]
                test = self.current_test
                with self._lock:
                    item = self.problems.setdefault((what, why), {"what": what, "why": why, "tests": []})
                    if test and test not in item["tests"] and len(item["tests"]) < MAX_TESTS:
                        item["tests"].append(test)
            except Exception:  # noqa: BLE001
                pass

    def _describe(self, target):
        target = _innermost(target)
        if _is_module(target):
            cls = type(target)
            with self._lock:
                if cls not in self._classes:
                    self._classes[cls] = describe(target)
                return self._classes[cls]
        return describe(target)

    # -- the file -----------------------------------------------------------------------------
    def index(self) -> dict:
        with self._lock:
            entries = []
            for entry in self.entries.values():
                copy = dict(entry, tests=list(entry["tests"]))
                if "bindings" in entry:
                    copy["bindings"] = {name: list(specs) for name, specs in entry["bindings"].items()}
                if "modules" in entry:
                    copy["modules"] = list(entry["modules"])
                entries.append(copy)
            problems = [dict(p, tests=list(p["tests"])) for p in self.problems.values()]
        return _document(self.torch_version, entries, problems)

    def finish(self) -> dict:
        """Stop, write the file (when there is a path) and return what it holds."""
        self.stop()
        index = self.index()
        if self.path is not None:
            write_entry_file(self.path, index)
        return index

    def __enter__(self) -> CompileRecorder:
        return self.start()

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            self.finish()
        except Exception:
            if exc_type is None:
                raise
            # The block's own exception is the one to see; what was recorded is lost.
        finally:
            self.stop()


def record_entries(path: str | os.PathLike | None, roots: list[str] | None = None) -> CompileRecorder:
    """`with record_entries(".tcl/recorded_entries.json"): ...` records every torch.compile call
    of the block and writes the file when it ends (an exception included)."""
    return CompileRecorder(path, roots)


def _document(torch_version, entries: list[dict], problems: list[dict]) -> dict:
    return {"format": ENTRIES_FORMAT, "version": ENTRIES_VERSION, "torch": torch_version,
            "entries": sorted(entries, key=lambda e: e["entry"]),
            "problems": sorted(problems, key=lambda p: (p["what"], p["why"]))}


def write_entry_file(path: str | os.PathLike, index: dict) -> None:
    """Write `index` as JSON at `path`: a new temporary file beside it (O_CREAT|O_EXCL|O_NOFOLLOW,
    so nothing planted at that name is written through), then os.replace (a link at `path` is
    replaced, not followed). A regular temporary file a killed session left is removed first."""
    from .safe_files import Refused, describe_mode, open_new

    path = os.path.abspath(os.fspath(path))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    temp = f"{path}.{os.getpid()}.tmp"
    try:
        mode = os.lstat(temp).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None:
        if not stat.S_ISREG(mode):
            raise Refused(f"{temp} is {describe_mode(mode)}: not writing through it")
        os.unlink(temp)
    try:
        handle = open_new(temp, "w")
    except FileExistsError:  # something appeared there since
        raise Refused(f"{temp} appeared while writing the recorded entries: not writing through it") from None
    try:
        with handle:
            json.dump(index, handle, indent=2)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise


def read_entry_file(path: str | os.PathLike) -> dict:
    """The document at `path`; ValueError when it is not a recorded-entries file of this version."""
    from .safe_files import read_regular

    try:
        data = json.loads(read_regular(path, limit=_READ_LIMIT).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a recorded-entries file ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != ENTRIES_FORMAT:
        raise ValueError(f"{path}: not a recorded-entries file (format is not {ENTRIES_FORMAT!r})")
    if data.get("version") != ENTRIES_VERSION:
        raise ValueError(f"{path}: recorded-entries version {data.get('version')!r}, this tcl reads {ENTRIES_VERSION}")
    if not isinstance(data.get("entries"), list) or not isinstance(data.get("problems"), list):
        raise ValueError(f"{path}: recorded-entries file without entries or problems lists")
    return data


def merge_entry_files(paths: list[str | os.PathLike], out: str | os.PathLike) -> dict:
    """Join pytest-xdist workers' parts into `out`: the union of their entries (counts added, test
    ids joined up to MAX_TESTS, file and line from the first part that has the entry) and of their
    problems. The parts are left in place. Returns what was written."""
    entries: dict[str, dict] = {}
    problems: dict[tuple[str, str], dict] = {}
    version = None
    for path in paths:
        part = read_entry_file(path)
        version = version or part.get("torch")
        for entry in part["entries"]:
            kept = entries.setdefault(entry["entry"], dict(entry, count=0, tests=[], bindings={}, modules=[]))
            kept["count"] += int(entry.get("count", 0))
            _join_tests(kept["tests"], entry.get("tests", []))
            bindings = entry.get("bindings")
            if isinstance(bindings, dict):
                for name, specs in bindings.items():
                    joined = kept["bindings"].setdefault(name, [])
                    for spec in specs if isinstance(specs, list) else ():
                        if isinstance(spec, str) and spec not in joined and len(joined) < MAX_CLASSES_PER_NAME:
                            joined.append(spec)
            modules = entry.get("modules")
            if isinstance(modules, list):
                _join_classes(kept["modules"], [m for m in modules if isinstance(m, str)])
        for problem in part["problems"]:
            key = (problem["what"], problem["why"])
            kept = problems.setdefault(key, dict(problem, tests=[]))
            _join_tests(kept["tests"], problem.get("tests", []))
    for kept in entries.values():
        for key in ("bindings", "modules"):
            if not kept.get(key):
                kept.pop(key, None)
    index = _document(version, list(entries.values()), list(problems.values()))
    write_entry_file(out, index)
    return index


def _join_classes(kept: list, more) -> None:
    for spec in more:
        if spec not in kept and len(kept) < MAX_MODULE_CLASSES:
            kept.append(spec)


def _join_tests(kept: list, more) -> None:
    for test in more:
        if test not in kept and len(kept) < MAX_TESTS:
            kept.append(test)
