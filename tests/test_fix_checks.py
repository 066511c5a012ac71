"""Validation guards kept as in-graph checks (tcl/fixes/checks.py): the exact rewrites, what is
left to other fixes, the engine reading the rewritten `elif`, and the compiler: the break is
gone, a passing input gives eager's result, a failing one raises RuntimeError with the message.
"""

from __future__ import annotations

import importlib.util
import sys
import textwrap
import uuid

import pytest

from tcl.config import Config
from tcl.engine import Analyzer
from tcl.fixes import SAFE, UNSAFE
from tcl.fixing.apply import fix_source


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def run_fix(source: str, unsafe: bool = False):
    return fix_source(src(source), "model.py", Analyzer(Config()), unsafe=unsafe)


def findings(source: str) -> list[str]:
    report = Analyzer(Config()).check_source(src(source), "model.py")
    return [f"{f.line}:{f.code}" for f in report.findings]


CHECKS = """
import torch

@torch.compile
def fn(x, labels=None, left=-1.0, right=1.0):
    if not (x[:, 2:] >= x[:, :2]).all():
        raise ValueError(f"bad boxes {x}")
    if labels is not None and labels.max() >= 10:
        raise ValueError("labels out of range")
    if labels is None or labels.min() < 0:
        raise ValueError("labels missing or negative")
    if torch.min(x) < left or torch.max(x) > right:
        raise RuntimeError("outside")
    if x.sum().item() > 100:
        raise ValueError("too big")
    return x * 2
"""


def test_each_form_becomes_an_assert_under_compile_and_the_original_raise_in_eager():
    result = run_fix(CHECKS)
    assert result.errors == [] and [f.safety for f in result.applied] == [SAFE] * 5
    assert result.remaining == []
    assert result.fixed == src('''
        import torch

        @torch.compile
        def fn(x, labels=None, left=-1.0, right=1.0):
            # torch.compile: this check runs in the graph and raises RuntimeError, not ValueError
            if torch.compiler.is_compiling():
                torch._assert_async((x[:, 2:] >= x[:, :2]).all(), "ValueError: not (x[:, 2:] >= x[:, :2]).all()")
            elif not (x[:, 2:] >= x[:, :2]).all():
                raise ValueError(f"bad boxes {x}")
            # torch.compile: this check runs in the graph and raises RuntimeError, not ValueError
            if torch.compiler.is_compiling() and labels is not None:
                torch._assert_async(torch.logical_not(labels.max() >= 10), "ValueError: labels out of range")
            elif labels is not None and labels.max() >= 10:
                raise ValueError("labels out of range")
            # torch.compile: this check runs in the graph and raises RuntimeError, not ValueError
            if torch.compiler.is_compiling() and not (labels is None):
                torch._assert_async(torch.logical_not(labels.min() < 0), "ValueError: labels missing or negative")
            elif labels is None or labels.min() < 0:
                raise ValueError("labels missing or negative")
            # torch.compile: this check runs in the graph and raises RuntimeError
            if torch.compiler.is_compiling():
                torch._assert_async(torch.logical_not(torch.logical_or(torch.min(x) < left, torch.max(x) > right)), "RuntimeError: outside")
            elif torch.min(x) < left or torch.max(x) > right:
                raise RuntimeError("outside")
            # torch.compile: this check runs in the graph and raises RuntimeError, not ValueError
            if torch.compiler.is_compiling():
                torch._assert_async(torch.logical_not(x.sum() > 100), "ValueError: too big")
            elif x.sum().item() > 100:
                raise ValueError("too big")
            return x * 2
        ''')
    assert "raises RuntimeError instead of ValueError" in result.applied[0].note
    assert run_fix(result.fixed).changed is False  # a second run changes nothing


@pytest.mark.parametrize("branch", [
    # a tensor operand before a Python one tcl cannot move first (`x.numel()` is not among the
    # total operands of tcl/fixes/operand_order.py): `t or p` needs t's truth value before p
    "if torch.isnan(x).any() or x.numel() != 2:\n        raise ValueError('bad')",
    # an `else`: the branch does more than check
    "if torch.isnan(x).any():\n        raise ValueError('bad')\n    else:\n        x = x + 1",
    # `and` of tensors where the right side indexes what the left one guards
    "if (x > 0).any() and x[x > 0].min() < 1:\n        raise ValueError('bad')",
])
def test_checks_it_cannot_keep_are_left_to_the_unsafe_skip_or_alone(branch):
    result = run_fix(f"import torch\n\n@torch.compile\ndef fn(x):\n    {branch}\n    return x\n", unsafe=True)
    assert "_assert_async" not in result.fixed


def test_a_check_the_skip_handles_stays_unsafe():
    result = run_fix("""
        import torch

        @torch.compile
        def fn(x):
            if torch.isnan(x).any() or x.numel() != 2:
                raise ValueError("bad")
            return x
        """)
    assert not result.changed and [f.safety for f in result.pending] == [UNSAFE]


def test_an_elif_after_a_compiling_test_with_a_python_operand_is_not_traced_with_it():
    # under compile `labels is not None` is false in the elif (the `if` above took it otherwise)
    assert findings("""
        import torch

        @torch.compile
        def fn(x, labels=None):
            if torch.compiler.is_compiling() and labels is not None:
                torch._assert_async(torch.logical_not(labels.max() >= 10), "bad")
            elif labels is not None and labels.max() >= 10:
                raise ValueError("bad")
            return x
        """) == []
    # the same chain without the compiling test: the elif's tensor test is reached
    assert findings("""
        import torch

        @torch.compile
        def fn(x, labels=None):
            if labels is None:
                x = x + 1
            elif labels.max() >= 10:
                raise ValueError("bad")
            return x
        """) == ["7:TCL201"]


def test_what_an_elif_chain_assigns_is_not_settled_by_the_test_before_it():
    assert findings("""
        import torch

        @torch.compile
        def fn(x, flag=None):
            if torch.compiler.is_compiling() and flag is not None:
                x = x + 1
            elif (flag := x.sum()) is not None and flag > 0:
                x = x - 1
            return x
        """) == ["7:TCL201"]


# -- on the compiler --------------------------------------------------------------------------


def _load(source: str, directory):
    name = f"_tcl_fix_checks_{uuid.uuid4().hex}"
    path = directory / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module.fn


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_on_the_compiler_the_checks_stay_and_the_breaks_go(tmp_path, backend):
    torch = pytest.importorskip("torch")
    from tcl.oracle import probe_source

    source = src(CHECKS).replace("@torch.compile", f"@torch.compile(backend={backend!r})")
    result = fix_source(source, "model.py", Analyzer(Config()))
    args = "(torch.tensor([[0., 0., .5, .5]]), torch.tensor([1, 2]))"
    if backend == "eager":
        before = probe_source(src(CHECKS), "fn", args, modes=("default",))
        after = probe_source(result.fixed, "fn", args, modes=("default",))
        assert len(before.breaks) >= 5 and after.breaks == [] and after.exception is None
    torch._dynamo.reset()
    original, rewritten = _load(source, tmp_path), _load(result.fixed, tmp_path)
    good = torch.tensor([[0., 0., .5, .5]])
    assert torch.equal(rewritten(good, torch.tensor([1, 2])), original(good, torch.tensor([1, 2])))
    failing = [
        ((torch.tensor([[0., 0., -.5, .5]]), torch.tensor([1])), "ValueError: not (x[:, 2:] >= x[:, :2]).all()"),
        ((good, torch.tensor([1, 12])), "ValueError: labels out of range"),
        ((good, torch.tensor([-1])), "ValueError: labels missing or negative"),
        ((good * 4, torch.tensor([1])), "RuntimeError: outside"),
    ]
    for args, message in failing:
        expected = _raised(original, args)  # eager, as written and rewritten: the same exception
        assert type(_raised(rewritten, args)) is type(expected) and str(_raised(rewritten, args)) == str(expected)
        with pytest.raises(RuntimeError) as compiled:
            rewritten(*args)
        assert message in str(compiled.value)
    with pytest.raises(ValueError, match="labels missing"):
        rewritten(good, None)  # `labels is None` raises as written under compile: no tensor read


def _raised(function, args) -> Exception:
    eager = getattr(function, "_torchdynamo_orig_callable", function)
    try:
        eager(*args)
    except Exception as exc:  # what eager raises
        return exc
    raise AssertionError("eager accepted a failing input")


def test_targets_whose_inductor_drops_asserts_keep_the_older_fix():
    # before torch 2.9 Inductor lowered `_assert_async` to nothing: the check would vanish
    source = "import torch\n\n@torch.compile\ndef fn(x):\n    if torch.isnan(x).any():\n        raise ValueError('nan')\n    return x\n"
    old = fix_source(source, "model.py", Analyzer(Config(torch_version="2.8")), unsafe=True)
    assert "_assert_async" not in old.fixed and "is_compiling() and torch.isnan(x).any()" in old.fixed
    assert "_assert_async" in fix_source(source, "model.py", Analyzer(Config(torch_version="2.9"))).fixed
