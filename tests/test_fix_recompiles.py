"""`tcl fix` for recompiles: the TCL506 fill_diagonal_ rewrite, on numbers and on the compiler.

* eager: for 2-D tensors of any shape and N-D tensors with equal dims, every dtype and fill
  value fill_diagonal_ accepts, the rewritten function returns the same tensor (NaN == NaN);
* compiled: the original recompiles on every new size (tcl.verify.compile_trace), the
  rewritten function only once, automatic-dynamic;
* the fix removes the finding and a second run changes nothing.
"""

from __future__ import annotations

import importlib.util
import math
import sys
import textwrap
import uuid
import warnings

import pytest

torch = pytest.importorskip("torch")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tcl.config import Config  # noqa: E402
from tcl.engine import Analyzer  # noqa: E402
from tcl.fixing.apply import fix_source  # noqa: E402
from tcl.verify.compile_trace import CompileTrace, persistent  # noqa: E402

SOURCE = textwrap.dedent('''
    import torch

    @torch.compile
    def fn(x, value):
        out = x.clone()
        out.fill_diagonal_(value)
        return out
''')
SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
DTYPES = (torch.float32, torch.float64, torch.float16, torch.int64, torch.int32, torch.uint8, torch.bool)


@pytest.fixture(scope="module")
def fixed():
    return fix_source(SOURCE, "diag.py", Analyzer(Config()))


def _load(source, tmp_path):
    name = f"diag_{uuid.uuid4().hex}"
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return getattr(module.fn, "_torchdynamo_orig_callable", module.fn)


def test_fix_removes_the_finding_and_is_idempotent(fixed):
    assert fixed.errors == [] and fixed.changed
    assert [f.code for f in fixed.applied] == ["TCL506"]
    assert "fill_diagonal_" not in fixed.fixed
    assert "torch.arange(min(out.shape), device=out.device)" in fixed.fixed
    again = fix_source(fixed.fixed, "diag.py", Analyzer(Config()))
    assert not again.changed and not [f for f in again.remaining if f.code == "TCL506"]


@st.composite
def cases(draw):
    if draw(st.booleans()):
        shape = [draw(st.integers(0, 5)), draw(st.integers(0, 5))]
    else:
        side = draw(st.integers(0, 3))
        shape = [side] * draw(st.integers(3, 4))
    dtype = draw(st.sampled_from(DTYPES))
    x = (torch.randn(shape, dtype=torch.float64) * 10).to(dtype)
    if dtype == torch.bool:
        value = draw(st.sampled_from([True, False, 0, 1]))
    elif dtype.is_floating_point:
        value = draw(st.sampled_from([0, 1, -2.5, 0.1, math.nan, math.inf, -0.0]))
    else:
        value = draw(st.sampled_from([0, 1, -3, 7, True]))
        if dtype == torch.uint8 and value == -3:
            value = 3
    return x, value


def test_rewrite_keeps_eager_results(fixed, tmp_path):
    before, after = _load(SOURCE, tmp_path), _load(fixed.fixed, tmp_path)

    @SETTINGS
    @given(case=cases())
    def check(case):
        x, value = case
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = before(x, value)
            got = after(x, value)
        assert expected.dtype == got.dtype and expected.shape == got.shape
        if expected.dtype.is_floating_point:
            assert torch.allclose(expected, got, rtol=0, atol=0, equal_nan=True)
        else:
            assert torch.equal(expected, got)

    check()


def _persistent_calls(function, shapes):
    torch._dynamo.reset()
    compiled = torch.compile(function, backend="eager")
    with CompileTrace() as trace:
        for shape in shapes:
            trace.next_call()
            compiled(torch.randn(shape), 0.0)
    torch._dynamo.reset()
    return sorted({c.call for c in persistent(trace.compilations)})


@pytest.mark.parametrize("shapes", [[(n, n) for n in (4, 6, 8, 10)], [(n, n + 3) for n in (4, 6, 8, 10)]],
                         ids=["square", "wide"])
def test_rewrite_stops_the_recompiles(fixed, tmp_path, shapes):
    assert _persistent_calls(_load(SOURCE, tmp_path), shapes) == [2, 3]
    assert _persistent_calls(_load(fixed.fixed, tmp_path), shapes) == []
