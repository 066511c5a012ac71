"""Recording the first real call of each project nn.Module class (`pytest --tcl-record`).

The pytest plugin (plugins/tcl_pytest.py) starts a Recorder for the test session; `tcl verify
--replay` reads what it writes. How the hooks work and what is saved is described in the
plugin's docstring. Only the standard library is imported at module level: torch is imported
when recording starts.
"""

from __future__ import annotations

import os
import sys

RECORDING_FORMAT = "tcl-recorded-inputs"
RECORDING_VERSION = 1
NOT_PROJECT_DIRS = {"site-packages", "dist-packages", ".venv", "venv", ".tox", ".nox", "node_modules",
                     "__pycache__", "build", "dist", ".git"}


def under(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def project_file(path: str, roots: list[str]) -> bool:
    """Whether `path` (real) is the project's own code: under one of `roots`, and not in a
    virtual environment, build output or installed package below it."""
    root = next((r for r in roots if under(path, r)), None)
    if root is None:
        return False
    parts = os.path.relpath(path, root).split(os.sep)[:-1]
    if any(p in NOT_PROJECT_DIRS or p.endswith(".egg-info") for p in parts):
        return False
    for prefix in {sys.prefix, sys.base_prefix, sys.exec_prefix}:
        prefix = os.path.realpath(prefix)
        if prefix != root and under(prefix, root) and under(path, prefix):
            return False  # an environment inside the project, whatever its name
    return True


def one_line(text: str) -> str:
    return " ".join(str(text).split())


class Pending:
    __slots__ = ("module_id", "frame", "payload", "kwargs_known", "signature")

    def __init__(self, module_id, frame, payload, kwargs_known, signature) -> None:
        self.module_id = module_id
        self.frame = frame
        self.payload = payload
        self.kwargs_known = kwargs_known
        self.signature = signature


class Recorder:
    """The global module hooks and the zip file they write to."""

    def __init__(self, path: str, roots: list[str], rootdir: str) -> None:
        import threading

        self.path = path
        self.roots = roots
        self.rootdir = rootdir
        self.pid = os.getpid()
        self.lock = threading.RLock()
        self.current_test: str | None = None
        self.classes: dict[type, dict | None] = {}  # class -> its description, None: not the project's
        self.done: set[type] = set()
        self.failed: set[type] = set()
        self.pending: dict[type, Pending] = {}
        self.records: list[dict] = []
        self.problems: list[dict] = []
        self.handles: list = []
        self.archive = None
        self.temp = f"{path}.{self.pid}.tmp"
        self.temp_file = None
        self.busy = False

    def start(self) -> None:
        import zipfile

        import torch
        from torch.nn.modules import module as nn_module

        self.torch = torch
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        self.temp_file = _new_temp(self.temp)
        self.archive = zipfile.ZipFile(self.temp_file, "w", compression=zipfile.ZIP_STORED, allowZip64=True)
        is_compiling = torch.compiler.is_compiling
        recorder = self

        # Plain functions whose first statement Dynamo folds to a constant when it traces a
        # module call: nothing of the recorder enters a user's graph.
        def before(module, args):
            if is_compiling():
                return None
            recorder.before(module, args, sys._getframe(1))
            return None

        def after(module, args, kwargs, output):
            if is_compiling():
                return None
            recorder.after(module, kwargs, sys._getframe(1))
            return None

        self.handles = [nn_module.register_module_forward_pre_hook(before),
                        nn_module.register_module_forward_hook(after, with_kwargs=True)]

    # -- the hooks -------------------------------------------------------------------------
    def _target(self, module):
        inner = getattr(module, "_orig_mod", None)
        if inner is not None and type(module).__name__ == "OptimizedModule":
            return inner
        return module

    def before(self, module, args, frame) -> None:
        if self.busy or os.getpid() != self.pid:
            return
        target = self._target(module)
        cls = type(target)
        if cls in self.done or cls in self.failed or self.classes.get(cls, True) is None:
            return  # every call of every module pays for this hook: the common case stays short
        self.busy = True
        try:
            with self.lock:
                description = self._describe(cls)
                if description is None or cls in self.done or cls in self.failed:
                    return
                pending = self.pending.get(cls)
                if pending is not None and _is_ancestor(pending.frame, frame):
                    return  # a call of the same class inside its first call
                kwargs = _call_kwargs(frame, module)
                if not _real_inputs(self.torch, target, args, kwargs or {}):
                    return
                payload = self._serialize({"module": target, "args": _detached(self.torch, tuple(args)),
                                           "kwargs": _detached(self.torch, dict(kwargs or {}))})
                self.pending[cls] = Pending(id(module), frame, payload, kwargs is not None,
                                             _signature(self.torch, args, kwargs or {}))
        except Exception as exc:  # noqa: BLE001 -- recording must never break the test
            self._fail(cls, exc)
        finally:
            self.busy = False

    def after(self, module, kwargs, frame) -> None:
        if self.busy or os.getpid() != self.pid:
            return
        cls = type(self._target(module))
        pending = self.pending.get(cls)
        if pending is None or pending.module_id != id(module) or pending.frame is not frame:
            return
        self.busy = True
        try:
            with self.lock:
                del self.pending[cls]
                payload = pending.payload
                signature = pending.signature
                if not pending.kwargs_known:
                    # torch did not show the keyword arguments before the call: take them now.
                    payload = self._serialize({"module_args": payload,
                                               "kwargs": _detached(self.torch, dict(kwargs or {}))})
                    signature = _signature(self.torch, (), kwargs or {}, prefix=signature)
                entry = f"records/{len(self.records)}.pt"
                self.archive.writestr(entry, payload)
                self.records.append(dict(self.classes[cls], entry=entry, signature=signature,
                                         test=self.current_test or "(collection)"))
                self.done.add(cls)
        except Exception as exc:  # noqa: BLE001
            self._fail(cls, exc)
        finally:
            self.busy = False

    # -- helpers ---------------------------------------------------------------------------
    def _serialize(self, obj) -> bytes:
        import io

        buffer = io.BytesIO()
        self.torch.save(obj, buffer)
        return buffer.getvalue()

    def _fail(self, cls, exc: BaseException) -> None:
        with self.lock:
            self.failed.add(cls)
            self.pending.pop(cls, None)
            name = f"{cls.__module__}.{cls.__qualname__}"
            self.problems.append({"class": name, "test": self.current_test or "(collection)",
                                  "error": one_line(f"{type(exc).__name__}: {exc}")[:300]})

    def _describe(self, cls) -> dict | None:
        if cls in self.classes:
            return self.classes[cls]
        description = None
        module = sys.modules.get(cls.__module__)
        file = getattr(module, "__file__", None)
        if isinstance(file, str) and file.endswith(".py") and os.path.isabs(file):
            path = os.path.realpath(file)
            if project_file(path, self.roots):
                if "<locals>" in cls.__qualname__:
                    self.classes[cls] = None
                    self._fail(cls, TypeError("defined inside a function: pickle cannot import it, "
                                              "define it at module level to record it"))
                    return None
                forward = getattr(cls, "forward", None)
                code = getattr(forward, "__code__", None)
                description = {"class": f"{cls.__module__}.{cls.__qualname__}", "module": cls.__module__,
                               "qualname": cls.__qualname__, "file": path,
                               "relative": os.path.relpath(path, self.rootdir),
                               "forward_line": code.co_firstlineno if code else None}
        self.classes[cls] = description
        return description


    def unhook(self) -> None:
        for handle in self.handles:
            handle.remove()
        self.handles = []

    def finish(self) -> dict:
        self.unhook()
        with self.lock:
            index = _index(self.records, self.problems, self.rootdir, self.torch.__version__)
            _write_index(self.archive, index)
            self.archive.close()
            self.temp_file.close()
            os.replace(self.temp, self.path)
        return index


def _new_temp(temp: str):
    """The recording's temporary file, created new and never through a link (the recording may
    live in a checked-out tree, where a link could be planted at this predictable name). One that
    a killed session left as a regular file is replaced."""
    import stat

    from .safe_files import open_new

    try:
        if stat.S_ISREG(os.lstat(temp).st_mode):
            os.unlink(temp)
    except FileNotFoundError:
        pass
    return open_new(temp, "wb")


def _index(records, problems, rootdir, torch_version) -> dict:
    return {"format": RECORDING_FORMAT, "version": RECORDING_VERSION, "torch": torch_version,
            "rootdir": rootdir, "records": records, "problems": problems}


def _write_index(archive, index: dict) -> None:
    import json

    archive.writestr("index.json", json.dumps(index, indent=2))


def merge_parts(path: str, parts: list[str], rootdir: str) -> dict | None:
    """The controller's recording: each class's record from the first worker part that has it."""
    import json
    import zipfile

    if not parts:
        return None
    records, problems, seen, version = [], [], set(), None
    temp = f"{path}.{os.getpid()}.tmp"
    with _new_temp(temp) as temp_file, zipfile.ZipFile(temp_file, "w", compression=zipfile.ZIP_STORED,
                                                       allowZip64=True) as out:
        for part in parts:
            with zipfile.ZipFile(part) as archive:
                index = json.loads(archive.read("index.json"))
                version = version or index.get("torch")
                for record in index["records"]:
                    if record["class"] in seen:
                        continue
                    seen.add(record["class"])
                    entry = f"records/{len(records)}.pt"
                    out.writestr(entry, archive.read(record["entry"]))
                    records.append(dict(record, entry=entry))
                problems.extend(p for p in index["problems"] if p["class"] not in seen)
        problems = [p for p in problems if p["class"] not in seen]
        index = _index(records, problems, rootdir, version)
        _write_index(out, index)
    os.replace(temp, path)
    for part in parts:
        os.remove(part)
    return index


def _is_ancestor(frame, current) -> bool:
    while current is not None:
        if current is frame:
            return True
        current = current.f_back
    return False


def _call_kwargs(frame, module):
    """The keyword arguments of the module call whose pre-hooks run now, or None if unknown.

    torch calls global pre-hooks from the `inner` closure of `Module._call_impl`, which holds the
    call's `self` and `kwargs`; the check on `self` makes sure it is this very call."""
    try:
        local = frame.f_locals
    except Exception:  # noqa: BLE001
        return None
    kwargs = local.get("kwargs")
    if local.get("self") is module and isinstance(kwargs, dict):
        return kwargs
    return None


def _real_inputs(torch, module, args, kwargs) -> bool:
    """False for calls on placeholders: meta or fake tensors, functorch transforms."""
    from torch.utils._pytree import tree_leaves

    is_wrapped = getattr(torch._C._functorch, "is_functorch_wrapped_tensor", lambda t: False)
    tensors = [t for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
    tensors += list(module.parameters()) + list(module.buffers())
    for t in tensors:
        if t.device.type == "meta" or type(t).__name__ == "FakeTensor" or is_wrapped(t):
            return False
    return True


def _detached(torch, tree):
    from torch.utils._pytree import tree_map_only

    def detach(t):
        copy = t.detach()
        if t.requires_grad:
            copy.requires_grad_(True)
        return copy

    return tree_map_only(torch.Tensor, detach, tree)


def _signature(torch, args, kwargs, prefix: str = "") -> str:
    """`Tensor[2, 4] float32, 3, scale=2.0`: what the call got, for the summary."""
    def show(value) -> str:
        if isinstance(value, torch.Tensor):
            dtype = str(value.dtype).replace("torch.", "")
            return f"Tensor{list(value.shape)} {dtype}"
        if isinstance(value, (list, tuple)) and len(value) <= 4:
            inner = ", ".join(show(v) for v in value)
            return f"[{inner}]" if isinstance(value, list) else f"({inner}{',' if len(value) == 1 else ''})"
        text = repr(value) if isinstance(value, (int, float, bool, str, type(None))) else type(value).__name__
        return text if len(text) <= 40 else text[:37] + "..."

    parts = ([prefix] if prefix else []) + [show(a) for a in args] + [f"{k}={show(v)}" for k, v in kwargs.items()]
    return ", ".join(parts)
