"""Calls with effects outside the graph: I/O, logging, debuggers, clocks, explicit breaks."""

from __future__ import annotations

import libcst as cst

from ..fixes.guards import guard_call, remove_debugger
from .. import torch_facts
from ..dataflow import is_tensor
from .catalog import _is_imported
from ..names import LOG_METHODS
from .base import Example, Rule
from ..dynamo_settings import ignored_logging

GUARD = "guard it with `if not torch.compiler.is_compiling():`"
REORDERABLE = frozenset({"reorderable_logging_functions"})
# Attributes of a tensor or a module that Dynamo reads as constants (a dtype, a flag).
_CONSTANT_ATTRIBUTES = frozenset({"dtype", "device", "training", "requires_grad", "ndim", "is_cuda"})


def reorderable_call(call: cst.Call, ctx, warning: bool) -> bool:
    """Whether a `print()` / `warnings.warn()` registered in reorderable_logging_functions runs
    after the graph, with the same output, instead of breaking it: every argument a constant, a
    string (an f-string of Python values, `"...".format(...)`, `"..." % ...`) or a constant
    attribute (`x.dtype`, `self.training`). Measured on 2.13: those are reordered; a torch.Size
    (`print("x:", x.shape)`), a list, a `file=` stream and a warning category (positional or
    `category=`) are not (GB0296, the break stays). A tensor is reordered too, but printed after
    the graph: a later in-place update shows in it (docs/fix.md), so tcl does not count it."""
    for position, arg in enumerate(call.args):
        if arg.star:
            return False
        keyword = arg.keyword.value if arg.keyword is not None else None
        if warning and (keyword == "category" or (keyword is None and position >= 1)):
            return False
        if not _reorderable_value(arg.value, ctx):
            return False
    return True


def _str_of_python_value(node: cst.BaseExpression, ctx) -> bool:
    """`str(n)` of a value that is not tensor data: a str Dynamo folds to a constant."""
    return isinstance(node, cst.Call) and ctx.qualname(node.func) == "builtins.str" and len(node.args) == 1 \
        and not is_tensor(ctx.kind(node.args[0].value))


def _reorderable_value(node: cst.BaseExpression, ctx, depth: int = 0) -> bool:
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString, cst.Integer, cst.Float)):
        return True
    if isinstance(node, cst.FormattedString):
        return not any(isinstance(part, cst.FormattedStringExpression) and is_tensor(ctx.kind(part.expression))
                       for part in node.parts)
    if isinstance(node, cst.Name):
        if node.value in ("True", "False", "None"):
            return True
        origin = ctx.origins.get(node.value)
        return depth < 3 and origin is not None and origin is not node and _reorderable_value(origin, ctx, depth + 1)
    if isinstance(node, cst.Attribute):
        return node.attr.value in _CONSTANT_ATTRIBUTES
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Modulo):
        return isinstance(node.left, (cst.SimpleString, cst.ConcatenatedString))
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
        # `"input has " + str(x.dim()) + " dims"`: strings joined, each a constant or a str() of one
        return depth < 8 and all(_reorderable_value(side, ctx, depth + 1) or _str_of_python_value(side, ctx)
                                 for side in (node.left, node.right))
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "format":
        return isinstance(node.func.value, (cst.SimpleString, cst.ConcatenatedString))
    return False


class PrintCall(Rule):
    code = "TCL101"
    fixer = staticmethod(guard_call)
    name = "print-in-compiled-region"
    message = "print() inside a compiled region breaks the graph"
    fix = f"{GUARD}, or list print in torch._dynamo.config.reorderable_logging_functions"
    gb = (((2, 0), "GB0059"),)
    removed_by = REORDERABLE
    rationale = (
        "Dynamo cannot put console output into a graph, so it ends the graph before the call, "
        "runs print eagerly and starts a new graph after it. A debug print in forward() splits "
        "every step in two. Registered in torch._dynamo.config.reorderable_logging_functions, "
        "print runs after the graph instead, still once per call, where every argument is a "
        "constant or a string (measured on 2.13; a torch.Size, a list or a `file=` stream still "
        "breaks, GB0296; a tensor is printed after the graph, with any later in-place update: "
        "such calls are reported whatever the setting)."
    )
    VALID = [
        Example('''
import torch

@torch.compile
def fn(x):
    if not torch.compiler.is_compiling():
        print(x)
    return x + 1
'''),
        Example('''
import torch

def report(x):
    print(x.shape)  # not traced: report() is never called from compiled code

@torch.compile
def fn(x):
    return x + 1
'''),
    ]
    INVALID = [
        Example('''
import torch

@torch.compile
def fn(x):
    print("x:", x.shape)  # BREAK
    return x + 1
''', removed_by=()),  # a torch.Size: Dynamo cannot reorder it (GB0296)
        Example('''
import torch

@torch.compile
def fn(x):
    y = x * 2
    print(f"step with batch {x.shape[0]}", y.dtype)  # BREAK
    return y + 1
'''),
        Example('''
import torch
from torch import nn

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        y = self.fc(x)
        print(y)  # BREAK
        return y.relu()
''', entry="Block", removed_by=()),  # a tensor: deferred, it would show later in-place updates
    ]

    def visit_Call(self, node: cst.Call, ctx) -> None:
        qualname = ctx.qualname(node.func)
        if qualname in ("builtins.print", "builtins.input"):
            reorderable = qualname == "builtins.print" and reorderable_call(node, ctx, warning=False)
            ctx.report(self, node, f"{qualname[9:]}() inside a compiled region breaks the graph",
                       removed_by=None if reorderable else frozenset())


class DebuggerCall(Rule):
    code = "TCL102"
    fixer = staticmethod(remove_debugger)
    name = "debugger-in-compiled-region"
    message = "a debugger call inside a compiled region breaks the graph"
    fix = "remove it, or run this code eagerly (torch.compiler.set_stance('force_eager')) while debugging"
    gb = (((2, 0), "GB0059"),)
    rationale = "breakpoint() and pdb.set_trace() need a real Python frame; Dynamo falls back to eager for them."
    VALID = [Example('''
import torch

@torch.compile
def fn(x):
    if torch.jit.is_scripting():
        breakpoint()
    return x * 2
''')]
    INVALID = [Example('''
import torch

@torch.compile
def fn(x):
    y = x * 2
    breakpoint()  # BREAK
    return y
''')]
    DEBUGGERS = {"builtins.breakpoint": "GB0059", "pdb.set_trace": "GB0007", "ipdb.set_trace": "GB0007",
                 "pdb.Pdb": "GB0007"}

    def visit_Call(self, node: cst.Call, ctx) -> None:
        gb = self.DEBUGGERS.get(ctx.qualname(node.func) or "")
        if gb:
            ctx.report(self, node, gb=gb)


class OpenCall(Rule):
    code = "TCL103"
    name = "file-io-in-compiled-region"
    message = "open() inside a compiled region breaks the graph"
    fix = "read or write files outside the compiled function and pass the data in"
    gb = (((2, 0), "GB0059"),)
    alt_gb = ("GB0142",)  # the `with open(...)` block itself
    rationale = "File I/O cannot be traced; Dynamo ends the graph at open()."
    VALID = [Example('''
import torch

CONFIG = {"scale": 2.0}

@torch.compile
def fn(x):
    return x * CONFIG["scale"]
''')]
    INVALID = [Example('''
import os
import tempfile
import torch

PATH = os.path.join(tempfile.gettempdir(), "tcl_example_open.txt")

@torch.compile
def fn(x):
    with open(PATH, "w") as handle:  # BREAK
        handle.write("step")
    return x + 1
''')]

    def visit_Call(self, node: cst.Call, ctx) -> None:
        if ctx.qualname(node.func) in ("builtins.open", "io.open"):
            ctx.report(self, node)


class LoggingCall(Rule):
    code = "TCL104"
    fixer = staticmethod(guard_call)
    name = "logging-in-compiled-region"
    message = "a logging call inside a compiled region breaks the graph"
    fix = (
        f"{GUARD}, or add the logger method to torch._dynamo.config.ignore_logger_methods "
        "(drops the call under compile)"
    )
    gb = (((2, 0), "GB0291"),)
    alt_gb = ("GB4841", "GB6215")  # module-level logging.info(); logging.getLogger() inside
    # One setting per logging function: a method not listed still breaks (dynamo_settings).
    removed_by = frozenset(ignored_logging(f"logging.Logger.{m}") for m in LOG_METHODS) | frozenset(
        ignored_logging(f"logging.{m}") for m in LOG_METHODS if not m.endswith("_once"))
    rationale = (
        "Logger methods are not traceable. Dynamo breaks the graph even when the level is "
        "disabled, so `logger.debug(...)` in forward() costs a graph break on every call. "
        "Listed in torch._dynamo.config.ignore_logger_methods (`logging.Logger.debug`, or a "
        "module-level `logging.info`), the call is a no-op under compile and breaks nothing; "
        "eager runs still log (measured on 2.13, transformers' `warning_once` included)."
    )
    VALID = [Example('''
import logging
import torch

logger = logging.getLogger(__name__)

@torch.compile
def fn(x):
    if not torch.compiler.is_compiling():
        logger.info("step")
    return x + 1
''')]
    INVALID = [
        Example('''
import logging
import torch

logger = logging.getLogger(__name__)

@torch.compile
def fn(x):
    y = x.relu()
    logger.debug("activations ready")  # BREAK
    return y + 1
''', removed_by=(ignored_logging("logging.Logger.debug"),)),
        Example('''
import logging
import torch

@torch.compile
def fn(x):
    logging.info("called")  # BREAK
    return x + 1
''', removed_by=(ignored_logging("logging.info"),)),
    ]

    def visit_Call(self, node: cst.Call, ctx) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in LOG_METHODS:
            return
        qualname = ctx.qualname(func) or ""
        if qualname.startswith("logging.") and qualname.count(".") == 1:
            ctx.report(self, node, gb="GB4841", removed_by=frozenset({ignored_logging(qualname)}))
        elif ctx.is_logger(func.value):
            ctx.report(self, node, removed_by=frozenset({ignored_logging(f"logging.Logger.{func.attr.value}")}))


class WarningsWarn(Rule):
    code = "TCL105"
    fixer = staticmethod(guard_call)
    name = "warnings-in-compiled-region"
    message = "warnings.warn() inside a compiled region breaks the graph"
    fix = f"{GUARD}, warn once outside the compiled region, or list warnings.warn in torch._dynamo.config.reorderable_logging_functions"
    gb = (((2, 0), "GB0007"),)
    removed_by = REORDERABLE
    rationale = (
        "Dynamo skips warnings.warn (it inspects the caller's frame), which ends the graph. "
        "Registered in torch._dynamo.config.reorderable_logging_functions, it runs after the "
        "graph instead and still warns once per call, where the message is a string (an "
        "f-string, format or % of constants included; `stacklevel=` too) and no category is "
        "given (measured on 2.13; with a category, positional or `category=`, the break stays: "
        "GB0296, and such a call is reported whatever the setting)."
    )
    VALID = [Example('''
import warnings
import torch

@torch.compile
def fn(x):
    if not torch.compiler.is_compiling():
        warnings.warn("running eagerly")
    return x + 1
''')]
    INVALID = [Example('''
import warnings
import torch

@torch.compile
def fn(x):
    warnings.warn("deprecated path")  # BREAK
    return x + 1
'''), Example('''
import warnings
import torch

@torch.compile
def fn(x):
    y = x * 2
    warnings.warn(f"input has {x.dim()} dims", stacklevel=2)  # BREAK
    return y + 1
'''), Example('''
import warnings
import torch

@torch.compile
def fn(x):
    y = x * 2
    warnings.warn("input has " + str(x.dim()) + " dims")  # BREAK
    return y + 1
'''), Example('''
import warnings
import torch

@torch.compile
def fn(x):
    y = x * 2
    warnings.warn("old argument", FutureWarning)  # BREAK
    return y + 1
''', removed_by=())]  # a warning category: Dynamo cannot reorder it (GB0296)

    def visit_Call(self, node: cst.Call, ctx) -> None:
        qualname = ctx.qualname(node.func)
        if qualname in ("warnings.warn", "warnings.warn_explicit"):
            reorderable = qualname == "warnings.warn" and reorderable_call(node, ctx, warning=True)
            ctx.report(self, node, removed_by=None if reorderable else frozenset())


class SkippedCall(Rule):
    code = "TCL106"
    name = "untraceable-call"
    message = "{name}() cannot be traced by Dynamo and breaks the graph"
    fix = "call it outside the compiled region and pass the result in as an argument"
    gb = (((2, 0), "GB0007"),)
    # Measured on 2.13: re's pattern objects GB0092, inspect.signature GB0175, torch functions
    # returning Python numbers (torch.initial_seed(), torch.get_num_threads()) GB0208.
    alt_gb = ("GB0092", "GB0175", "GB0208", "GB0008")  # GB0008: a skipped package's function inlined
    rationale = (
        "Dynamo refuses to trace some standard-library and torch functions (clocks, frame "
        "inspection, global RNG seeding, gc, importlib, most of random, re's pattern objects); "
        "each call ends the graph, as does any call into a package Dynamo's trace rules skip "
        "whole (THIRDPARTY_SKIPLIST: tqdm, pandas, sklearn, networkx, ...) or into scipy, and "
        "some Tensor methods that return Python values (`x.is_pinned()`, `x.storage_offset()`, "
        "`x.is_signed()`: GB0208). Which calls break is measured per torch release by "
        "scripts/gen_torch_facts.py (tcl/torch_facts)."
    )
    # For releases without generated facts: calls measured to break (a version spec where it
    # changed). Where tcl/torch_facts has the release, its measured skipped_calls replace this.
    SKIPPED = {
        "time.time": None, "time.perf_counter": None, "time.monotonic": None,
        "time.process_time": None, "time.time_ns": None, "time.perf_counter_ns": None,
        "inspect.currentframe": None, "inspect.stack": None, "sys._getframe": None,
        "torch.manual_seed": None, "torch.seed": None, "torch.cuda.manual_seed": None,
        "torch.cuda.manual_seed_all": None, "random.seed": None,
        "random.random": "<2.14",  # traced since 2.14
    }
    # Whole libraries Dynamo skips: scipy (C extensions behind thin Python wrappers, measured),
    # and, where tcl/torch_facts has the release, the packages of Dynamo's THIRDPARTY_SKIPLIST
    # (skipped_modules: tqdm, pandas, sklearn, networkx, ...).
    SKIPPED_PACKAGES = ("scipy.",)
    VALID = [
        Example('''
import torch

@torch.compile
def fn(x):
    noise = torch.rand_like(x)
    return x + noise * 0
'''),
        # A local value named like a package Dynamo skips (`tree`) is not that package.
        Example('''
import torch

@torch.compile
def fn(x):
    tree = {"scale": 2.0}
    tree.update(offset=1.0)
    return x * tree["scale"] + tree.get("offset")
'''),
        Example('''
import random
import torch

@torch.compile
def fn(x):
    return x * random.random()
''', versions=">=2.14"),
        # Measured (tcl/torch_facts): these are traced on 2.13; the hand list had torch.seed.
        Example('''
import random
import torch

@torch.compile
def fn(x):
    s = torch.seed()
    return x * random.randint(0, 3), s, random.randrange(10)
''', versions=">=2.13,<2.14"),
        Example('''
import os
import torch

@torch.compile
def fn(x):
    name = os.path.join("cache", "x.pt")
    return x * len(name), torch.cuda.is_available()
''', versions=">=2.13,<2.14"),
    ]
    INVALID = [
        Example('''
import time
import torch

@torch.compile
def fn(x):
    start = time.perf_counter()  # BREAK
    y = x @ x
    return y, start
'''),
        Example('''
import torch

@torch.compile
def fn(x):
    torch.manual_seed(0)  # BREAK
    return x + torch.randn_like(x)
'''),
        Example('''
import torch
from torch import nn

@torch.compile
def fn(x, y):
    # a recurrent agent packing its one-step sequences (pfrl's DRQN)
    packed = nn.utils.rnn.pack_sequence([x, y])  # BREAK
    return x * 2, packed
''', args="(torch.randn(3, 4), torch.randn(2, 4))"),
        Example('''
import random
import torch

@torch.compile
def fn(x):
    return x * random.random()  # BREAK
''', versions="<2.14"),
        Example('''
import gc
import torch

@torch.compile
def fn(x):
    gc.collect()  # BREAK
    return x * 2
''', versions=">=2.13,<2.14"),
        Example('''
import importlib
import torch

@torch.compile
def fn(x):
    math = importlib.import_module("math")  # BREAK
    return x * math.pi
''', versions=">=2.13,<2.14"),
        Example('''
import random
import torch

@torch.compile
def fn(x):
    k = random.choice([1, 2])  # BREAK
    return x * k
''', versions=">=2.13,<2.14"),
        Example('''
import threading
import torch

@torch.compile
def fn(x):
    lock = threading.Lock()  # BREAK
    return x * 2
''', versions=">=2.13,<2.14"),
        Example('''
import torch

@torch.compile
def fn(x):
    if torch.backends.cudnn.is_available():  # BREAK
        return x * 2
    return x
''', versions=">=2.13,<2.14"),
        Example('''
import torch

@torch.compile
def fn(x):
    offset = x.storage_offset()  # BREAK
    return x * 2, offset
'''),
        Example('''
import torch
from hypothesis import strategies as st

@torch.compile
def fn(x):
    st.integers(0, 3)  # BREAK (hypothesis: a package Dynamo skips whole, as tqdm or pandas)
    return x * 2
'''),
        Example('''
import torch
from scipy.optimize import linear_sum_assignment

@torch.compile
def fn(cost):
    rows, cols = linear_sum_assignment(cost.numpy())  # BREAK
    return cost.sum(), rows, cols
''', args="torch.rand(3, 3)"),
    ]

    def visit_Call(self, node: cst.Call, ctx) -> None:
        func = node.func
        release = tuple(ctx.version[:2])
        if isinstance(func, cst.Attribute):
            # `x.is_pinned()`, `x.storage_offset()`: measured per release (breaking_tensor_methods);
            # the name is looked up first, so the receiver's kind is asked only for those
            gb = breaking_tensor_methods(release).get(func.attr.value)
            if gb is not None and is_tensor(ctx.kind(func.value)):
                ctx.report(self, node, self.message.format(name=f"Tensor.{func.attr.value}"), gb=gb)
                return
        name = ctx.qualname(node.func) or ""
        gb = self.breaking_calls(release).get(name)
        if gb is not None:
            ctx.report(self, node, self.message.format(name=name.removeprefix("builtins.")), gb=gb)
        elif name.startswith(self.SKIPPED_PACKAGES) or (
                # an imported package, not a local value that shares its name (`tree.update()`)
                _is_imported(func, ctx) and name.split(".", 1)[0] in skipped_modules(release)):
            ctx.report(self, node, self.message.format(name=name))

    @staticmethod
    def owned_elsewhere() -> frozenset[str]:
        """Calls another rule reports with a more precise message (RNG state: TCL412; context
        managers: TCL411): one finding per call."""
        from .catalog import INITIAL_SEED_FUNCTIONS, RNG_STATE_FUNCTIONS
        from .unsupported import UNSUPPORTED_CONTEXT_MANAGERS

        return RNG_STATE_FUNCTIONS | INITIAL_SEED_FUNCTIONS | UNSUPPORTED_CONTEXT_MANAGERS

    @classmethod
    def gb_ids(cls) -> tuple[str, ...]:
        """The rule's own ids and every id the generated facts measured for a call (GB0156 for
        json.dumps, GB0147 for threading.local, ...): what the compiler may report for it."""
        from .. import torch_facts

        measured = [gb for release in torch_facts.available_releases() for gb in cls.breaking_calls(release).values()]
        return tuple(dict.fromkeys([*super().gb_ids(), *measured]))

    @classmethod
    def breaking_calls(cls, release: tuple[int, int]) -> dict[str, str]:
        """{qualname: GB id} of the calls that break on this release: measured on the compiler by
        scripts/gen_torch_facts.py where tcl/torch_facts has the release, else SKIPPED."""
        found = _BREAKING_CALLS.get(release)
        if found is None:
            from .. import torch_facts
            from .base import version_matches

            facts = torch_facts.facts_for(release)
            if facts is not None and facts.release == release and facts.skipped_calls is not None:
                owned = cls.owned_elsewhere()
                found = {name: gb for name, gb in facts.skipped_calls.items() if name not in owned}
            else:
                found = {name: "GB0007" for name, spec in cls.SKIPPED.items() if version_matches(spec, release)}
            _BREAKING_CALLS[release] = found
        return found


_BREAKING_CALLS: dict[tuple[int, int], dict[str, str]] = {}


# Methods another rule reports with its own message: is_inference() is TCL409's.
_METHODS_OWNED_ELSEWHERE = frozenset({"is_inference"})


def breaking_tensor_methods(release: tuple[int, int]) -> dict[str, str]:
    """Tensor method -> GB id of the methods that break on this release (tcl/torch_facts)."""
    from .. import torch_facts

    facts = torch_facts.facts_for(release)
    found = (facts.breaking_tensor_methods or {}) if facts is not None else {}
    return {m: gb for m, gb in found.items() if m not in _METHODS_OWNED_ELSEWHERE}


def skipped_modules(release: tuple[int, int]) -> frozenset[str]:
    """The packages Dynamo skips whole on this release (tcl/torch_facts' skipped_modules)."""
    from .. import torch_facts

    facts = torch_facts.facts_for(release)
    return (facts.skipped_modules or frozenset()) if facts is not None else frozenset()


class ExplicitGraphBreak(Rule):
    code = "TCL107"
    name = "explicit-graph-break"
    message = "torch._dynamo.graph_break() splits the graph here"
    fix = "remove it unless the split is intended"
    gb = (((2, 0), "GB0025"),)
    rationale = "An explicit request to end the graph; reported so it is not left in by accident."
    VALID = [Example('''
import torch

@torch.compile
def fn(x):
    return x.sin().cos()
''')]
    INVALID = [Example('''
import torch

@torch.compile
def fn(x):
    y = x.sin()
    torch._dynamo.graph_break()  # BREAK
    return y.cos()
''')]

    def visit_Call(self, node: cst.Call, ctx) -> None:
        if ctx.qualname(node.func) in ("torch._dynamo.graph_break", "torch.compiler.graph_break"):
            ctx.report(self, node)


class DisabledCall(Rule):
    code = "TCL108"
    name = "call-to-disabled-function"
    message = "call to {name}(), which is decorated with torch.compiler.disable, breaks the graph"
    fix = "move the call out of the compiled region, or make the callee traceable and drop disable"
    gb = (((2, 0), "GB0098"),)
    rationale = (
        "A function marked torch.compiler.disable always runs eagerly; calling it from "
        "compiled code ends the graph before the call and resumes after it."
    )
    VALID = [Example('''
import torch

@torch.compiler.disable
def log_stats(x):
    return float(x.mean())

@torch.compile
def fn(x):
    return x * 2

def train_step(x):
    y = fn(x)
    log_stats(y)  # called from eager code: fine
    return y
''')]
    INVALID = [Example('''
import torch

@torch.compiler.disable
def log_stats(x):
    return float(x.mean())

@torch.compile
def fn(x):
    y = x * 2
    log_stats(y)  # BREAK
    return y + 1
''')]

    def visit_Call(self, node: cst.Call, ctx) -> None:
        callee = ctx.resolve_call(node)
        if callee is not None and callee.is_disabled:
            ctx.report(self, node, self.message.format(name=callee.qualname))
            return
        func = node.func
        if isinstance(func, cst.Call) and ctx.qualname(func.func) in ("torch.compiler.disable", "torch._dynamo.disable"):
            ctx.report(self, node, "call through torch.compiler.disable(...) breaks the graph")


class NumpyRandom(Rule):
    code = "TCL109"
    name = "numpy-random-in-compiled-region"
    message = "{name}() draws from NumPy's global RNG, which Dynamo cannot trace; the graph breaks"
    fix = "use torch's RNG (torch.rand, torch.randint, torch.randperm) on the right device"
    gb = (((2, 0), "GB0033"),)
    alt_gb = ("GB0294",)
    rationale = (
        "Dynamo traces NumPy through torch, arrays included, but a one-value draw "
        "(`np.random.uniform(0, 1)`, `np.random.rand()`) gives a Python number it cannot keep "
        "in the graph, and some functions (`np.random.choice`, `permutation`, `beta`, "
        "`poisson`, ...) it cannot trace at all: those end the graph (and raise under "
        "fullgraph=True). Measured per release (scripts/gen_torch_facts.py, numpy_random): on "
        "2.13 an array draw of rand, randn, random, uniform, normal or randint "
        "(`np.random.randn(n, d)`, `np.random.uniform(0, 1, size)`) stays in the graph, and so "
        "does `np.random.seed(0)`; a function the data does not cover is reported."
    )
    VALID = [Example('''
import torch

@torch.compile
def fn(x):
    keep = torch.rand(()) > 0.5
    return torch.where(keep, x, -x)
'''), Example('''
import numpy as np
import torch

@torch.compile
def fn(x):
    noise = np.random.randn(3)  # an array draw: traced through torch
    return x + torch.from_numpy(noise).float().sum()
''')]
    INVALID = [Example('''
import numpy as np
import torch

@torch.compile
def fn(x):
    p = np.random.uniform(0, 1)  # BREAK
    return x * p
'''), Example('''
import numpy as np
import torch

@torch.compile
def fn(x):
    order = np.random.permutation(2)  # BREAK
    return x[torch.from_numpy(order)]
''')]

    def visit_Call(self, node: cst.Call, ctx) -> None:
        name = ctx.qualname(node.func) or ""
        if not name.startswith("numpy.random."):
            return
        gb = None  # the rule's own id for the release
        measured = torch_facts.measured(ctx.version, "numpy_random").get(name.removeprefix("numpy.random."))
        if measured is not None:
            form = "array" if _draws_array(node, measured.get("size_at", 0)) else "scalar"
            if form not in measured:  # the form the probes do not cover: the other one's answer
                form = "array" if form == "scalar" else "scalar"
            if measured[form] is None:
                return  # measured: this form stays in the graph
            if measured[form] != "error":
                gb = measured[form]
        ctx.report(self, node, self.message.format(name=name.replace("numpy.", "np.", 1)), gb=gb)


def _draws_array(call: cst.Call, size_at: int) -> bool:
    """Whether the call passes a size: `size=`, an argument at the size's position, or (for
    rand/randn, `size_at` -1) any positional argument."""
    positional = [a for a in call.args if a.keyword is None]
    if any(a.keyword is not None and a.keyword.value == "size" for a in call.args):
        return True
    if any(a.star for a in positional):
        return True  # `np.random.rand(*shape)`
    return len(positional) > 0 if size_at < 0 else len(positional) > size_at
