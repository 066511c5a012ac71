"""Optimizer and LR-scheduler calls inside compiled code: functions Dynamo skips.

Users compile whole training steps. On 2.13 `optimizer.zero_grad()`, `scheduler.step()`,
`scheduler.get_last_lr()` and `optimizer.state_dict()` are functions Dynamo is told not to trace
(GB0008: torch marks them with `_disable_dynamo`), so each ends the graph at the user's line;
`model.zero_grad()` (nn.Module's) traces. Which methods break is measured per release by
scripts/gen_torch_facts.py (optimizer_calls). `optimizer.step()` is not reported: its break is
inside torch's profiling wrapper, after which the step body compiles as a frame of its own, which
is PyTorch's own recipe for compiling the optimizer. A receiver is an optimizer (or scheduler) on
evidence only: a name or `self.` attribute bound to a `torch.optim.<Class>(...)` (or
`torch.optim.lr_scheduler.<Class>(...)`, or a class of the checked tree deriving from
torch.optim.Optimizer), or a name that says so (`optimizer`, `opt`, `g_optimizer`, `scheduler`,
`lr_scheduler`).
"""

from __future__ import annotations

import libcst as cst

from .. import torch_facts
from ..dataflow import Kind
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
    origin = None
    if isinstance(node, cst.Name):
        origin = ctx.origins.get(node.value)
    elif isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self" \
            and ctx.function.owner is not None:
        origin = ctx.function.owner.attributes.get(node.attr.value)
    if isinstance(origin, cst.Call):
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
        "zero_grad traces; optimizer.step() breaks only inside torch's wrapper and then compiles "
        "its body, so it is not reported."
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
