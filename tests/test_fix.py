"""`tcl fix`: exact rewrites per pattern, safety levels, idempotence, and the CLI's file handling
(diff-only by default, atomic writes, files changed on disk, interrupted writes)."""

from __future__ import annotations

import os
import textwrap

import pytest

from tcl.cli import main
from tcl.config import Config
from tcl.engine import Analyzer
from tcl.fixes import SUGGESTION, UNSAFE
from tcl.fixing import apply as fix_apply
from tcl.fixing import writer
from tcl.fixing.apply import fix_source
from tcl.torch_version import installed

INSTALLED_TORCH = installed() or (0, 0)


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def run_fix(source: str, unsafe: bool = False, version: str | None = None, path: str = "model.py"):
    return fix_source(src(source), path, Analyzer(Config(torch_version=version)), unsafe=unsafe)


def fixed(source: str, unsafe: bool = False, version: str | None = None) -> str:
    result = run_fix(source, unsafe, version)
    assert result.errors == [] and result.warnings == []
    return result.fixed


# -- guards: print / logging / warnings (TCL101, TCL104, TCL105) -----------------------------

PRINT = """
import torch

@torch.compile
def fn(x):
    # show the input
    print("x:", x.shape)  # debug
    return x + 1
"""


def test_print_is_guarded():
    assert fixed(PRINT) == src("""
        import torch

        @torch.compile
        def fn(x):
            # show the input
            if not torch.compiler.is_compiling():
                print("x:", x.shape)  # debug
            return x + 1
        """)


def test_adjacent_guards_merge_and_logging_and_warnings():
    assert fixed("""
        import logging
        import warnings
        import torch

        logger = logging.getLogger(__name__)

        @torch.compile
        def fn(x):
            y = x.relu()
            print("y", y.shape)
            logger.info("step %s", y.norm())
            warnings.warn("slow path")
            return y
        """) == src("""
        import logging
        import warnings
        import torch

        logger = logging.getLogger(__name__)

        @torch.compile
        def fn(x):
            y = x.relu()
            if not torch.compiler.is_compiling():
                print("y", y.shape)
                logger.info("step %s", y.norm())
                warnings.warn("slow path")
            return y
        """)


def test_guard_before_torch_2_3_uses_dynamo_is_compiling():
    assert "if not torch._dynamo.is_compiling():\n        print(" in fixed(PRINT, version="2.2")


def test_import_torch_added_when_missing():
    assert fixed("""
        import torch.nn as nn

        class Block(nn.Module):
            def forward(self, x):
                print("hi", x.shape)
                return x * 2
        """) == src("""
        import torch.nn as nn
        import torch

        class Block(nn.Module):
            def forward(self, x):
                if not torch.compiler.is_compiling():
                    print("hi", x.shape)
                return x * 2
        """)


def test_only_whole_expression_statements_are_guarded():
    source = """
        import torch

        @torch.compile
        def fn(x):
            y = x + 1; print(y)
            if x.dim() > 1: print(x)
            answer = input("continue? ")
            return y
        """
    result = run_fix(source, unsafe=True)
    # no guard; a print of a tensor is not registered for reordering either (deferred, it would
    # show later in-place updates)
    assert result.fixed == src(source) and result.pending == []
    assert {f.code for f in result.remaining} == {"TCL101"}


def test_a_print_the_guard_cannot_take_is_registered_for_reordering():
    source = """
        import torch

        @torch.compile
        def fn(x):
            y = x + 1; print("step", x.dtype)
            return y
        """
    result = run_fix(source, unsafe=True)
    assert result.fixed == src(source).replace("import torch\n", "import torch\nimport warnings\n", 1).replace(
        "@torch.compile", "torch._dynamo.config.reorderable_logging_functions.update({print, warnings.warn})\n\n"
        "@torch.compile", 1)
    assert result.remaining == []


def test_guard_with_side_effecting_arguments_is_unsafe():
    source = """
        import torch

        @torch.compile
        def fn(x, names: list):
            print(names.pop())
            return x
        """
    result = run_fix(source)
    assert not result.changed and [f.safety for f in result.pending] == [UNSAFE]
    assert "if not torch.compiler.is_compiling():\n        print(names.pop())" in fixed(source, unsafe=True)


def test_debugger_removed_only_with_unsafe_fixes():
    source = """
        import torch

        @torch.compile
        def fn(x):
            if x.dim() == 2:
                breakpoint()
            import pdb; pdb.set_trace()
            return x
        """
    assert not run_fix(source).changed
    assert fixed(source, unsafe=True) == src("""
        import torch

        @torch.compile
        def fn(x):
            if x.dim() == 2:
                pass
            import pdb
            return x
        """)


def test_code_outside_compiled_regions_and_noqa_lines_untouched():
    source = """
        import torch

        def report(x):
            print(x)

        @torch.compile
        def fn(x):
            print(x.shape)  # noqa: TCL101
            return x + 1
        """
    result = run_fix(source, unsafe=True)
    assert not result.changed and result.before == [] and result.pending == []


# -- torch.where (TCL201) -------------------------------------------------------------------


def test_if_else_assignments_become_where():
    assert fixed("""
        import torch

        @torch.compile
        def fn(x):
            # pick a side
            if x.sum() > 0:  # the branch
                y = x.clamp(-1, 1)
            else:
                # negative
                y = x * 2
            return y
        """) == src("""
        import torch

        @torch.compile
        def fn(x):
            # pick a side
            # negative
            y = torch.where(x.sum() > 0, x.clamp(-1, 1), x * 2)  # the branch
            return y
        """)


def test_comments_inside_kept_expressions_are_not_duplicated():
    assert fixed("""
        import torch

        @torch.compile
        def fn(x):
            if x.sum() > 0:
                y = x.clamp(
                    -1,  # lower
                    1,
                )
            else:  # otherwise
                y = x
            return y
        """) == src("""
        import torch

        @torch.compile
        def fn(x):
            # otherwise
            y = torch.where(x.sum() > 0, x.clamp(
                -1,  # lower
                1,
            ), x)
            return y
        """)


def test_if_return_then_return_becomes_where():
    assert fixed("""
        import torch

        @torch.compile
        def fn(x):
            if x.abs().max() > 2:
                return x.clamp(-2, 2)
            return x
        """) == src("""
        import torch

        @torch.compile
        def fn(x):
            return torch.where(x.abs().max() > 2, x.clamp(-2, 2), x)
        """)


def test_if_else_returns_become_where():
    assert fixed("""
        import torch

        @torch.compile
        def fn(x):
            if not torch.isfinite(x).all():
                return x.nan_to_num()
            else:
                return -x
        """) == src("""
        import torch

        @torch.compile
        def fn(x):
            return torch.where(torch.logical_not(torch.isfinite(x).all()), x.nan_to_num(), -x)
        """)


def test_if_without_else_reassignment_becomes_where():
    assert fixed("""
        import torch

        @torch.compile
        def fn(x):
            if torch.isnan(x).any():
                x = x.nan_to_num()
            return x + 1
        """) == src("""
        import torch

        @torch.compile
        def fn(x):
            x = torch.where(torch.isnan(x).any(), x.nan_to_num(), x)
            return x + 1
        """)


def test_several_names_share_one_condition():
    assert fixed("""
        import torch

        @torch.compile
        def fn(x):
            if x.mean() < 0:
                a = -x
                b = x.abs()
            else:
                a = x
                b = x + 1
            return a, b
        """) == src("""
        import torch

        @torch.compile
        def fn(x):
            _tcl_cond = x.mean() < 0
            a = torch.where(_tcl_cond, -x, x)
            b = torch.where(_tcl_cond, x.abs(), x + 1)
            return a, b
        """)


def test_conditional_expression_becomes_where():
    assert fixed("""
        import torch

        @torch.compile
        def fn(x):
            return (x.relu() if not x.any() else x * 3)
        """) == src("""
        import torch

        @torch.compile
        def fn(x):
            return (torch.where(torch.logical_not(x.any()), x.relu(), x * 3))
        """)


def test_name_unbound_before_if_is_not_rewritten():
    source = """
        import torch

        @torch.compile
        def fn(x):
            if x.sum() > 0:
                y = x * 2
            return x
        """
    result = run_fix(source, unsafe=True)
    assert not result.changed and result.pending == []


def test_module_calls_in_branches_are_never_rewritten():
    source = """
        import torch
        from torch import nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.drop = nn.Dropout(0.1)

            def forward(self, x):
                if x.sum() > 0:
                    x = self.drop(x)
                return x
        """
    result = run_fix(source, unsafe=True)
    assert not result.changed and result.pending == []


UNSAFE_WHERE = [
    # another tensor in a branch: its shape may broadcast the result
    ("""
        import torch

        @torch.compile
        def fn(x, m):
            if (m == 0).any():
                x = x.masked_fill(m == 0, 0.0)
            return x
        """, "    x = torch.where((m == 0).any(), x.masked_fill(m == 0, 0.0), x)\n"),
    # a float constant promotes an integer tensor on both sides
    ("""
        import torch

        @torch.compile
        def fn(h):
            h = h.clamp(-6e4, 6e4) if torch.isinf(h).any() else h
            return h
        """, "    h = torch.where(torch.isinf(h).any(), h.clamp(-6e4, 6e4), h)\n"),
    # the condition is not provably 0-d
    ("""
        import torch

        @torch.compile
        def fn(x):
            if x[0] > 0:
                x = x * 2
            return x
        """, "    x = torch.where(x[0] > 0, x * 2, x)\n"),
    # `and` evaluates both operands
    ("""
        import torch

        @torch.compile
        def fn(x):
            if x.any() and x.sum() > 1:
                x = -x
            return x
        """, "    x = torch.where(torch.logical_and(x.any(), x.sum() > 1), -x, x)\n"),
]


@pytest.mark.parametrize("source, line", UNSAFE_WHERE)
def test_unsafe_where_needs_unsafe_fixes(source, line):
    result = run_fix(source)
    assert not result.changed
    assert [f.safety for f in result.pending] == [UNSAFE] and "UNSAFE" in result.pending[0].note
    assert line in result.pending_diffs[0].replace("+    ", "    ")
    assert line in fixed(source, unsafe=True)


@pytest.mark.parametrize("test", [
    "h.dtype == torch.float16 and not torch.isfinite(h).all()",  # transformers' fp16 clamp (BART, LED, NLLB-MoE)
    "self.training and h.isinf().any()",
    "not (self.training or h.isinf().any())",
])
def test_python_bool_operands_of_and_or_are_not_rewritten(test):
    # torch.logical_and(False, t) raises TypeError and `self.training.bool()` AttributeError:
    # found by scripts/fix_library.py, where the rewrite crashed BART's encoder layer.
    source = f"""
        import torch
        from torch import nn

        class Layer(nn.Module):
            def forward(self, h):
                if {test}:
                    h = torch.clamp(h, min=-60000, max=60000)
                return h
        """
    result = run_fix(source, unsafe=True)
    assert [f.code for f in result.before] == ["TCL201"]
    assert not result.changed and result.pending == []


def test_a_branch_that_slices_its_value_is_not_rewritten():
    # torch.where(c, x[..., :-1], x) broadcasts two different shapes: scripts/fix_library.py
    # found `if last_frame_pad_length > 0: frame = frame[..., :-last_frame_pad_length]` (EnCodec).
    source = """
        import torch

        @torch.compile
        def fn(x, pad):
            if pad.sum() > 0:
                x = x[..., :-1]
            return x
        """
    result = run_fix(source, unsafe=True)
    assert [f.code for f in result.before] == ["TCL201"]
    assert not result.changed and result.pending == []


def test_temporaries_are_hoisted_only_with_unsafe_fixes():
    source = """
        import torch

        @torch.compile
        def fn(w, mask):
            if (mask == 0).any():  # padding present
                min_value = torch.finfo(w.dtype).min
                w = w.masked_fill(mask[:, None, :] == 0, min_value)
            return w.softmax(-1)
        """
    assert not run_fix(source).changed
    assert fixed(source, unsafe=True) == src("""
        import torch

        @torch.compile
        def fn(w, mask):
            min_value = torch.finfo(w.dtype).min
            w = torch.where((mask == 0).any(), w.masked_fill(mask[:, None, :] == 0, min_value), w)  # padding present
            return w.softmax(-1)
        """)


def test_torch_cond_for_multi_statement_branches_is_unsafe():
    source = """
        import torch

        @torch.compile
        def fn(x, w):
            if x.sum() > 0:
                h = x @ w
                return h.relu()
            else:
                return x
        """
    result = run_fix(source)
    assert not result.changed and [f.title for f in result.pending] == ["lift the branches into torch.cond"]
    assert fixed(source, unsafe=True) == src("""
        import torch

        @torch.compile
        def fn(x, w):
            def _tcl_true_fn(x, w):
                h = x @ w
                return h.relu()
            def _tcl_false_fn(x, w):
                return x.clone()
            return torch.cond(x.sum() > 0, _tcl_true_fn, _tcl_false_fn, (x, w))
        """)


# -- .item() / float() / int() in a test (TCL203, TCL204) ------------------------------------


def test_item_comparison_becomes_tensor_comparison_and_where():
    assert fixed("""
        import torch

        @torch.compile
        def fn(x):
            if x.sum().item() > 0:
                y = x + 1
            else:
                y = x - 1
            return y
        """) == src("""
        import torch

        @torch.compile
        def fn(x):
            y = torch.where(x.sum() > 0, x + 1, x - 1)
            return y
        """)


@pytest.mark.parametrize("test, why", [
    ("float(x.max()) > 0.1", "not exact in float16"),       # float32(0.1) != 0.1
    ("int(x.sum()) > 0", "truncates"),                      # int(0.5) == 0
    ("x.max().item() > x.min().item()", "tensor's dtype"),  # compared in the tensors' dtype
])
def test_scalar_comparisons_that_can_differ_are_unsafe(test, why):
    source = f"""
        import torch

        @torch.compile
        def fn(x):
            if {test}:
                x = x * 2
            return x
        """
    result = run_fix(source)
    assert not result.changed and {f.safety for f in result.pending} == {UNSAFE}
    assert why in result.pending[0].note


def test_item_in_a_branch_that_cannot_be_rewritten_is_a_suggestion():
    source = """
        import torch

        @torch.compile
        def fn(x):
            if x.sum().item() > 0:
                y = x.sin()
                print(y)
                x = y
            return x
        """
    result = run_fix(source, unsafe=True)
    assert [f.safety for f in result.pending if f.code == "TCL203"] == [SUGGESTION]
    assert any("+    if x.sum() > 0:\n" in diff for diff in result.pending_diffs)


# -- asserts (TCL202, TCL201) ---------------------------------------------------------------


def test_assert_messages_become_constant_and_not_becomes_logical_not():
    assert fixed("""
        import torch

        @torch.compile
        def fn(x):
            assert (x > 0).all(), f"bad {x.shape} {x.min():.3f}"
            assert not torch.isnan(x).any(), f"nan in {x.shape}"
            assert x.all(), "bad %s" % (x.shape,)
            return x
        """) == src("""
        import torch

        @torch.compile
        def fn(x):
            assert (x > 0).all(), "bad {x.shape} {x.min():.3f}"
            assert torch.logical_not(torch.isnan(x).any()), "nan in {x.shape}"
            assert x.all(), "bad %s"
            return x
        """)


def test_assert_message_note_says_formatting_is_lost():
    result = run_fix("""
        import torch

        @torch.compile
        def fn(x):
            assert (x > 0).all(), f"bad {x.min()}"
            return x
        """)
    assert "placeholders" in result.applied[0].note


def test_assert_and_is_unsafe_and_variable_message_has_no_fix():
    source = """
        import torch

        @torch.compile
        def fn(x, msg: str):
            assert x.all() and x.any()
            assert x.all(), msg
            return x
        """
    result = run_fix(source)
    assert not result.changed and [f.safety for f in result.pending] == [UNSAFE]
    assert "    assert torch.logical_and(x.all(), x.any())\n    assert x.all(), msg\n" in fixed(source, unsafe=True)


# -- F.one_hot (TCL302) ---------------------------------------------------------------------


def test_one_hot_width_from_a_same_shape_loss():
    assert fixed("""
        import torch
        import torch.nn.functional as F

        @torch.compile
        def fn(logits, labels):
            target = F.one_hot(labels).float()
            return F.binary_cross_entropy_with_logits(logits, target)
        """) == src("""
        import torch
        import torch.nn.functional as F

        @torch.compile
        def fn(logits, labels):
            target = F.one_hot(labels, num_classes=logits.shape[-1]).float()
            return F.binary_cross_entropy_with_logits(logits, target)
        """)


def test_one_hot_without_derivable_width_is_only_a_suggestion():
    source = """
        import torch
        import torch.nn.functional as F

        @torch.compile
        def fn(labels):
            return F.one_hot(labels)
        """
    result = run_fix(source, unsafe=True)
    assert not result.changed
    assert [f.safety for f in result.pending] == [SUGGESTION]
    assert "+    return F.one_hot(labels, num_classes=...)\n" in result.pending_diffs[0]


# -- branches that only report (TCL201 with a print/log/warn body) ---------------------------


def test_reporting_branch_gets_the_guard_in_its_test():
    assert fixed("""
        import logging
        import torch

        logger = logging.getLogger(__name__)

        @torch.compile
        def fn(x):
            loss = x.sum()
            if not torch.isfinite(loss):  # rare
                logger.warning("non-finite loss")
                print("bad", loss.shape)
            if loss > 3 or loss < -3:
                print("outlier")
            return loss
        """) == src("""
        import logging
        import torch

        logger = logging.getLogger(__name__)

        @torch.compile
        def fn(x):
            loss = x.sum()
            if not torch.compiler.is_compiling() and not torch.isfinite(loss):  # rare
                logger.warning("non-finite loss")
                print("bad", loss.shape)
            if not torch.compiler.is_compiling() and (loss > 3 or loss < -3):
                print("outlier")
            return loss
        """)


@pytest.mark.parametrize("branch", [
    "if x.sum() > 0:\n        print('pos')\n    else:\n        print('neg')",   # an else: not only reporting
    "if x.sum() > 0:\n        print('pos')\n        x = x + 1",             # the body computes
])
def test_branches_that_do_more_than_report_are_not_guarded(branch):
    result = run_fix(f"import torch\n\n@torch.compile\ndef fn(x):\n    {branch}\n    return x\n", unsafe=True)
    assert "is_compiling() and" not in result.fixed


def test_a_data_check_that_raises_is_skipped_under_compile_only_with_unsafe_fixes():
    # a tensor operand before a Python one that cannot be moved first (`len(n)` of a value of
    # unknown type may raise): no in-graph check (tests/test_fix_checks.py)
    source = """
    import torch

    @torch.compile
    def fn(x, n):
        if torch.isnan(x).any() or len(n) != 2:
            raise ValueError("NaN input")
        return x
    """
    assert not run_fix(source).changed
    assert "if not torch.compiler.is_compiling() and (torch.isnan(x).any() or len(n) != 2):" in fixed(source, unsafe=True)


def test_a_python_operand_after_a_tensor_one_is_moved_first_then_checked_in_the_graph():
    # tcl/fixes/operand_order.py: `x.dim() != 2` is total and pure, so it goes first (safe);
    # the next round keeps the reordered check in the graph (tcl/fixes/checks.py)
    source = """
    import torch

    @torch.compile
    def fn(x):
        if torch.isnan(x).any() or x.dim() != 2:
            raise ValueError("NaN input")
        return x
    """
    result = run_fix(source)
    assert [f.title.split(" (")[0] for f in result.applied][:1] == ["test the Python operands of `or` first"]
    assert "elif x.dim() != 2 or torch.isnan(x).any():" in result.fixed
    assert "torch._assert_async(" in result.fixed
    assert result.remaining == []


# -- idempotence ------------------------------------------------------------------------------

ALL_SOURCES = [PRINT] + [s for s, _ in UNSAFE_WHERE] + [
    """
    import torch

    @torch.compile
    def fn(x):
        if x.sum().item() > 0:
            y = x + 1
        else:
            y = x - 1
        print(y)
        assert not torch.isnan(y).any(), f"nan {y.shape}"
        return y if y.mean() > 0 else -y
    """,
    """
    import torch

    @torch.compile
    def fn(x):
        outside = ~((x >= -1.0) & (x <= 1.0))
        out = torch.zeros_like(x)
        out[outside] = x[outside]
        y = x.clone()
        y[y != 0] = 1.0 / y[y != 0]
        return out, y
    """,
]


# -- TCL601: an f-string's reads, read into names before it ----------------------------------

FSTRING = """
import torch

@torch.compile
def summary(x):
    total = x.sum()
    text = f"total {total.item():.4f} peak {x.max().item():.3f} rows {x.shape[0]}"
    return x * 2, f"{float(total)} {x.tolist()}"
"""


def test_fstring_reads_are_read_into_names_before_it():
    # Fixes of one pass pick names apart: two f-strings may reuse one (each is assigned just
    # before the only line that reads it).
    assert fixed(FSTRING) == src("""
        import torch

        @torch.compile
        def summary(x):
            total = x.sum()
            total_value = total.item()
            value = x.max().item()
            text = f"total {total_value:.4f} peak {value:.3f} rows {x.shape[0]}"
            total_value = float(total)
            x_value = x.tolist()
            return x * 2, f"{total_value} {x_value}"
        """)


@pytest.mark.parametrize("statement", [
    'log(next_id(), f"{t.item()} {t.tolist()}")',  # a call runs before the f-string
    'texts = [f"{t.item()} {t.tolist()}" for _ in range(2)]',  # runs once per element
    'text = flag and f"{t.item()} {t.tolist()}"',  # may not run at all
    'text = f"{t.item()} {t.tolist()} {next_id()}"',  # another call would run after the reads
])
def test_fstring_reads_are_left_where_hoisting_could_reorder_effects(statement):
    source = src(f"""
        import torch

        def next_id():
            return 1

        @torch.compile
        def fn(x, log, flag):
            t = x.sum()
            {statement}
            return x
        """)
    result = fix_source(source, "model.py", Analyzer(Config()), unsafe=True)
    assert not [f for f in result.applied if f.title.startswith("read the f-string")]


def _three_calls(source: str) -> list:
    """Each call's (compiled, eager) strings, or the error the compiled call raised."""
    torch = pytest.importorskip("torch")
    namespace: dict = {}
    # Backend "eager": the values are exactly eager's, so the strings compare equal.
    exec(compile(source.replace("@torch.compile", '@torch.compile(backend="eager")'), "summary.py", "exec"),
         namespace)
    function = namespace["summary"]
    eager = getattr(function, "_torchdynamo_orig_callable", function)
    torch._dynamo.reset()
    outcomes = []
    try:
        for _ in range(3):
            x = torch.randn(4)
            try:
                outcomes.append((function(x)[1], eager(x)[1]))
            except Exception as exc:  # noqa: BLE001 -- the crash is what is measured
                outcomes.append(type(exc).__name__)
    finally:
        torch._dynamo.reset()
    return outcomes


@pytest.mark.skipif(not (2, 11) <= INSTALLED_TORCH <= (2, 14), reason="TCL601 is measured on 2.11-2.14")
def test_fstring_fix_removes_the_crash_on_the_compiler():
    """As written, the compiled function raises from its second call; fixed, it runs on every
    call and returns what eager returns."""
    before = _three_calls(src(FSTRING))
    assert isinstance(before[0], tuple) and all(isinstance(o, str) for o in before[1:]), before
    for compiled, eager in _three_calls(fixed(FSTRING)):
        assert compiled == eager


# -- TCL602: a size list compared with one holding a tensor, one dimension at a time -----------

SIZE_LIST = """
import torch

@torch.compile(backend="eager")
def check(x, mask):
    width = mask.sum()
    assert list(x.size()) == [x.shape[0], width], "bad shape"
    return x * 2
"""


def test_an_asserted_size_list_is_compared_one_dimension_at_a_time():
    assert fixed(SIZE_LIST) == src("""
        import torch

        @torch.compile(backend="eager")
        def check(x, mask):
            width = mask.sum()
            assert x.dim() == 2 and x.shape[0] == x.shape[0] and x.shape[1] == width, "bad shape"
            return x * 2
        """)


@pytest.mark.parametrize("statement", [
    'if list(x.size()) == [x.shape[0], width]:\n        x = x + 1',  # a branch: left as written
    'assert list(make().size()) == [x.shape[0], width]',  # the tensor is a call
    'assert list(x.size()) == [*x.shape[:1], width]',  # a starred element
    'assert list(x.size()) == [next_id(), width]',  # an element with an effect
    'assert list(x.size()) == (x.shape[0], width)',  # a list never equals a tuple: always False
])
def test_a_size_list_is_left_where_splitting_could_change_what_runs(statement):
    source = src(f"""
        import torch

        def next_id():
            return 1

        def make():
            return torch.ones(2, 3)

        @torch.compile
        def fn(x, mask):
            width = mask.sum()
            {statement}
            return x
        """)
    result = fix_source(source, "model.py", Analyzer(Config()), unsafe=True)
    assert not [f for f in result.applied if f.title.startswith("compare the sizes")]


# -- masked copies (TCL301): `out[m] = x[m]` -------------------------------------------------------


def test_a_masked_copy_becomes_a_select_over_whole_tensors():
    assert fixed("""
        import torch

        @torch.compile
        def spline(inputs, tail_bound=1.0):
            inside = (inputs >= -tail_bound) & (inputs <= tail_bound)
            outside = ~inside
            outputs = torch.zeros_like(inputs)
            outputs[outside] = inputs[outside]
            outputs = outputs + torch.tanh(inputs) * inside
            return outputs
        """) == src("""
        import torch

        @torch.compile
        def spline(inputs, tail_bound=1.0):
            inside = (inputs >= -tail_bound) & (inputs <= tail_bound)
            outside = ~inside
            outputs = torch.zeros_like(inputs)
            outputs.copy_(torch.where(outside, inputs, outputs))
            outputs = outputs + torch.tanh(inputs) * inside
            return outputs
        """)


@pytest.mark.parametrize("body", [
    # the source is rebound after the mask was made from it: another shape
    "mask = x > 0\n    out = torch.zeros_like(x)\n    x = y\n    out[mask] = x[mask]",
    # the source is another tensor
    "mask = x > 0\n    out = torch.zeros_like(x)\n    out[mask] = y[mask]",
    # a row mask: x[m] selects rows, torch.where would broadcast m along the last dim
    "mask = x[:, 0] > 0\n    out = torch.zeros_like(x)\n    out[mask] = x[mask]",
    # rebound later in the loop the copy runs in: another value on the next iteration
    "out = torch.zeros_like(x)\n    for _ in range(2):\n        mask = x > 0\n        out[mask] = x[mask]\n        x = y",
    # bound in one branch only: the parameter or the clone
    "if y.dim():\n        x = x.clone()\n    mask = x > 0\n    out = torch.zeros_like(x)\n    out[mask] = x[mask]",
    # a shape-changing in-place op in the function
    "mask = x > 0\n    out = torch.zeros_like(x)\n    out.unsqueeze_(0)\n    out[mask] = x[mask]",
    # a transcendental function: a vector lane and a scalar tail may round differently
    "mask = x > 0\n    out = torch.zeros_like(x)\n    out[mask] = torch.exp(x[mask])",
    # the mask has an effect: evaluated once instead of twice
    "out = torch.zeros_like(x)\n    out[torch.rand_like(x) > 0.5] = x[torch.rand_like(x) > 0.5]",
])
def test_a_masked_copy_is_left_where_the_shapes_or_values_may_differ(body):
    source = src(f"""
        import torch

        @torch.compile
        def fn(x, y):
            {body}
            return out
        """)
    result = fix_source(source, "model.py", Analyzer(Config()), unsafe=False)
    assert not [f for f in result.applied if f.title.startswith("copy into")], result.fixed


@pytest.mark.skipif(not (2, 13) <= INSTALLED_TORCH <= (2, 14), reason="TCL602 is measured on 2.13-2.14")
def test_size_list_fix_removes_the_crash_on_the_compiler():
    """As written, the compiled function raises from the call after the width changes; split,
    it runs on every call, as eager does, and fails the check exactly where eager does."""
    torch = pytest.importorskip("torch")

    def outcomes(source: str) -> list:
        namespace: dict = {}
        exec(compile(source, "size_list.py", "exec"), namespace)
        compiled = namespace["check"]
        eager = getattr(compiled, "_torchdynamo_orig_callable", compiled)
        torch._dynamo.reset()
        found = []
        try:
            for n, ones in ((3, 3), (4, 4), (5, 5), (6, 2)):
                args = (torch.randn(2, n), torch.ones(ones, dtype=torch.long))
                results = []
                for function in (compiled, eager):
                    try:
                        results.append(bool(torch.equal(function(*args), args[0] * 2)))
                    except (AssertionError, RuntimeError) as exc:
                        results.append(f"{type(exc).__name__}: {str(exc)[:20]}")
                found.append(tuple(results))
        finally:
            torch._dynamo.reset()
        return found

    before = outcomes(src(SIZE_LIST))
    assert before[0] == (True, True) and before[1][0] == "AssertionError: Expected bool, got F", before
    # Compiled, the split assert runs in the graph (torch._assert_async): a failing input raises
    # RuntimeError with the message, as the fix's note says; eager raises AssertionError as before.
    assert outcomes(fixed(SIZE_LIST)) == [(True, True)] * 3 + [("RuntimeError: bad shape",
                                                                 "AssertionError: bad shape")]


@pytest.mark.parametrize("unsafe", [False, True])
@pytest.mark.parametrize("source", ALL_SOURCES + [FSTRING, SIZE_LIST])
def test_fixing_twice_changes_nothing_the_second_time(source, unsafe):
    once = run_fix(source, unsafe)
    assert once.errors == []
    twice = fix_source(once.fixed, "model.py", Analyzer(Config()), unsafe=unsafe)
    assert twice.fixed == once.fixed and twice.applied == []


def test_fixing_shares_the_analyzer_without_disturbing_check():
    """The fixer re-walks functions with its own hooks; `tcl check` on the same analyzer after
    that must report exactly what a fresh analyzer reports (walk plans embed rule hooks)."""
    source = src(ALL_SOURCES[-1])
    analyzer = Analyzer(Config())
    fix_source(source, "model.py", analyzer)
    assert analyzer.check_source(source, "model.py").findings == Analyzer(Config()).check_source(source, "model.py").findings


def test_a_fix_producing_invalid_code_leaves_the_file_alone(monkeypatch):
    monkeypatch.setattr(fix_apply, "apply_fixes", lambda *a, **k: "def broken(:\n")
    result = run_fix(PRINT)
    assert result.fixed == src(PRINT)
    assert "fix produced invalid code" in result.errors[0].message


# -- the command line ---------------------------------------------------------------------------


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "model.py"
    path.write_text(src(PRINT))
    return path


def test_default_prints_a_diff_and_writes_nothing(model, capsys):
    before = model.read_bytes()
    assert main(["fix", "--no-config", str(model)]) == 1
    out = capsys.readouterr().out
    assert f"--- {model}\n+++ {model}\n" in out
    assert "+    if not torch.compiler.is_compiling():\n" in out
    assert model.read_bytes() == before


def test_diff_flag_writes_nothing(model, capsys):
    before = model.read_bytes()
    assert main(["fix", "--diff", "--no-config", str(model)]) == 1
    assert "+        print(" in capsys.readouterr().out
    assert model.read_bytes() == before


def test_apply_writes_then_nothing_is_left(model, capsys):
    assert main(["fix", "--apply", "--no-config", str(model)]) == 1  # files changed: exit 1, like ruff
    assert "if not torch.compiler.is_compiling():" in model.read_text()
    capsys.readouterr()
    assert main(["fix", "--apply", "--no-config", str(model)]) == 0
    assert main(["check", "--no-config", str(model)]) == 0
    assert not [p for p in os.listdir(model.parent) if p.endswith(".tcl-fix")]


def test_helpers_in_other_files_are_fixed_like_check_reports_them(tmp_path, capsys, monkeypatch):
    """`tcl check` reports a helper's print in utils.py (reached from model.py's forward);
    `tcl fix` over the package must fix it there, then both agree that nothing is left."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "utils.py").write_text(src("""
        def describe(t):
            print("shape", t.shape)
            return t
        """))
    (pkg / "model.py").write_text(src("""
        from torch import nn
        from .utils import describe

        class Model(nn.Module):
            def forward(self, x):
                return describe(x) * 2
        """))
    monkeypatch.chdir(tmp_path)
    assert main(["check", "--no-config", "pkg"]) == 1
    assert "pkg/utils.py:2:5: TCL101" in capsys.readouterr().out
    assert main(["fix", "--apply", "--no-config", "pkg"]) == 1
    assert "if not torch.compiler.is_compiling():" in (pkg / "utils.py").read_text()
    assert "import torch" in (pkg / "utils.py").read_text()
    capsys.readouterr()
    assert main(["check", "--no-config", "pkg"]) == 0


def test_select_limits_what_is_fixed(tmp_path, capsys):
    path = tmp_path / "m.py"
    path.write_text(src("""
        import logging
        import torch

        log = logging.getLogger(__name__)

        @torch.compile
        def fn(x):
            log.info("a")

            print("b")
            return x
        """))
    assert main(["fix", "--apply", "--no-config", "--select", "TCL101", str(path)]) == 1
    text = path.read_text()
    assert '    log.info("a")\n' in text and '        print("b")\n' in text


def test_unsafe_fixes_flag(tmp_path, capsys):
    path = tmp_path / "m.py"
    path.write_text(src(UNSAFE_WHERE[0][0]))
    assert main(["fix", "--apply", "--no-config", str(path)]) == 1  # a finding remains
    assert "torch.where" not in path.read_text()
    assert "not applied (unsafe, applied with --unsafe-fixes)" in capsys.readouterr().err
    assert main(["fix", "--apply", "--unsafe-fixes", "--no-config", str(path)]) == 1
    assert "torch.where" in path.read_text()


def test_file_changed_on_disk_is_skipped(model, monkeypatch, capsys):
    real = fix_apply.fix_source

    def racing(source, path, *args, **kwargs):
        result = real(source, path, *args, **kwargs)
        with open(path, "a") as handle:  # an editor saves while tcl is working
            handle.write("# edited\n")
        return result

    monkeypatch.setattr(fix_apply, "fix_source", racing)
    assert main(["fix", "--apply", "--no-config", str(model)]) == 2
    assert f"{model}: changed on disk since read, skipped" in capsys.readouterr().err
    assert model.read_text() == src(PRINT) + "# edited\n"
    assert not [p for p in os.listdir(model.parent) if p.endswith(".tcl-fix")]


@pytest.mark.parametrize("error", [OSError("disk full"), KeyboardInterrupt()])
def test_interrupted_write_leaves_the_old_file(model, monkeypatch, error, capsys):
    before = model.read_bytes()

    def interrupted(src_path, dst_path):
        raise error

    monkeypatch.setattr(os, "replace", interrupted)
    code = main(["fix", "--apply", "--no-config", str(model)])
    assert code == (2 if isinstance(error, OSError) else 130)
    assert model.read_bytes() == before
    assert sorted(os.listdir(model.parent)) == ["model.py"]


def test_write_atomic_refuses_a_stale_digest(tmp_path):
    path = tmp_path / "f.py"
    path.write_text("a = 1\n")
    with pytest.raises(writer.ChangedOnDisk):
        writer.write_atomic(str(path), b"a = 2\n", writer.digest(b"a = 0\n"))
    assert path.read_text() == "a = 1\n"
    writer.write_atomic(str(path), b"a = 2\n", writer.digest(b"a = 1\n"))
    assert path.read_text() == "a = 2\n"


def test_encoding_bom_and_line_endings_are_kept(tmp_path):
    path = tmp_path / "m.py"
    text = src(PRINT).replace("\n", "\r\n").replace('"x:"', '"é:"')
    path.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    assert main(["fix", "--apply", "--no-config", str(path)]) == 1
    data = path.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf") and b"\n" not in data.replace(b"\r\n", b"")
    assert "if not torch.compiler.is_compiling():\r\n" in data.decode("utf-8-sig")


def test_syntax_error_is_reported_and_file_untouched(tmp_path, capsys):
    path = tmp_path / "bad.py"
    path.write_text("import torch\ndef f(:\n")
    assert main(["fix", "--apply", "--no-config", str(path)]) == 2
    assert path.read_text() == "import torch\ndef f(:\n"
    assert "cannot parse" in capsys.readouterr().err


def test_clean_file_exits_0(tmp_path, capsys):
    path = tmp_path / "ok.py"
    path.write_text("import torch\n\n@torch.compile\ndef fn(x):\n    return x + 1\n")
    assert main(["fix", "--no-config", str(path)]) == 0
    assert capsys.readouterr().out == ""


def test_torch_imported_only_lazily_gets_a_top_level_import_and_only_as_unsafe():
    """transformers' import_utils.py imports torch inside functions and under TYPE_CHECKING:
    the guard needs `torch` at module level (NameError otherwise), and adding that import
    changes an optional dependency into a required one, so the fix is unsafe."""
    source = """
    import logging
    from typing import TYPE_CHECKING

    import torch.nn as nn

    if TYPE_CHECKING:
        import torch

    logger = logging.getLogger(__name__)

    def lazy():
        import torch
        return torch.ones(1)

    class M(nn.Module):
        def forward(self, x):
            logger.debug("x %s", x.shape)
            return x
    """
    assert not run_fix(source).changed
    fixed_source = fixed(source, unsafe=True)
    assert "\nimport torch\n" in fixed_source
    namespace = {}
    exec(compile(fixed_source, "model.py", "exec"), namespace)
    import torch
    namespace["M"]()(torch.ones(2))  # runs: `torch` is bound where the guard reads it


ORDERED_TEST = """
    import torch
    from torch import nn

    class M(nn.Module):
        def forward(self, x, n=None):
            if {test}:
                x = x.clamp(-1, 1).float()
            return x
    """


@pytest.mark.parametrize("test, moved", [
    ("torch.isnan(x).any() and x.dtype in (torch.float16, torch.bfloat16)",
     "x.dtype in (torch.float16, torch.bfloat16) and torch.isnan(x).any()"),
    ("torch.isinf(x).any() and self.training", "self.training and torch.isinf(x).any()"),
    ("(x > 0).all() or x.dim() == 1 or n is None", "x.dim() == 1 or n is None or (x > 0).all()"),
])
def test_python_operands_move_before_tensor_ones(test, moved):
    source = ORDERED_TEST.format(test=test)
    result = run_fix(source)
    assert f"if {moved}:" in result.fixed
    assert run_fix(result.fixed).changed is False  # a second run changes nothing


@pytest.mark.parametrize("test", [
    "x.add_(1).any() and x.dtype == torch.float16",    # the tensor operand writes in place
    "self.mask.any() and self.use_mask",                # self.use_mask may be missing: may raise
    "torch.isnan(x).any() and len(n) > 2",              # len() of a value of unknown type may raise
])
def test_operands_that_cannot_move_stay(test):
    source = ORDERED_TEST.format(test=test)
    assert f"if {test}:" in run_fix(source, unsafe=True).fixed
