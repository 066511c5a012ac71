"""Tests for tcl.oracle against the installed compiler (facts measured on torch 2.13 CPU)."""

import os
import subprocess
import sys
import textwrap

import pytest

from tcl import oracle
from tcl.oracle import OracleResult, RuntimeBreak, gb_id_of, probe, probe_source

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(source, entry="f", **kw):
    return probe_source(textwrap.dedent(source).lstrip("\n"), entry, **kw)


def sites(result):
    return [(b.line, b.gb) for b in result.breaks]


# ---------------------------------------------------------------- pure parsing (no torch)


def test_gb_id_of():
    url = "visit: https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0170.html"
    assert gb_id_of(url) == "GB0170"
    assert gb_id_of("see GB0124 for details") == "GB0124"
    assert gb_id_of("no id here") is None
    assert gb_id_of(None) is None


def test_import_does_not_import_torch():
    code = "import sys, tcl.oracle; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


LOG_RECORD = """Graph break in user code at /lib/logging/__init__.py:2087
Graph Break Reason: Encountered graph break when attempting to trace CALL: a function call, e.g. f(x, y):

Unresolved GetAttrVariable comparison
  Explanation: Cannot compare GetAttrVariable(LoggingLoggerVariable(), name).

 For more details about this graph break, please visit: https://x/gb/gb6215.html

User code traceback:
  File "/work/run.py", line 10, in <module>
    torch.compile(f)(x)
  File "/work/user.py", line 7, in f
    logging.getLogger(__name__).info("x")
  File "/lib/logging/__init__.py", line 2087, in getLogger
    if not name or isinstance(name, str) and name == root.name:
"""

DUPLICATE = (
    "Graph break (user stack suppressed due to duplicate graph break)"
    " in user code at /lib/logging/__init__.py:2087\n"
) + """Graph Break Reason: Encountered graph break when attempting to trace CALL:

Unresolved GetAttrVariable comparison
 For more details about this graph break, please visit: https://x/gb/gb6215.html
"""


def test_parse_log_walks_to_user_frame_and_resolves_duplicates():
    user = {oracle._norm("/work/user.py")}
    breaks = oracle._parse_log([LOG_RECORD, "Graph break from `Tensor.item()`", DUPLICATE], user)
    assert breaks == [RuntimeBreak(os.path.abspath("/work/user.py"), 7, "GB6215",
                                   "Unresolved GetAttrVariable comparison", "default")]


def test_parse_log_without_user_files_keeps_innermost_frame():
    (brk,) = oracle._parse_log([LOG_RECORD], set())
    assert (brk.path, brk.line) == (os.path.abspath("/lib/logging/__init__.py"), 2087)


# ---------------------------------------------------------------- the real compiler


def test_print_breaks_in_every_mode():
    r = run("""
        def f(x):
            y = x + 1
            print("hello")
            return y * 2
    """)
    assert sites(r) == [(3, "GB0059")]
    assert r.breaks[0].mode == "default"
    assert r.breaks[0].reason == "Failed to trace builtin operator"
    assert (r.first_error.line, r.first_error.gb) == (3, "GB0059")
    fg = r.fullgraph_error
    assert (fg.line, fg.gb, fg.mode) == (3, "GB0059", "fullgraph")
    assert r.exception is None


def test_data_dependent_if():
    r = run("""
        def f(x):
            if x.sum() > 0:
                return x * 2
            return x - 1
    """)
    assert sites(r) == [(2, "GB0170")]
    assert r.breaks[0].reason == "Data-dependent branching"
    assert r.first_error.gb == r.fullgraph_error.gb == "GB0170"


def test_item_breaks_only_in_default_mode():
    # fullgraph=True silently enables capture_scalar_outputs.
    r = run("""
        def f(x):
            y = x + x.sum().item()
            return y
    """)
    assert sites(r) == [(2, "GB0124")]
    assert (r.first_error.line, r.first_error.gb) == (2, "GB0124")
    assert r.fullgraph_error is None


def test_item_in_if_is_a_user_error_under_fullgraph():
    r = run("""
        def f(x):
            n = x.sum().item()
            if n > 0:
                return x * 2
            return x
    """)
    assert sites(r) == [(2, "GB0124")]
    assert r.fullgraph_error.gb is None
    assert r.fullgraph_error.line == 3
    assert r.fullgraph_error.reason.startswith("UserError:")


def test_nonzero_breaks_only_in_default_mode():
    r = run("""
        import torch

        def f(x):
            return torch.nonzero(x)
    """)
    assert sites(r) == [(4, "GB0036")]
    assert r.first_error.gb == "GB0036"
    assert r.fullgraph_error is None


def test_break_in_helper_is_attributed_to_the_helper():
    r = run("""
        def helper(x):
            print("hi")
            return x

        def f(x):
            x = x + 1
            return helper(x) * 2
    """)
    assert sites(r) == [(2, "GB0059")]
    assert r.first_error.line == 2 and r.fullgraph_error.line == 2


def test_logging_is_attributed_to_the_user_line():
    r = run("""
        import logging

        def f(x):
            x = x + 1
            logging.getLogger(__name__).info("x")
            return x * 2
    """)
    assert r.breaks, "logger call should break"
    assert {b.line for b in r.breaks} == {5}
    assert all(b.path.endswith(".py") and "logging" not in b.path for b in r.breaks)
    assert "GB0291" in {b.gb for b in r.breaks}  # the Logger.info call itself
    assert r.first_error.line == 5


def test_clean_function_has_no_breaks():
    r = run("""
        def f(x):
            return (x * 2).relu() + x.shape[0]
    """)
    assert r == OracleResult()


def test_two_prints_give_two_breaks():
    r = run("""
        def f(x):
            x = x + 1
            print("a")
            x = x * 2
            print("b")
            return x - 1
    """)
    assert sites(r) == [(3, "GB0059"), (5, "GB0059")]
    assert r.first_error.line == 3  # eogb stops at the first


def test_module_class_entry_in_eval_mode():
    r = run("""
        import torch

        class M(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(4, 4)

            def forward(self, x):
                if self.training:
                    print("training")
                y = self.lin(x)
                if y.sum() > 0:
                    y = y * 2
                return y
    """, "M")
    assert sites(r) == [(12, "GB0170")]  # not the print: the module is in eval mode


def test_args_expr_and_collect_lines():
    src = """
        import torch

        def f(x, n):
            y = x * n
            if n > 2:
                y = y + 1
            return y
    """
    r = run(src, args_expr="(torch.ones(3), 1)", collect_lines=True, device="cpu")
    assert r.breaks == [] and r.first_error is None and r.fullgraph_error is None
    (lines,) = r.executed_lines.values()
    assert lines == {4, 5, 7}  # line 6 not run: n is 1


def test_eager_exception_is_recorded_and_compiled_modes_still_run():
    r = run("""
        def f(x):
            y = x + 1
            raise ValueError("boom")
    """)
    assert r.exception == "ValueError: boom"
    # Dynamo reports the uncaught raise as an "Observed exception" break.
    assert r.first_error is not None and r.first_error.line == 3
    assert r.fullgraph_error is not None


def test_modes_subset_and_probe_on_a_plain_callable():
    import torch

    def f(x):
        print("x")
        return x + 1

    r = probe(f, (torch.randn(2),), modes=("default",))
    (brk,) = r.breaks
    assert os.path.samefile(brk.path, __file__)
    assert brk.gb == "GB0059"
    assert r.first_error is None and r.fullgraph_error is None  # those modes did not run
    with pytest.raises(ValueError):
        probe(f, (torch.randn(2),), modes=("bogus",))


def test_temp_file_is_removed():
    r = run("""
        def f(x):
            print(x.shape)
            return x
    """, modes=("default",))
    assert not os.path.exists(r.breaks[0].path)


def test_logging_state_is_restored_and_quiet(capfd):
    import logging

    run("""
        def f(x):
            print("p")
            return x
    """, modes=("default",))
    handlers = logging.getLogger("torch._dynamo").handlers
    assert not any(isinstance(h, oracle._Capture) for h in handlers)
    assert not any(oracle._drop_graph_break_records in h.filters for h in handlers)
    assert "Graph break in user code" not in capfd.readouterr().err
