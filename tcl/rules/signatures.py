"""Calls spelled in a signature torch still accepts in eager but Dynamo cannot trace.

torch keeps old scalar-first overloads alive for eager code (`p.data.add_(-lr, grad)`,
`exp_avg_sq.addcmul_(1 - beta2, grad, grad)`, written for torch 0.4 and still common in optimizer
libraries): its argument parser marks them `|deprecated`. Which of them break the graph is
measured per release by scripts/gen_torch_facts.py (deprecated_signature_calls: the deprecated
forms read from torch's own binary, each compiled next to its current spelling); on 2.13 the
in-place add_/addcmul_/addcdiv_ forms break with GB0117 ("Unhandled args for method") and the
others trace. The rewrite is the current signature, which the deprecated one is defined as:
tensors stay positional, each scalar becomes its keyword (`p.add_(grad, alpha=-lr)`).
"""

from __future__ import annotations

import libcst as cst

from .. import torch_facts
from ..fixes.signatures import fix_deprecated_signature
from .base import Example, Rule
from .catalog import _is_imported

def deprecated_form(call: cst.Call, method: str, version) -> list[tuple[str, str]] | None:
    """The deprecated form (`[("Scalar", "alpha"), ("Tensor", "other")]`) this call of
    `.<method>(...)` spells, by its count of positional arguments, where that form breaks on the
    target release; None otherwise. The current signatures take fewer positional arguments (a
    scalar is keyword-only), so the count alone tells the forms apart; and no other type has
    add_/addcmul_/addcdiv_ methods, so the receiver's kind is not asked (an optimizer's `p` is
    often judged a flag by its name)."""
    entry = torch_facts.measured(version, "deprecated_signature_calls").get(f"Tensor.{method}")
    if entry is None or any(a.star for a in call.args):
        return None
    if any(a.keyword is not None for a in call.args):
        return None  # a keyword is the current signature's (`alpha=`), or a call eager refuses
    count = len(call.args)
    for signature in entry["signatures"]:
        params = [tuple(p.split(" ", 1)) for p in signature.split(", ")]
        if len(params) == count:
            return params
    return None


class DeprecatedSignature(Rule):
    code = "TCL418"
    name = "deprecated-scalar-first-signature"
    message = ".{method}() in its deprecated scalar-first form breaks the graph; spell it .{method}({spelling})"
    fix = "pass the tensors positionally and the scalar by keyword: p.add_(grad, alpha=-lr), v.addcmul_(g, g, value=1 - b)"
    gb = (((2, 0), "GB0117"),)
    rationale = (
        "torch's argument parser still accepts the torch 0.4 overloads add_(alpha, other), "
        "addcmul_(value, tensor1, tensor2) and addcdiv_(value, tensor1, tensor2) in eager, but Dynamo "
        "reports 'Unhandled args for method' and breaks the graph. Measured per release by "
        "scripts/gen_torch_facts.py (deprecated_signature_calls); the out-of-place forms and sub_ trace."
    )
    fixer = staticmethod(fix_deprecated_signature)
    VALID = [Example('''
import torch

@torch.compile
def fn(p, grad):
    p = p.clone()
    p.add_(grad, alpha=-0.1)
    p.addcmul_(grad, grad, value=0.5)
    return p.add(-0.1, grad)  # the out-of-place deprecated form traces
'''), Example('''
import torch

@torch.compile
def fn(p, grad):
    seen = set()
    seen.add(3)
    return p + grad
''')]
    INVALID = [Example('''
import torch

@torch.compile
def fn(p, grad):
    p = p.clone()
    p.add_(-0.1, grad)  # BREAK
    return p
'''), Example('''
import torch

@torch.compile
def fn(exp_avg_sq, grad):
    beta2 = 0.99
    exp_avg_sq = exp_avg_sq.clone()
    exp_avg_sq.mul_(beta2).addcmul_(1 - beta2, grad, grad)  # BREAK
    return exp_avg_sq
'''), Example('''
import torch

@torch.compile
def fn(p, exp_avg):
    p = p.clone()
    denom = exp_avg.abs().add_(1e-8)
    p.addcdiv_(-0.01, exp_avg, denom)  # BREAK
    return p
''')]

    def visit_Call(self, node: cst.Call, ctx) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or _is_imported(func, ctx):
            return  # a module's function (`np.add`), not a method of a value
        params = deprecated_form(node, func.attr.value, ctx.version)
        if params is None:
            return
        spelling = ", ".join([name for kind, name in params if kind == "Tensor"]
                             + [f"{name}=..." for kind, name in params if kind == "Scalar"])
        ctx.report(self, node, self.message.format(method=func.attr.value, spelling=spelling))
