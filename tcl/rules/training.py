"""Optimizer and LR-scheduler calls inside compiled code: functions Dynamo skips.

Users compile whole training steps. On 2.13 `optimizer.zero_grad()`, `scheduler.step()`,
`scheduler.get_last_lr()` and `optimizer.state_dict()` are functions Dynamo is told not to trace
(GB0008: torch marks them with `_disable_dynamo`), so each ends the graph at the user's line;
`model.zero_grad()` (nn.Module's) traces. Which methods break is measured per release by
scripts/gen_torch_facts.py (optimizer_calls). `optimizer.step()` of torch's own optimizers
breaks too, inside their wrapper (`_use_grad_for_differentiable` calls
torch._dynamo.graph_break() around the update): TCL422, for the classes measured per release
(optimizer_steps), only where the receiver is seen built by `torch.optim.<Class>(...)`; until
session 32 it was left out as PyTorch's own recipe, but the caller's graph does end there (the
user-style scripts of eval/user_scripts log it on every compiled training step). A receiver is
an optimizer (or scheduler) for TCL420 on
evidence only: a name or `self.` attribute bound to a `torch.optim.<Class>(...)` (or
`torch.optim.lr_scheduler.<Class>(...)`, or a class of the checked tree deriving from
torch.optim.Optimizer), or a name that says so (`optimizer`, `opt`, `g_optimizer`, `scheduler`,
`lr_scheduler`).
"""

from __future__ import annotations

import libcst as cst

from .. import torch_facts
from ..dataflow import Kind
from ..bindings import module_binding
from ..names import dotted
from .base import Example, Rule

OPTIMIZER_NAMES = frozenset({"opt", "optim", "optimizer", "optimiser"})
SCHEDULER_NAMES = frozenset({"sched", "scheduler", "lr_scheduler", "lr_sched"})


def _role_by_name(name: str) -> str | None:
    words = [w for w in name.lower().split("_") if w]
    last = name.lower()
    if last in OPTIMIZER_NAMES or any(w in ("optimizer", "optimiser") for w in words):
        return "Optimizer"
    if last in SCHEDULER_NAMES or "scheduler" in words:
        return "LRScheduler"
    return None


def _role_of_constructor(call: cst.Call, ctx) -> str | None:
    qualname = ctx.qualname(call.func) or ""
    last = qualname.rsplit(".", 1)[-1]
    if qualname.startswith("torch.optim.lr_scheduler.") and last[:1].isupper():
        return "LRScheduler"
    if qualname.startswith("torch.optim.") and last[:1].isupper():
        return "Optimizer"
    index = ctx.function.index
    if index is not None and qualname in index.known_optimizers:
        return "Optimizer"
    return None


def receiver_role(node: cst.BaseExpression, ctx) -> str | None:
    """"Optimizer", "LRScheduler" or None for the receiver of a method call."""
    if ctx.kind(node) == Kind.MODULE:
        return None
    origin = constructor_of(node, ctx, module_level=False)
    if origin is not None:
        role = _role_of_constructor(origin, ctx)
        if role is not None:
            return role
    name = dotted(node)
    return _role_by_name(name.rsplit(".", 1)[-1]) if name is not None else None


class OptimizerCallInCompiledRegion(Rule):
    code = "TCL420"
    name = "optimizer-call-in-compiled-region"
    message = "{what}.{method}() is a function Dynamo skips: it breaks the graph of the compiled step"
    fix = (
        "call optimizer.zero_grad() / scheduler.step() outside the compiled function (compile the "
        "forward and loss, or the step without them)"
    )
    gb = (((2, 0), "GB0008"),)
    alt_gb = ("GB0264",)
    rationale = (
        "torch marks Optimizer.zero_grad, Optimizer.state_dict and the LR schedulers' step and "
        "get_last_lr as not to be traced; inside a compiled training step each ends the graph "
        "(measured per release by scripts/gen_torch_facts.py, optimizer_calls). nn.Module's "
        "zero_grad traces. optimizer.step() is TCL422."
    )
    VALID = [Example('''
import torch

model = torch.nn.Linear(3, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

@torch.compile
def fn(x):
    model.zero_grad()
    lr = optimizer.param_groups[0]["lr"]
    return model(x).sum() * lr
''', args="(torch.randn(2, 3),)")]
    INVALID = [Example('''
import torch

model = torch.nn.Linear(3, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

@torch.compile
def fn(x):
    optimizer.zero_grad()  # BREAK
    return model(x).sum()
''', args="(torch.randn(2, 3),)"), Example('''
import torch

model = torch.nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scheduler = torch.optim.lr_scheduler.StepLR(opt, 2)

@torch.compile
def fn(x):
    y = model(x).sum()
    scheduler.step()  # BREAK
    return y
''', args="(torch.randn(2, 3),)")]

    def visit_Call(self, node: cst.Call, ctx) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute):
            return
        method = func.attr.value
        calls = torch_facts.measured(ctx.version, "optimizer_calls")
        if f"Optimizer.{method}" not in calls and f"LRScheduler.{method}" not in calls:
            return
        role = receiver_role(func.value, ctx)
        gb = calls.get(f"{role}.{method}") if role is not None else None
        if gb is not None:
            what = "optimizer" if role == "Optimizer" else "scheduler"
            ctx.report(self, node, self.message.format(what=what, method=method), gb=gb)


def constructor_of(node: cst.BaseExpression, ctx, module_level: bool = True) -> cst.Call | None:
    """The call that built the object `node` names: a local's last assignment, a `self.`
    attribute's assignment in the class, or (`module_level`) a top-level assignment of the
    module the function reads (`optimizer = torch.optim.AdamW(...)` above a compiled
    `train_step`)."""
    origin = None
    if isinstance(node, cst.Name):
        origin = ctx.origins.get(node.value)
        if (origin is None and module_level and not ctx.is_parameter(node.value)
                and not ctx.is_intermediate(node.value)):
            origin = module_binding(ctx.index, node.value)
    elif isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self" \
            and ctx.function.owner is not None:
        origin = ctx.function.owner.attributes.get(node.attr.value)
    return origin if isinstance(origin, cst.Call) else None


class OptimizerStepInCompiledRegion(Rule):
    code = "TCL422"
    name = "optimizer-step-in-compiled-region"
    message = (
        "{optimizer}.step() breaks the graph of the compiled step: torch's optimizers call "
        "torch._dynamo.graph_break() around their update"
    )
    fix = (
        "expected when a whole training step is compiled; for fewer graphs compile the forward and "
        "loss, and the optimizer step on its own (`torch.compile(optimizer.step)`), as PyTorch's "
        "compiled-optimizer recipe does"
    )
    gb = (((2, 0), "GB0025"),)
    alt_gb = ("GB0124",)
    rationale = (
        "The built-in torch.optim optimizers wrap step() (`_use_grad_for_differentiable`) with "
        "torch._dynamo.graph_break() before and after the update, so that the update compiles as "
        "a no-grad graph of its own: called from compiled code, step() ends the caller's graph "
        "(GB0025; Adafactor's step also reads a value, GB0124). Which optimizers do is measured "
        "per release by scripts/gen_torch_facts.py (optimizer_steps); an Optimizer subclass "
        "whose own step has no such wrapper traces and is not reported. The receiver must be "
        "built by `torch.optim.<Class>(...)` where tcl can see it (a local, a `self.` attribute, "
        "a top-level name of the module): a name alone is no evidence of which optimizer it is."
    )
    VALID = [Example('''
import torch

model = torch.nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)

@torch.compile
def fn(x):
    loss = model(x).sum()
    return loss
''', args="(torch.randn(2, 3),)"), Example('''
import torch

class PlainSGD(torch.optim.Optimizer):  # its own step, without torch's wrapper: traced
    def __init__(self, params, lr=0.1):
        super().__init__(params, dict(lr=lr))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.add_(p.grad, alpha=-group["lr"])

model = torch.nn.Linear(3, 1)
opt = PlainSGD(model.parameters())
for p in model.parameters():
    p.grad = torch.ones_like(p)

@torch.compile
def fn(x):
    loss = model(x).sum()
    opt.step()
    return loss
''', args="(torch.randn(2, 3),)")]
    INVALID = [Example('''
import torch

model = torch.nn.Linear(3, 1)
opt = torch.optim.AdamW(model.parameters(), lr=0.1)
for p in model.parameters():
    p.grad = torch.ones_like(p)

@torch.compile
def fn(x):
    loss = model(x).sum()
    opt.step()  # BREAK
    return loss
''', args="(torch.randn(2, 3),)")]

    def visit_Call(self, node: cst.Call, ctx) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "step" and not node.args):
            return
        constructor = constructor_of(func.value, ctx)
        if constructor is None:
            return
        gb = torch_facts.measured(ctx.version, "optimizer_steps").get(ctx.qualname(constructor.func) or "")
        if gb is not None:
            name = dotted(func.value) or "optimizer"
            ctx.report(self, node, self.message.format(optimizer=name), gb=gb)
