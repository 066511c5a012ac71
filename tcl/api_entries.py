"""A library's public API as entry points: what its users may compile, found without a forward.

Functional libraries (ODE solvers, losses, metrics, filters, flows) hand their users functions and
methods, not only `nn.Module.forward`s: `torch.compile(lambda y: odeint(f, y, t))`, a compiled
training step that calls `ssim(x, y)` or `flow.log_prob(x)`. Checked alone, such a package has no
entry point and tcl said nothing about it. Here a public function or method of a checked library
file that takes and returns tensor data, and that none of the file's own entries reaches, is an
entry of its own, walked after those (so code they reach keeps what its callers pass):

* public: its name, and its class's, do not start with `_` (`__call__` counts); not a property,
  not `__init__` and the like, not disabled for the compiler; not a module-level function
  written as a method (`def f(self, ...)`, attached to some class at run time);
* takes tensor data, surely: a parameter annotated a tensor, used through an attribute only
  torch.Tensor has (a method of it called: `x.unsqueeze(0)`, not `args.dim`), or passed first to a torch function whose first parameter is a tensor (both
  generated from torch: `shared_attributes`, `tensor_input_calls`). `x.shape`, `x.sum()`,
  `x.to()` fit a numpy array, a module or a path too. Its other parameters hold what the
  signature and the body say, unknown otherwise: nothing is *assumed* a tensor, since nobody said
  this function is compiled;
* returns tensor data, as its walk finds (FileAnalysis._computes_tensors): a function that
  writes a file, runs a training loop or filters a dataset is a utility, and its findings go;
* or, instead of taking and returning tensors, is a method of an nn.Module that writes the
  module's own tensors in place (`updates_tensor_state`: `self.step += 1` on a buffer,
  `self.initted.data.copy_(t)`, `self.memory[i] = x`): an EMA's `update()`, a metric's
  `update(preds, target)`, which a compiled training step calls though they take no tensor or
  return nothing. Its findings say `public API that updates its module's tensors`;
* draws nothing: a function that calls, itself or through what it calls, an image, plotting or
  display library (`cv2`, `PIL`, `matplotlib`, ...: `DRAWING_LIBRARIES`) is visualisation
  (`Results.plot`, `plot_images`), which nobody compiles, however many tensors it takes;
* in library code: not a script (no top-level `if __name__ == "__main__":`), not a test, example,
  benchmark, doc or script file (by path: `tests/`, `test_*.py`, `conftest.py`, `setup.py`, ...);
* in a file that imports torch (`import torch`, `from torch import nn`, ...): numpy's and
  sympy's array and expression methods (`.expand()`, `.reshape()`) look like a tensor's.

A function that another checked file's compiled entries reach is reported from there only
(runner.RunResult.findings). `api-entries` in `[tool.tcl]` / `--api-entries`: `auto` (the
default; the rules above), `off` (only forwards, optimizer steps, compiled and declared entries,
as before), `on` (scripts and test files too). Findings these entries reach say so: `reached
from odeint (public API)`.
"""

from __future__ import annotations

import os

import libcst as cst

from . import torch_facts
from .dataflow import Kind, is_tensor
from .evidence import EVIDENCE_KINDS, _children, torch_only_evidence
from .kinds import SELF
from .module_index import FunctionInfo, ModuleIndex
from .params import _param_kind, body_evidence

API_MARK = " (public API)"
PUBLIC_API = "public API"  # reached_from of an API entry's own findings (Finding.context)
PUBLIC_STATE_API = "public API, updating its module"  # the same for a method updating its module's tensors
# Folders and files whose code is run by developers, not compiled by a library's users.
NOT_LIBRARY_DIRS = frozenset({
    "tests", "test", "testing", "examples", "example", "scripts", "script", "docs", "doc",
    "benchmarks", "benchmark", "bench", "tools", "demo", "demos", "notebooks", "tutorials",
})
NOT_LIBRARY_FILES = frozenset({"setup.py", "conftest.py", "__main__.py", "noxfile.py", "tasks.py"})
# Methods a user does not compile: construction, representation, serialisation.
NOT_API_METHODS = frozenset({
    "__init__", "__new__", "__repr__", "__str__", "__getstate__", "__setstate__", "__init_subclass__",
    "extra_repr", "reset_parameters", "state_dict", "load_state_dict", "__post_init__",
})

# Image, plotting and display libraries: a public function that calls one draws or shows, and
# is not what users compile (Dynamo would break at each such call anyway).
DRAWING_LIBRARIES = frozenset({
    "cv2", "PIL", "matplotlib", "seaborn", "plotly", "bokeh", "imageio", "IPython", "tkinter",
    "pygame", "skimage",
})


def draws(function: FunctionInfo) -> bool:
    """Whether the function's own body calls into one of DRAWING_LIBRARIES."""
    stack = [function.node.body]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Call):
            name = function.index.qualify(node.func) or ""
            if name.split(".", 1)[0] in DRAWING_LIBRARIES:
                return True
        stack.extend(_children(node))
    return False


def is_api_reach(name: str) -> bool:
    """Whether a `reached_from` name stands for a public API entry, not a compiled caller."""
    return name in (PUBLIC_API, PUBLIC_STATE_API) or name.endswith(API_MARK)


def applies(index: ModuleIndex, mode: str) -> bool:
    """Whether the public API of this checked file counts as compiled entries."""
    if mode == "off" or index.installed or index.module is None:
        return False
    if mode == "on":
        return True
    return is_library_file(index.path) and not _has_main_guard(index.module) and imports_torch(index)


def imports_torch(index: ModuleIndex) -> bool:
    """Whether the file imports torch or a part of it. A public function of a file that does not
    is not known to take tensors: numpy's `delete(arr, ...)` and sympy's `limitinf(e, x)` call
    `.expand()` and `.reshape()`, which tensors have too, and were taken for tensor APIs
    (session 40: 157 findings in numpy, scipy and sympy, none of which imports torch there).
    Such a file's functions are still walked from the entries of files that call them."""
    return any(name == "torch" or name.startswith("torch.") for name in index.imports.aliases.values())


def is_library_file(path: str) -> bool:
    """Not a test, example, script, ... by its name or a folder on its way from the directory tcl
    runs in (or from site-packages): `/home/me/tools/proj/lib.py` checked from `proj` is library code."""
    full = os.path.abspath(path)
    try:
        relative = os.path.relpath(full)
    except ValueError:  # another drive
        relative = os.pardir + os.sep
    if relative.startswith(os.pardir + os.sep):
        marker = next((m for m in ("site-packages", "dist-packages") if m in full.split(os.sep)), None)
        relative = full.split(os.sep + marker + os.sep, 1)[-1] if marker else full
    parts = os.path.normpath(relative).split(os.sep)
    name = parts[-1]
    if name in NOT_LIBRARY_FILES or name.startswith("test_") or name.endswith("_test.py"):
        return False
    return not any(part in NOT_LIBRARY_DIRS for part in parts[:-1])


def _has_main_guard(module: cst.Module) -> bool:
    for statement in module.body:
        if isinstance(statement, cst.If) and isinstance(statement.test, cst.Comparison):
            sides = [statement.test.left, *(c.comparator for c in statement.test.comparisons)]
            if any(isinstance(s, cst.Name) and s.value == "__name__" for s in sides):
                return True
    return False


def public_functions(index: ModuleIndex):
    """Public top-level functions and public methods of public classes, in source order. A
    top-level function whose first parameter is `self` is a method some class gets at run time
    (transformers' `grouped_mm_experts_forward(self, ...)`): what its `self` holds is unknown,
    so it is left out."""
    for function in index.functions.values():
        params = list(function.node.params.posonly_params) + list(function.node.params.params)
        if _is_public(function.name) and not (params and params[0].name.value == SELF):
            yield function
    for cls in index.classes.values():
        if cls.name.startswith("_"):
            continue
        for method in cls.methods.values():
            if (_is_public(method.name) or method.name == "__call__") and method.name not in NOT_API_METHODS:
                yield method


def _is_public(name: str) -> bool:
    return not name.startswith("_")


def api_param_kinds(function: FunctionInfo, require_tensor: bool = True) -> dict[str, Kind] | None:
    """The parameters of a public function taken as an entry: a tensor where the annotation or
    the body says so, what the signature says otherwise, unknown by default. None when no
    parameter is surely a tensor (the function is not an entry): an annotation, or a use that
    a numpy array, a module or a path would not survive (`torch_only_evidence`). `x.shape`,
    `x.sum()`, `x.to(...)` and `x @ w` fit those as well: such a parameter stays unknown.
    `require_tensor=False`: the kinds even when no parameter is surely a tensor (a method that
    updates its module's tensors is an entry without one)."""
    params = function.node.params
    positional = list(params.posonly_params) + list(params.params)
    evidence = body_evidence(function)
    sure = torch_only_evidence(function)
    kinds: dict[str, Kind] = {}
    for i, param in enumerate(positional + list(params.kwonly_params)):
        name = param.name.value
        if i == 0 and function.owner is not None and not function.is_staticmethod and name in (SELF, "cls"):
            continue
        kind = _param_kind(param, default_kind=Kind.UNKNOWN)
        what = evidence.get(name)
        if kind == Kind.TENSOR:
            sure.add(name)
        elif name in sure and kind != Kind.META:
            kind = Kind.TENSOR
        elif what in EVIDENCE_KINDS and kind == Kind.UNKNOWN:
            kind = EVIDENCE_KINDS[what]
        kinds[name] = kind
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            kinds[star.name.value] = Kind.UNKNOWN
    if require_tensor and not any(is_tensor(kinds.get(name, Kind.UNKNOWN)) for name in sure):
        return None
    return kinds


def api_entries(index: ModuleIndex, mode: str, reached) -> list[tuple[FunctionInfo, dict[str, Kind], bool]]:
    """(function, parameter kinds, whether it updates its module's tensors in place) for each
    public function of `index` that takes tensor data, or is a method of an nn.Module that
    updates the module's own tensors in place (`updates_tensor_state`), and is not in `reached`
    (ids of the nodes of the functions the file's own entries walk)."""
    if not applies(index, mode):
        return []
    out = []
    for function in public_functions(index):
        if id(function.node) in reached or function.is_property or function.is_disabled:
            continue
        updates = updates_tensor_state(function)
        kinds = api_param_kinds(function, require_tensor=not updates)
        if kinds is not None:
            out.append((function, kinds, updates))
    return out


def tensor_state(cls) -> frozenset[str]:
    """The attributes of an nn.Module class that hold its own tensors: the names it gives
    register_buffer / register_parameter, and `self.x = nn.Parameter(...)`."""
    names = set(cls.buffers)
    for attr, value in cls.attributes.items():
        if isinstance(value, cst.Call) and cls.index is not None \
                and (cls.index.qualify(value.func) or "") in ("torch.nn.Parameter", "torch.nn.parameter.Parameter"):
            names.add(attr)
    return frozenset(names)


# In-place tensor methods that set a flag, not the values: `self.weights.requires_grad_(False)`
# in timm's reset_classifier (model surgery, not a compiled step's update).
FLAG_METHODS = frozenset({"requires_grad_", "share_memory_"})


def updates_tensor_state(function: FunctionInfo) -> bool:
    """Whether a method of an nn.Module writes into the module's own tensors in place, in its
    body: `self.step += 1` or `self.memory[i] = x` on a buffer or parameter, or an in-place
    tensor method on one (`self.initted.data.copy_(t)`, `self.count.add_(n)`; not one that
    sets a flag, FLAG_METHODS). Such a method (an EMA's `update()`, a metric's `update(preds,
    target)`, a queue's `enqueue(x)`) is what a compiled training step calls, though it takes
    no tensor and returns nothing. The buffers are the class's own (`tensor_state`), not a
    base class's."""
    owner = function.owner
    if owner is None or not owner.is_module or function.is_staticmethod or function.name.startswith("__"):
        return False
    state = tensor_state(owner)
    if not state:
        return False
    facts = torch_facts.all_releases()
    methods = facts.tensor_methods if facts is not None else frozenset()

    def on_state(expr) -> bool:  # `self.x`, `self.x[i]`, `self.x.data`, rooted at a tensor of self
        while isinstance(expr, (cst.Subscript, cst.Attribute)):
            if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == SELF:
                return expr.attr.value in state
            expr = expr.value
        return False

    stack: list[cst.CSTNode] = [function.node.body]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            continue  # a nested def runs when something calls it
        if isinstance(node, cst.AugAssign) and on_state(node.target):
            return True
        if isinstance(node, cst.Assign) and any(
                isinstance(t.target, cst.Subscript) and on_state(t.target) for t in node.targets):
            return True
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            name = node.func.attr.value
            if name.endswith("_") and not name.endswith("__") and name in methods \
                    and name not in FLAG_METHODS and on_state(node.func.value):
                return True
        stack.extend(_children(node))
    return False
