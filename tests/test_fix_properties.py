"""Every rewrite pattern, checked on numbers and on the real compiler.

* eager: for random shapes, dtypes and values (NaN, inf, -0.0, empty tensors included) the
  rewritten function returns the same thing as the original -- same dtypes, same shapes, values
  equal (NaN == NaN) -- or raises the same exception type;
* compiled: the original graph-breaks on the installed torch (CPU, backend "eager"), the
  rewritten function does not.

Unsafe patterns are tested on the inputs their documented precondition allows (e.g. a mask of
the same shape), which is exactly why tcl does not apply them by default.
"""

from __future__ import annotations

import importlib.util
import math
import sys
import textwrap
import uuid
import warnings
from dataclasses import dataclass

import pytest

torch = pytest.importorskip("torch")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tcl.config import Config  # noqa: E402
from tcl.engine import Analyzer  # noqa: E402
from tcl.fixing.apply import fix_source  # noqa: E402
from tcl.oracle import probe_source  # noqa: E402

FLOATS = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
INTS = (torch.int64, torch.int32)
SPECIAL = (0.0, -0.0, 0.1, 0.5, 1.0, -1.0, 2.0, 6e4, -6e4, math.nan, math.inf, -math.inf)
SETTINGS = settings(max_examples=25, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@dataclass
class Pattern:
    name: str
    code: str
    codes: tuple[str, ...]   # the findings the fix must remove
    inputs: str              # which input strategy
    probe_args: str          # inputs for the compiler check
    dtypes: tuple = FLOATS + INTS
    unsafe: bool = False
    # The rewrite removes the break only where a Python test settles the branch (the probe's
    # inputs): the finding stays, as the break does for the other inputs.
    finding_stays: bool = False


PATTERNS = [
    Pattern("where_if_else", """
        @torch.compile
        def fn(x):
            if x.sum() > 0:
                y = x.clamp(-1, 1)
            else:
                y = x * 2
            return y
        """, ("TCL201",), "x", "torch.randn(4, 4)"),
    Pattern("where_if_return", """
        @torch.compile
        def fn(x):
            if x.abs().max() > 2:
                return x.clamp(-2, 2)
            return x
        """, ("TCL201",), "x", "torch.randn(4, 4) * 3"),
    Pattern("where_no_else", """
        @torch.compile
        def fn(x):
            if torch.isnan(x).any():
                x = x.nan_to_num()
            return x + 1
        """, ("TCL201",), "x", "torch.randn(4, 4)"),
    Pattern("where_two_names", """
        @torch.compile
        def fn(x):
            if x.mean() < 0:
                a = -x
                b = x.abs()
            else:
                a = x
                b = x + 1
            return a, b
        """, ("TCL201",), "x", "torch.randn(4, 4)", dtypes=FLOATS),
    Pattern("where_ifexp", """
        @torch.compile
        def fn(x):
            return x.relu() if not x.any() else x * 3
        """, ("TCL201",), "x", "torch.randn(4, 4)"),
    Pattern("masked_update_float", """
        @torch.compile
        def fn(x):
            x = x.clone()
            x[x >= 1.0] -= 1.0
            x[0.0 > x] += 1.0
            x[x != 0.5] /= 2
            return x
        """, ("TCL301",), "x", "torch.randn(4, 4) * 2"),
    Pattern("masked_update_int", """
        @torch.compile
        def fn(x):
            x = x.clone()
            x[x > 0] -= 2
            x[-1 >= x] *= 3
            return x
        """, ("TCL301",), "x", "torch.randn(4, 4) * 2"),
    Pattern("masked_copy", """
        @torch.compile
        def fn(x):
            inside = (x >= -1.0) & (x <= 1.0)
            outside = ~inside
            out = torch.zeros_like(x)
            out[outside] = x[outside]
            return out + 1
        """, ("TCL301",), "x", "torch.randn(4, 4) * 2"),
    Pattern("masked_copy_arithmetic", """
        @torch.compile
        def fn(x):
            nonzero = x != 0
            y = x.clone()
            y[nonzero] = 1.0 / y[nonzero]
            z = torch.ones_like(x)
            z[torch.isnan(x)] = -(x[torch.isnan(x)] * 2 - 1)
            return y, z
        """, ("TCL301",), "x", "torch.randn(4, 4)", dtypes=FLOATS),
    Pattern("item_comparison", """
        @torch.compile
        def fn(x):
            if x.sum().item() > 0:
                y = x + 1
            else:
                y = x - 1
            return y
        """, ("TCL203",), "x", "torch.randn(4, 4)"),
    Pattern("float_comparison", """
        @torch.compile
        def fn(x):
            if float(x.max()) >= 0.5:
                x = x.abs()
            return x
        """, ("TCL204",), "x", "torch.randn(4, 4)"),
    Pattern("bool_truth", """
        @torch.compile
        def fn(x):
            if not bool((x > 1).any()):
                x = -x
            return x
        """, ("TCL204",), "x", "torch.randn(4, 4)"),
    Pattern("assert_not", """
        @torch.compile
        def fn(x):
            assert not torch.isinf(x).any(), "inf in input"
            return x * 2
        """, ("TCL201",), "x", "torch.randn(4, 4)", dtypes=FLOATS),
    Pattern("assert_message", """
        @torch.compile
        def fn(x):
            assert (x.abs() < 100).all(), f"too big: {x.abs().max()}"
            return x * 2
        """, ("TCL202",), "x", "torch.randn(4, 4)", dtypes=FLOATS),
    Pattern("guard_print_logging_warnings", """
        import logging
        import warnings
        log = logging.getLogger("tcl.test")

        @torch.compile
        def fn(x):
            print("x", x.shape)
            log.debug("norm %s", x.norm())
            warnings.warn("slow path")
            return x + 1
        """, ("TCL101", "TCL104", "TCL105"), "x", "torch.randn(4, 4)", dtypes=FLOATS),
    Pattern("one_hot_width", """
        import torch.nn.functional as F

        @torch.compile
        def fn(logits, labels):
            target = F.one_hot(labels).float()
            return F.binary_cross_entropy_with_logits(logits, target, reduction="none")
        """, ("TCL302",), "logits_labels", "(torch.randn(6, 3), torch.tensor([0, 2, 1, 2, 0, 1]))"),
    # -- unsafe: applied with --unsafe-fixes, tested within their preconditions ----------------
    Pattern("unsafe_float_constant", """
        @torch.compile
        def fn(h):
            h = h.clamp(-6e4, 6e4) if torch.isinf(h).any() else h
            return h
        """, ("TCL201",), "x", "torch.randn(4, 4)", dtypes=FLOATS, unsafe=True),
    Pattern("unsafe_other_tensor_and_temporary", """
        @torch.compile
        def fn(x, mask):
            if (mask == 0).any():
                fill = torch.finfo(x.dtype).min
                x = x.masked_fill(mask == 0, fill)
            return x
        """, ("TCL201",), "x_mask", "(torch.randn(4, 4), torch.randint(0, 2, (4, 4)))",
            dtypes=FLOATS, unsafe=True),
    Pattern("guard_reporting_branch", """
        @torch.compile
        def fn(x):
            y = x * 2
            if not torch.isfinite(y).all() or y.abs().max() > 3:
                print("suspicious values", y.shape)
            return y
        """, ("TCL201",), "x", "torch.randn(4, 4) * 3"),
    Pattern("data_check_in_graph", """
        @torch.compile
        def fn(x):
            if torch.isnan(x).any():
                raise ValueError("NaN input")
            if x.dim() == 2 and x.abs().max() > 500:
                raise ValueError(f"too large: {x.shape}")
            if not (x.sum() < 1e4):
                raise OverflowError("sum")
            return x * 2
        """, ("TCL201",), "x", "torch.randn(4, 4)"),
    Pattern("unsafe_skip_data_check", """
        @torch.compile
        def fn(x):
            if torch.isnan(x).any() or x.numel() > 300:
                raise ValueError("NaN input")
            return x * 2
        """, ("TCL201",), "x", "torch.randn(4, 4)", unsafe=True),
    Pattern("python_test_first_then_check_in_graph", """
        @torch.compile
        def fn(x):
            if torch.isnan(x).any() or x.dim() > 3:
                raise ValueError("NaN input")
            return x * 2
        """, ("TCL201",), "x", "torch.randn(4, 4)"),
    Pattern("python_test_first", """
        @torch.compile
        def fn(x):
            y = x * 2
            if torch.isnan(y).any() and y.dtype == torch.float16:
                y = torch.nan_to_num(y.float()).half()
            return y + 1
        """, ("TCL201",), "x", "torch.randn(4, 4)", finding_stays=True),
    Pattern("unsafe_debugger_removed", """
        @torch.compile
        def fn(x):
            y = x * 2
            breakpoint()
            return y
        """, ("TCL102",), "x", "torch.randn(4, 4)", unsafe=True),
    Pattern("deprecated_scalar_first_signatures", """
        @torch.compile
        def fn(x):
            p, v = x.clone(), x.clone()
            v.mul_(0.9).addcmul_(1 - 0.9, x, x)
            p.addcdiv_(-0.01, x, v.abs() + 1)
            p.add_(-0.1, x)
            lr = 0.1
            p.add_(-lr, x.sign())  # a name read before a call: every argument by keyword
            return p, v
        """, ("TCL418",), "x", "torch.randn(4, 4)"),
    Pattern("unsafe_torch_cond", """
        @torch.compile
        def fn(x):
            if x.sum() > 0:
                h = x.sin()
                return h * 2
            else:
                return x.cos()
        """, ("TCL201",), "x_nonempty", "torch.randn(4, 4)", dtypes=(torch.float32, torch.float64), unsafe=True),
]


def _load(source: str, directory):
    name = f"_tcl_fix_prop_{uuid.uuid4().hex}"
    path = directory / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    function = module.fn
    return getattr(function, "_torchdynamo_orig_callable", function)


@pytest.fixture(autouse=True)
def no_debugger(monkeypatch):
    monkeypatch.setenv("PYTHONBREAKPOINT", "0")  # eager breakpoint() returns at once


@pytest.fixture(scope="module")
def rewritten(tmp_path_factory):
    directory = tmp_path_factory.mktemp("fix_properties")
    analyzer = Analyzer(Config())
    out = {}
    for pattern in PATTERNS:
        before = "import torch\n" + textwrap.dedent(pattern.code)
        result = fix_source(before, f"{pattern.name}.py", analyzer, unsafe=pattern.unsafe)
        out[pattern.name] = (before, result, _load(before, directory), _load(result.fixed, directory))
    return out


@st.composite
def tensors(draw, dtypes, shape=None, min_side=0):
    dtype = draw(st.sampled_from(dtypes))
    if shape is None:
        shape = draw(st.lists(st.integers(min_side, 4), min_size=0, max_size=3))
    n = math.prod(shape)
    if dtype.is_floating_point:
        element = st.one_of(st.floats(-1e3, 1e3, width=16), st.sampled_from(SPECIAL))
    else:
        element = st.integers(-100, 100)
    values = draw(st.lists(element, min_size=n, max_size=n))
    return torch.tensor(values, dtype=torch.float64).reshape(shape).to(dtype)


@st.composite
def inputs(draw, kind, dtypes):
    if kind == "x":
        return (draw(tensors(dtypes)),)
    if kind == "x_nonempty":
        return (draw(tensors(dtypes, min_side=1)),)
    if kind == "x_mask":  # the unsafe rewrite's precondition: the mask has x's shape
        x = draw(tensors(dtypes))
        mask = torch.tensor(draw(st.lists(st.integers(0, 1), min_size=x.numel(), max_size=x.numel()))).reshape(x.shape)
        return x, mask
    if kind == "logits_labels":  # eager succeeds only when the largest class is present
        n, classes = draw(st.integers(1, 5)), draw(st.integers(1, 4))
        labels = draw(st.lists(st.integers(0, classes - 1), min_size=n, max_size=n))
        labels[draw(st.integers(0, n - 1))] = classes - 1
        logits = draw(tensors((torch.float32, torch.float64), shape=[n, classes]))
        return logits, torch.tensor(labels)
    raise ValueError(kind)


def _outcome(function, args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return "ok", function(*[a.clone() for a in args])
        except Exception as exc:  # compared by type: eager raised, the rewrite must raise too
            return "raised", type(exc)


def assert_same(a, b):
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor)
        assert a.dtype == b.dtype and a.shape == b.shape
        if a.dtype.is_floating_point:
            assert torch.allclose(a, b, rtol=0, atol=0, equal_nan=True)
        else:
            assert torch.equal(a, b)
    elif isinstance(a, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            assert_same(x, y)
    else:
        assert a == b


@pytest.mark.parametrize("pattern", PATTERNS, ids=lambda p: p.name)
def test_rewrite_applies_and_removes_the_findings(pattern, rewritten):
    _, result, _, _ = rewritten[pattern.name]
    assert result.errors == [] and result.changed
    assert {f.code for f in result.applied} >= set(pattern.codes)
    assert bool({f.code for f in result.remaining} & set(pattern.codes)) == pattern.finding_stays
    assert any(f.safety.label == "unsafe" for f in result.applied) == pattern.unsafe


@pytest.mark.parametrize("pattern", PATTERNS, ids=lambda p: p.name)
def test_rewrite_keeps_eager_results(pattern, rewritten, capsys):
    _, _, before, after = rewritten[pattern.name]

    @SETTINGS
    @given(args=inputs(pattern.inputs, pattern.dtypes))
    def check(args):
        if pattern.name == "unsafe_torch_cond":
            torch._dynamo.reset()  # eager torch.cond compiles per shape: stay under the recompile limit
        first, second = _outcome(before, args), _outcome(after, args)
        assert first[0] == second[0], (first, second)
        if first[0] == "raised":
            assert first[1] is second[1]
        else:
            assert_same(first[1], second[1])

    check()


@pytest.mark.parametrize("pattern", PATTERNS, ids=lambda p: p.name)
def test_rewrite_compiles_without_the_break(pattern, rewritten):
    source_before, result, _, _ = rewritten[pattern.name]
    before = probe_source(source_before, "fn", pattern.probe_args, modes=("default",))
    after = probe_source(result.fixed, "fn", pattern.probe_args, modes=("default", "eogb"))
    assert before.breaks, "the original must break on this torch"
    assert after.exception is None
    assert after.breaks == [] and after.first_error is None, (after.breaks, after.first_error)
