"""Objects and operations Dynamo cannot put in a graph."""

from __future__ import annotations

import libcst as cst

from ..dataflow import Kind, is_tensor
from ..names import dotted
from .base import Example, Rule
from .catalog import holds
from .recompiles import live_nodes


class TensorToString(Rule):
    code = "TCL401"
    explains_value = True
    name = "tensor-to-string"
    message = "{name}() of a tensor reads its data and breaks the graph"
    fix = "format shapes or dtypes instead of values, or move the formatting out of the compiled region"
    gb = (((2, 0), "GB0059"), ((2, 14), "GB0569"))
    rationale = "Turning a tensor into text needs its values; Dynamo cannot trace Tensor.__str__/__repr__."
    VALID = [Example('''
import torch

@torch.compile
def fn(x):
    tag = str(x.ndim) + repr(x.dtype)
    return x + len(tag)
''')]
    INVALID = [Example('''
import torch

@torch.compile
def fn(x):
    text = str(x)  # BREAK
    return x + len(text)
''')]

    def visit_Call(self, node: cst.Call, ctx) -> None:
        name = ctx.qualname(node.func)
        if name in ("builtins.str", "builtins.repr") and len(node.args) == 1:
            if is_tensor(ctx.kind(node.args[0].value)):
                ctx.report(self, node, self.message.format(name=name[9:]))


class TensorFormatting(Rule):
    code = "TCL402"
    explains_value = True
    name = "tensor-in-format-string"
    message = "formatting a tensor into a string breaks the graph where the string is used"
    resumes = False  # measured on 2.13: the rest of the frame runs eagerly
    fix = "format shapes or dtypes instead of values, or move the formatting out of the compiled region"
    gb = (((2, 0), "GB0088"),)
    runtime_line_offset = 1
    rationale = (
        "An f-string or str.format() of a tensor is accepted while tracing, but the first use of "
        "the resulting string breaks the graph. An unused string costs nothing."
    )
    VALID = [Example('''
import torch

@torch.compile
def fn(x):
    name = f"shape={tuple(x.shape)} dtype={x.dtype}"
    return x + len(name)
''')]
    VALID.append(Example('''
import torch

@torch.compile
def fn(x, kind):
    # an attribute name: eager raises unless `kind` is a str, whatever tcl infers for it
    return getattr(torch, "{}_like".format(kind))(x)
''', args='(torch.randn(4), "zeros")'))
    INVALID = [Example('''
import torch

@torch.compile
def fn(x):
    text = f"value={x}"  # BREAK
    return x + len(text)
''')]
    # Calls that already report their own break (print, logging) or only run on an error path.
    IGNORED_CONSUMERS = (cst.Raise, cst.Assert)
    # An attribute name: eager raises a TypeError unless the formatted value is a str, so a
    # value judged tensor data there was judged wrongly (pytorch-metric-learning's
    # `getattr(self, "{}_reduction".format(reduction_type))`).
    NAME_CONSUMERS = frozenset({"builtins.getattr", "builtins.hasattr", "builtins.setattr", "builtins.delattr"})

    def visit_FormattedString(self, node: cst.FormattedString, ctx) -> None:
        if not any(
            isinstance(part, cst.FormattedStringExpression) and is_tensor(ctx.kind(part.expression))
            for part in node.parts
        ):
            return
        if self._used(ctx):
            ctx.report(self, node)

    def visit_Call(self, node: cst.Call, ctx) -> None:
        func = node.func
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value == "format"
            and isinstance(func.value, (cst.SimpleString, cst.ConcatenatedString))
            and any(is_tensor(ctx.kind(arg.value)) for arg in node.args)
            and self._used(ctx)
        ):
            ctx.report(self, node)

    def _used(self, ctx) -> bool:
        """Bound to a name or passed on, and not only into a call that breaks anyway or a raise."""
        parent = ctx.parent()
        if isinstance(parent, cst.Expr):
            return False
        depth = 1
        while parent is not None and not isinstance(parent, cst.BaseStatement):
            if isinstance(parent, self.IGNORED_CONSUMERS):
                return False
            if isinstance(parent, cst.Call) and (_breaks_anyway(parent, ctx)
                                                 or ctx.qualname(parent.func) in self.NAME_CONSUMERS):
                return False
            depth += 1
            parent = ctx.parent(depth)
        return True


def _breaks_anyway(call: cst.Call, ctx) -> bool:
    name = ctx.qualname(call.func) or ""
    if name in ("builtins.print", "warnings.warn") or name.startswith("logging."):
        return True
    func = call.func
    return isinstance(func, cst.Attribute) and ctx.is_logger(func.value)


class DeepCopy(Rule):
    code = "TCL403"
    name = "deepcopy-in-compiled-region"
    message = "copy.deepcopy() of a tensor or module breaks the graph"
    fix = "use t.clone() for tensors; copy modules outside the compiled region"
    gb = (((2, 0), "GB4198"),)
    rationale = "Dynamo cannot trace deepcopy of tensors or modules (it walks __deepcopy__ and memo dicts)."
    VALID = [Example('''
import copy
import torch

@torch.compile
def fn(x):
    sizes = copy.deepcopy([1, 2])
    return x.clone() * len(sizes)
''')]
    INVALID = [Example('''
import copy
import torch

@torch.compile
def fn(x):
    y = copy.deepcopy(x)  # BREAK
    return y + 1
''')]

    def visit_Call(self, node: cst.Call, ctx) -> None:
        if ctx.qualname(node.func) == "copy.deepcopy" and node.args:
            value = node.args[0].value
            kind = ctx.kind(value)
            # `copy.deepcopy(self.student)`: state held on a module is modules and tensors far
            # more often than plain Python data, even when its origin is out of sight.
            name = dotted(value) or ""
            configuration = any(word in name.lower() for word in ("config", "cfg", "args", "opts", "options"))
            on_self = kind == Kind.UNKNOWN and name.startswith("self.") and not configuration
            if kind in (Kind.TENSOR, Kind.BOOL_TENSOR, Kind.MODULE) or on_self:
                ctx.report(self, node)


class AutogradCall(Rule):
    code = "TCL404"
    name = "backward-in-compiled-region"
    message = "{what} inside a compiled region breaks the graph"
    fix = (
        "compile the forward and loss only and call .backward() outside (AOTAutograd compiles "
        "the backward anyway), or enable compiled autograd"
    )
    gb = (((2, 0), "GB0123"),)
    alt_gb = ("GB9186",)
    rationale = "Dynamo traces the forward; .backward() and torch.autograd.grad() cannot be part of the graph."
    VALID = [Example('''
import torch


class _Kernels:  # stands for a compiled extension module: its backward is a kernel, not autograd
    @staticmethod
    def backward(grad):
        return grad * 2


_C = _Kernels()


@torch.compile
def fn(x):
    return _C.backward(x)
'''), Example('''
import torch

@torch.compile
def loss_fn(x):
    return (x * 2).pow(2).mean()

def fn(x):
    x = x.requires_grad_()
    loss = loss_fn(x)
    loss.backward()  # outside the compiled function
    return x.grad
''', entry="loss_fn")]
    INVALID = [
        Example('''
import torch

@torch.compile
def fn(x):
    loss = (x * 2).sum()
    loss.backward()  # BREAK
    return loss
''', args="torch.randn(4, 4, requires_grad=True)"),
        Example('''
import torch

@torch.compile
def fn(x):
    y = (x * x).sum()
    (grad,) = torch.autograd.grad(y, x)  # BREAK
    return grad
''', args="torch.randn(4, 4, requires_grad=True)"),
    ]

    def visit_Call(self, node: cst.Call, ctx) -> None:
        name = ctx.qualname(node.func)
        if name == "torch.autograd.grad":
            ctx.report(self, node, self.message.format(what="torch.autograd.grad()"), gb="GB9186")
            return
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "backward":
            receiver = ctx.kind(func.value)
            if receiver in (Kind.META, Kind.MODULE) or _is_self_or_cls(func.value) or \
                    (not is_tensor(receiver) and _global_name(func.value, ctx)):
                return
            ctx.report(self, node, self.message.format(what=".backward()"))


def _global_name(node: cst.BaseExpression, ctx) -> bool:
    """`_C.backward(...)`: a module-level name (an imported extension module, a global) that the
    function neither binds nor takes as a parameter; its `.backward` is no tensor's."""
    return isinstance(node, cst.Name) and node.value not in ctx.assigned and not ctx.is_parameter(node.value)


def _is_self_or_cls(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value in ("self", "cls", "ctx", "super")


# torch.nn layers that create nn.Parameters in __init__ (measured on 2.13: GB0264 when built
# in compiled code); `affine=False` / `elementwise_affine=False` turn them off.
PARAMETER_LAYERS = frozenset(
    f"torch.nn.{name}" for name in (
        "Linear", "Bilinear", "LazyLinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d",
        "ConvTranspose2d", "ConvTranspose3d", "Embedding", "EmbeddingBag", "LayerNorm", "RMSNorm",
        "GroupNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "MultiheadAttention", "PReLU",
        "LSTM", "GRU", "RNN", "LSTMCell", "GRUCell", "RNNCell",
    )
)
AFFINE_SWITCHES = ("affine", "elementwise_affine")
PARAMETER_CALLS = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})
BUFFER_CALLS = frozenset({"torch.nn.Buffer", "torch.nn.parameter.Buffer"})


class ParameterInForward(Rule):
    code = "TCL405"
    name = "parameter-created-in-compiled-region"
    message = "{what} inside a compiled region breaks the graph"
    fix = (
        "create parameters, buffers and layers in __init__ (build loss modules once, outside the "
        "compiled function) and set requires_grad outside the compiled region"
    )
    gb = (((2, 0), "GB0264"),)
    alt_gb = ("GB8985", "GB0206", "GB0116", "GB0119")
    rationale = (
        "Creating parameters or flipping requires_grad changes autograd state Dynamo has already "
        "guarded on. Building a module inside compiled code does the same: `nn.Linear(...)` or a "
        "module of the checked code whose `__init__` makes an `nn.Parameter` or `nn.Buffer` breaks "
        "at that line, and again at its `super().__init__()` (GB0119, the module is not yet "
        "initialised when Dynamo resumes). Any nn.Module built where Dynamo runs the compiled "
        "call eagerly (after a break in a loop, or in such an __init__) has its `__init__` "
        "compiled as a frame of its own, which breaks at `super().__init__()` with GB0119 "
        "whether or not it makes parameters (measured on 2.13, tests/test_guard_facts.py)."
    )
    VALID = [Example('''
import torch
from torch import nn

class Scale(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(4))

    def forward(self, x):
        return x * self.weight
''', entry="Scale"), Example('''
import torch
from torch import nn

class Counter(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.n = n
        self.register_buffer("seen", torch.zeros(n))

@torch.compile
def fn(x):
    counter = Counter(3)
    drop = nn.Dropout(0.1)
    norm = nn.LayerNorm(4, elementwise_affine=False)
    return norm(drop(x)) + counter.n + counter.seen.sum()
'''), Example('''
import torch

def rand_angles(n, requires_grad=False):
    # every traced caller leaves requires_grad False: requires_grad_(False) is traced
    alpha = torch.rand(n).detach().requires_grad_(requires_grad)
    return alpha.cos().requires_grad_(False)

@torch.compile
def fn(x):
    return x * rand_angles(4)
''')]
    INVALID = [
        Example('''
import torch
from torch import nn

class Scale(nn.Module):
    def forward(self, x):
        weight = nn.Parameter(torch.ones(x.shape[-1]))  # BREAK
        return x * weight
''', entry="Scale"),
        Example('''
import torch

@torch.compile
def fn(x):
    y = x * 2
    y.requires_grad_()  # BREAK
    return y
'''),
        Example('''
import torch

@torch.compile
def fn(x):
    y = x * 2
    y.requires_grad = True  # BREAK
    return y
'''),
        Example('''
import torch
from torch import nn

@torch.compile
def fn(x):
    proj = nn.Linear(4, 4)  # BREAK
    return proj(x)
'''),
        Example('''
import torch
from torch import nn

class WeightedLoss(nn.Module):
    def __init__(self, num_classes, eos_coef):
        super().__init__()  # BREAK
        weight = torch.ones(num_classes + 1)
        weight[-1] = eos_coef
        self.weight = nn.Buffer(weight)  # BREAK

@torch.compile
def fn(x):
    criterion = WeightedLoss(3, 0.1)
    return x + criterion.weight.sum()
'''),
    ]

    def visit_Assign(self, node: cst.Assign, ctx) -> None:
        for target in node.targets:
            target = target.target
            if isinstance(target, cst.Attribute) and target.attr.value == "requires_grad" and is_tensor(ctx.kind(target.value)):
                ctx.report(self, target, self.message.format(what="setting .requires_grad"), gb="GB0206")

    def visit_Call(self, node: cst.Call, ctx) -> None:
        name = ctx.qualname(node.func)
        if name in PARAMETER_CALLS:
            ctx.report(self, node, self.message.format(what="nn.Parameter(...)"))
            return
        if name in BUFFER_CALLS:
            ctx.report(self, node, self.message.format(what="nn.Buffer(...)"), gb="GB0116")
            return
        if _owns_parameters(node, name):
            ctx.report(self, node, self.message.format(what=f"building {name.replace('torch.nn.', 'nn.')}(...)"))
            return
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "requires_grad_":
            flag = node.args[0].value if node.args else None
            if flag is not None and ctx.literal(flag) == (True, False):
                return  # measured on 2.13: requires_grad_(False) is traced, no break
            if is_tensor(ctx.kind(func.value)):
                ctx.report(self, node, self.message.format(what=".requires_grad_()"), gb="GB8985")
            return
        if _is_super_init(node) and _initialises_module_with_parameters(ctx):
            ctx.report(
                self, node,
                self.message.format(what="nn.Module.__init__ of a module built"), gb="GB0119",
            )
        elif _is_super_init(node) and ctx.eager_construction:
            ctx.report(
                self, node,
                self.message.format(what="nn.Module.__init__ run as a frame of its own (the module is built where Dynamo runs its caller eagerly)"),
                gb="GB0119", resumes=False,
            )


def _owns_parameters(node: cst.Call, name: str | None) -> bool:
    if name not in PARAMETER_LAYERS:
        return False
    return not any(
        arg.keyword is not None and arg.keyword.value in AFFINE_SWITCHES
        and isinstance(arg.value, cst.Name) and arg.value.value == "False"
        for arg in node.args
    )


def _is_super_init(node: cst.Call) -> bool:
    func = node.func
    return (
        isinstance(func, cst.Attribute) and func.attr.value == "__init__"
        and isinstance(func.value, cst.Call) and isinstance(func.value.func, cst.Name)
        and func.value.func.value == "super"
    )


def _initialises_module_with_parameters(ctx) -> bool:
    """`super().__init__()` in the __init__ of an nn.Module that compiled code constructs (the
    walker only enters an __init__ that way), when that __init__ makes parameters or buffers."""
    function = ctx.function
    if function.name != "__init__" or function.owner is None or not function.owner.is_module:
        return False
    for node in live_nodes(function.node.body, ctx.index):
        if isinstance(node, cst.Call):
            name = ctx.qualname(node.func)
            if name in PARAMETER_CALLS or name in BUFFER_CALLS or _owns_parameters(node, name):
                return True
    return False


class DataMutation(Rule):
    code = "TCL406"
    name = "tensor-data-mutation"
    message = "{what} inside a compiled region breaks the graph"
    fix = "use an in-place op under torch.no_grad() (x.copy_(y)) or move it out of the compiled region"
    gb = (((2, 0), "GB0056"),)
    alt_gb = ("GB0126",)
    rationale = (
        "Assigning `.data` of a tensor created inside the compiled region swaps its storage, and "
        "resize_() changes a size behind autograd's back. (Assigning `.data` of an input or a "
        "parameter is traced on 2.13/2.14.)"
    )
    VALID = [Example('''
import torch

@torch.compile
def fn(x, y):
    x.data = y
    with torch.no_grad():
        x.copy_(y)
    return x + 1
''')]
    INVALID = [
        Example('''
import torch

@torch.compile
def fn(x):
    y = x.clone()
    y.data = torch.zeros(4, 4)  # BREAK
    return y + 1
'''),
        Example('''
import torch

@torch.compile
def fn(x):
    y = x.clone()
    y.resize_(16)  # BREAK
    return y
'''),
    ]

    def visit_Assign(self, node: cst.Assign, ctx) -> None:
        for target in node.targets:
            target = target.target
            if (
                isinstance(target, cst.Attribute)
                and target.attr.value == "data"
                and isinstance(target.value, cst.Name)
                and ctx.is_intermediate(target.value.value)
                and is_tensor(ctx.kind(target.value))
            ):
                ctx.report(self, target, self.message.format(what="assigning .data"))

    def visit_Call(self, node: cst.Call, ctx) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("resize_", "resize_as_"):
            if is_tensor(ctx.kind(func.value)):
                ctx.report(self, node, self.message.format(what=f".{func.attr.value}()"), gb="GB0126")


class ClassInCompiledFunction(Rule):
    code = "TCL407"
    name = "class-defined-in-compiled-region"
    message = "a class statement inside a compiled function breaks the graph"
    fix = "define the class at module level"
    gb = (((2, 0), "GB8977"),)
    rationale = "Dynamo does not trace class creation (LOAD_BUILD_CLASS) by default."
    VALID = [Example('''
import torch

class Box:
    def __init__(self, value):
        self.value = value

@torch.compile
def fn(x):
    return Box(x * 2).value
''')]
    INVALID = [Example('''
import torch

@torch.compile
def fn(x):
    class Box:  # BREAK
        pass
    return x * 2
''')]

    def visit_ClassDef(self, node: cst.ClassDef, ctx) -> None:
        ctx.report(self, node.name)


RNN_CLASSES = frozenset({"torch.nn.LSTM", "torch.nn.GRU", "torch.nn.RNN"})


class RecurrentModule(Rule):
    code = "TCL408"
    name = "rnn-module-in-compiled-region"
    message = "calling nn.{cls} inside a compiled region breaks the graph"
    fix = "set torch._dynamo.config.allow_rnn = True, or compile the layers around the RNN separately"
    gb = (((2, 0), "GB0014"),)
    removed_by = frozenset({"allow_rnn"})
    # The break is where Dynamo wraps the module (loading `self.rnn`), not at a call it can
    # split: measured on 2.13, the rest of the frame runs eagerly.
    resumes = False
    rationale = ("Dynamo does not trace nn.LSTM/GRU/RNN unless torch._dynamo.config.allow_rnn is set; the break "
                 "comes where the module is loaded, so Dynamo cannot resume after it and runs the rest of the "
                 "frame eagerly.")
    VALID = [Example('''
import torch
from torch import nn

class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        return self.proj(x)
''', entry="Encoder", args="torch.randn(2, 3, 4)")]
    INVALID = [Example('''
import torch
from torch import nn

class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(4, 8, batch_first=True)

    def forward(self, x):
        out, _ = self.rnn(x)  # BREAK
        return out
''', entry="Encoder", args="torch.randn(2, 3, 4)"), Example('''
import torch
from torch import nn

class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.rnn = nn.GRU(4, 8, batch_first=True)

    def forward(self, x):
        x = self.proj(x)
        self.rnn.flatten_parameters()  # BREAK
        out, _ = self.rnn(x)
        return out
''', entry="Encoder", args="torch.randn(2, 3, 4)")]

    def visit_Call(self, node: cst.Call, ctx) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute):
            return
        method = None
        if isinstance(func.value, cst.Attribute) and isinstance(func.value.value, cst.Name) \
                and func.value.value.value == "self":
            # `self.rnn.flatten_parameters()`: Dynamo wraps the module to look the method up
            # (measured on 2.13: GB0014 at that line, the rest of the frame runs eagerly)
            method, func = func.attr.value, func.value
        elif not (isinstance(func.value, cst.Name) and func.value.value == "self"):
            return
        owner = ctx.function.owner
        value = owner.attributes.get(func.attr.value) if owner is not None else None
        if isinstance(value, cst.Call):
            cls = ctx.qualname(value.func)
            if cls in RNN_CLASSES:
                name = cls.rsplit(".", 1)[-1] + (f".{method}()" if method else "")
                ctx.report(self, node, self.message.format(cls=name))


class InferenceModeQuery(Rule):
    code = "TCL409"
    name = "inference-mode-query"
    message = "{what} inside a compiled region breaks the graph"
    fix = "decide outside the compiled region and pass a Python bool, or drop the check"
    gb = (((2, 0), "GB0045"),)
    alt_gb = ("GB0046",)
    rationale = "Dynamo cannot trace queries of inference mode; each one ends the graph."
    VALID = [Example('''
import torch

@torch.compile
def fn(x):
    if torch.is_grad_enabled():
        x = x * 2
    return x
''')]
    INVALID = [Example('''
import torch

@torch.compile
def fn(x):
    y = x * 2
    flags = [x.is_inference()]  # BREAK
    return y, flags
''')]

    def visit_Call(self, node: cst.Call, ctx) -> None:
        if ctx.qualname(node.func) == "torch.is_inference_mode_enabled":
            ctx.report(self, node, self.message.format(what="torch.is_inference_mode_enabled()"), gb="GB0046")
            return
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "is_inference" and not node.args:
            if is_tensor(ctx.kind(func.value)):
                ctx.report(self, node, self.message.format(what=".is_inference()"))


SPARSE_FUNCTIONS = frozenset({
    "torch.sparse_coo_tensor", "torch.sparse_csr_tensor", "torch.sparse_csc_tensor",
    "torch.sparse_bsr_tensor", "torch.sparse_bsc_tensor", "torch.sparse_compressed_tensor",
})
SPARSE_METHODS = frozenset({"to_sparse", "to_sparse_csr", "to_sparse_csc", "to_sparse_bsr", "to_sparse_bsc"})


class SparseTensor(Rule):
    code = "TCL410"
    name = "sparse-tensor-in-compiled-region"
    message = "{what} creates a sparse tensor, which Dynamo does not trace; the graph breaks"
    # Measured on 2.13: the frame that would resume receives the sparse tensor, which Dynamo
    # cannot wrap (GB0015): the rest of the frame runs eagerly.
    resumes = False
    fix = "keep sparse conversions outside the compiled region (or use dense ops inside it)"
    gb = (((2, 0), "GB0277"),)
    alt_gb = ("GB0015",)
    rationale = "Sparse layouts are not supported by torch.compile's tracing; each conversion ends the graph."
    VALID = [Example('''
import torch

@torch.compile
def fn(x):
    return (x * (x > 0)).sum()
''')]
    INVALID = [Example('''
import torch

@torch.compile
def fn(x):
    nnz = x.to_sparse()._nnz()  # BREAK
    return x * nnz
''')]

    def visit_Call(self, node: cst.Call, ctx) -> None:
        name = ctx.qualname(node.func)
        if name in SPARSE_FUNCTIONS:
            ctx.report(self, node, self.message.format(what=f"{name}()"))
            return
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in SPARSE_METHODS and is_tensor(ctx.kind(func.value)):
            ctx.report(self, node, self.message.format(what=f".{func.attr.value}()"))


UNSUPPORTED_CONTEXT_MANAGERS = frozenset({
    "torch.backends.cudnn.flags", "torch.backends.mkldnn.flags",
    "torch.autograd.detect_anomaly", "torch.autograd.set_detect_anomaly",
    "torch.autograd.anomaly_mode.detect_anomaly", "torch.autograd.anomaly_mode.set_detect_anomaly",
    "torch.autograd.graph.saved_tensors_hooks", "torch.autograd.graph.save_on_cpu",
    "torch.random.fork_rng", "contextlib.redirect_stdout", "contextlib.redirect_stderr",
})
# Locks are entered as objects (`with _lock:`), usually built once at module level.
LOCK_CONSTRUCTORS = frozenset({
    "threading.Lock", "threading.RLock", "threading.Condition", "threading.Semaphore",
    "threading.BoundedSemaphore", "multiprocessing.Lock", "multiprocessing.RLock",
})


class UnsupportedContextManager(Rule):
    code = "TCL411"
    name = "unsupported-context-manager"
    message = "`with {name}(...)`: Dynamo cannot trace this context manager; the graph breaks"
    fix = (
        "enter it outside the compiled region (around the compiled call), or skip it under "
        "compile: `contextlib.nullcontext() if torch.compiler.is_compiling() else ...`"
    )
    gb = (((2, 0), "GB0142"),)
    alt_gb = ("GB0208", "GB0008")
    rationale = (
        "Dynamo models a fixed set of context managers (no_grad, autocast, sdpa_kernel, ...). "
        "Others (cudnn.flags, detect_anomaly, fork_rng, saved_tensors_hooks, redirect_stdout, "
        "threading locks) "
        "end the graph at the `with` (measured on torch 2.13)."
    )
    VALID = [Example('''
import torch

@torch.compile
def fn(x):
    with torch.no_grad(), torch.autocast("cpu", enabled=False):
        return x * 2
''')]
    INVALID = [
        Example('''
import torch

@torch.compile
def fn(x):
    with torch.backends.cudnn.flags(enabled=False):  # BREAK
        y = x * 2
    return y + 1
'''),
        Example('''
import torch

@torch.compile
def fn(x):
    with torch.random.fork_rng():  # BREAK
        y = x + torch.rand_like(x)
    return y
'''),
        Example('''
import threading

import torch

_install_lock = threading.Lock()

@torch.compile
def fn(x):
    with _install_lock:  # BREAK
        y = x * 2
    return y + 1
'''),
    ]

    def visit_WithItem(self, node: cst.WithItem, ctx) -> None:
        item = node.item
        if not isinstance(item, cst.Call):
            if holds(item, ctx, _is_lock):
                ctx.report(self, item, self.message.format(name="a threading lock").replace("(...)", ""))
            return
        name = ctx.qualname(item.func) or ""
        if name in UNSUPPORTED_CONTEXT_MANAGERS or name in LOCK_CONSTRUCTORS:
            ctx.report(self, item, self.message.format(name=name))


def _is_lock(value: cst.BaseExpression, ctx) -> bool:
    return isinstance(value, cst.Call) and ctx.qualname(value.func) in LOCK_CONSTRUCTORS
