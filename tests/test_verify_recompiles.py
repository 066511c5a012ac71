"""`tcl verify`'s recompile exploration: every dimension varied, persistent recompiles explained.

One real `tcl verify` run (child process, CPU, eager backend) over a small module whose examples
each show one case; about 10-15 s on 2 cores.  The rest are pure functions of tcl/verify/explain.py
and tcl/verify/report.py, fed records shaped like the child's.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tcl.verify import explain, report

ROOT = Path(__file__).resolve().parent.parent
torch = pytest.importorskip("torch")

MODULE = textwrap.dedent('''
    import torch

    SIZES = [4, 5, 6, 7, 8, 9, 10]


    @torch.compile
    def lookup(x):
        i = SIZES.index(x.shape[1])
        return x * i


    @torch.compile
    def halves(x):
        b, n = x.shape
        return x.view(b, n // 2, 2).sum(-1)


    @torch.compile(dynamic=False)
    def scale(x):
        b = x.size(0)
        return x * 2 / b


    @torch.compile
    def branch(x):
        if x.shape[1] == 8:
            return x * 2
        return x + 1


    class Stepper(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.step = 0

        def forward(self, x):
            scale = 1.0 / (self.step + 1)
            self.step += 1
            return x * scale


    @torch.compile
    def summary(x):
        return x * 2, f"total {x.sum().item():.3f} peak {x.max().item():.3f}"


    def tcl_examples():
        return [
            (lookup, (torch.ones(2, 4),), {}),
            (halves, (torch.ones(2, 4),), {}),
            (scale, (torch.ones(2, 3),), {}),
            (branch, (torch.ones(2, 6),), {}),
            (torch.nn.Linear(4, 3), (torch.ones(2, 4),), {}),
            (Stepper(), (torch.ones(2, 4),), {}),
            (summary, (torch.ones(2, 4),), {}),
        ]
''')


def line_of(text: str) -> int:
    return next(n for n, line in enumerate(MODULE.splitlines(), 1) if text in line)


# The lines each report names: the specialising line, the decorator (a dynamic=False frame starts
# there), the branch on the size.
LOOKUP_LINE, SCALE_LINE, BRANCH_LINE = line_of("SIZES.index"), line_of("dynamic=False"), line_of("== 8")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    where = tmp_path_factory.mktemp("recompiles")
    (where / "shapes.py").write_text(MODULE)
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    proc = subprocess.run(
        [sys.executable, "-m", "tcl", "verify", "shapes.py", "--device", "cpu", "--backend", "eager",
         "--format", "json", "--no-config"],
        cwd=where, env=env, capture_output=True, text=True, timeout=240)
    assert proc.stdout.strip(), proc.stderr
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def groups_in(report_, function):
    return [g for g in report_["persistent_recompiles"] if g["function"] == function]


def test_list_index_of_a_size_is_a_persistent_recompile_tcl505_predicted(run):
    _, rep, _ = run
    (group,) = groups_in(rep, "lookup")
    assert (group["path"], group["line"]) == ("shapes.py", LOOKUP_LINE)
    assert group["phase"] == "dim 1" and group["guard"] == "tensor 'x' size mismatch at index 1"
    assert group["cause"]["kind"] == "specialised"
    assert "SIZES.index(x.shape[1])" in group["cause"]["text"]
    assert [(p["code"], p["line"]) for p in group["predicted_by"]] == [("TCL505", LOOKUP_LINE)]
    assert not group["missed"]
    assert "replace SIZES.index(size)" in group["remedy"] and "bucket sizes" in group["remedy"]
    assert "mark_dynamic(x, 1)" in group["remedy"]
    limit = torch._dynamo.config.recompile_limit
    assert group["limit_note"] == (f"this frame recompiles on every new size of dim 1 and falls back to "
                                   f"eager after {limit} (torch._dynamo.config.recompile_limit)")
    (finding,) = [f for f in rep["findings"] if f["code"] == "TCL505"]
    assert finding["line"] == LOOKUP_LINE and finding["status"] == "confirmed"
    assert finding["recompile"]["trigger"].startswith("dim 1 ")


def test_a_counter_recompiles_on_every_call_whatever_the_phase_varies(run):
    """self.step moves on every call: the recompiles the batch, dim and train/eval phases run
    into are the counter's, reported once as such, not as "on batch 3->4"."""
    _, rep, _ = run
    (group,) = groups_in(rep, "forward")
    assert group["line"] == line_of("scale = 1.0 / (self.step + 1)")
    assert group["triggers"] == ["every call (self.step changed)"] and group["phase"] == "every call"
    assert group["cause"]["kind"] == "module int" and group["every_call"]
    steps = [r for r in rep["recompiles"] if r["function"] == "forward"]
    counter = [r for r in steps if r["varied"] == "value of self.step"]
    assert len(counter) >= 3 and all(r["persistent"] for r in counter)
    # What is left is automatic dynamic shapes at the batch's first change, by design.
    assert all(r["expected"] and not r["persistent"] for r in steps if r not in counter)


def test_a_compiled_call_that_raises_where_eager_runs_confirms_tcl601(run):
    """The f-string's second read: the first call runs; a call whose sums differ (the batch
    grows) raises in the compiled function only, and verify places it on the f-string's line."""
    _, rep, _ = run
    (finding,) = [f for f in rep["findings"] if f["code"] == "TCL601"]
    assert finding["status"] == "confirmed" and finding["kind"] == "crash"
    assert finding["line"] == line_of('f"total {x.sum().item():.3f}')
    assert "TypeError" in finding["runtime_reason"] or "InternalTorchDynamoError" in finding["runtime_reason"]
    crashes = [c for c in rep["crashes"] if c["line"] == finding["line"]]  # one per phase that met it
    assert crashes and all(c["findings"] == [f"TCL601@{finding['line']}"] and c["call"] >= 2 for c in crashes)


def test_an_error_eager_python_raises_too_is_not_a_crash():
    from tcl.verify.recompiles import Phase, compiled_crash

    def target(x):
        return x.view(2, 2)  # the grown input has no 2x2 view, eagerly either

    steps = [("first call", lambda: ((torch.ones(4),), {})), ("batch 4->5", lambda: ((torch.ones(5),), {}))]
    phase = Phase("batch", "batch size", steps)
    here = os.path.abspath(__file__)
    failure = (1, "batch 4->5: RuntimeError", [(here, 10)])
    assert compiled_crash(phase, failure, [here], target) is None
    steps[1] = ("same inputs again", lambda: ((torch.ones(4),), {}))
    assert compiled_crash(phase, failure, [here], target)["line"] == 10


def test_views_of_a_size_recompile_once_only(run):
    _, rep, _ = run
    assert groups_in(rep, "halves") == []
    (example,) = [e for e in rep["examples"] if e["name"].endswith("halves")]
    # n + 1 is odd and view(b, n // 2, 2) raises: dim 1 is varied with sizes that keep n even.
    assert example["varied"] == ["batch", "dim 1"] and example["not_varied"] == []
    halves = [r for r in rep["recompiles"] if r["function"] == "halves"]
    assert [r["trigger"] for r in halves if r["phase"] == "dim 1"] == ["dim 1 4->8"]
    assert all(r["expected"] and not r["persistent"] for r in halves)


def test_dynamic_false_input_guard_names_mark_dynamic(run):
    _, rep, _ = run
    groups = {g["phase"]: g for g in groups_in(rep, "scale")}
    assert set(groups) == {"batch", "dim 1"}
    for phase, dim in (("batch", 0), ("dim 1", 1)):
        group = groups[phase]
        assert group["line"] == SCALE_LINE and group["cause"]["kind"] == "static"
        assert f"torch._dynamo.mark_dynamic(x, {dim})" in group["remedy"]
        assert "drop dynamic=False" in group["remedy"] and "dynamic=True" in group["remedy"]
        assert [p["code"] for p in group["predicted_by"]] == ["TCL503"]
        assert group["every_new_value"] and group["count"] == 3
    (finding,) = [f for f in rep["findings"] if f["code"] == "TCL503"]
    assert finding["status"] == "confirmed"


def test_a_branch_on_an_exact_size_is_missed(run):
    rc, rep, stderr = run
    (group,) = groups_in(rep, "branch")
    assert (group["line"], group["guard"], group["triggers"]) == (BRANCH_LINE, "x.size()[1] != 8", ["dim 1 7->8"])
    assert group["missed"] and group["predicted_by"] == [] and group["in_checked_file"]
    assert group["cause"]["source"] == "if x.shape[1] == 8:"
    assert "torch.where" in group["remedy"]
    assert not group["every_new_value"]  # 9 reuses the dynamic graph: one extra graph, not one per size
    assert rc == 1, stderr  # a missed recompile in a checked file is a problem, like a missed break


def test_a_dimension_that_cannot_vary_is_dropped_with_a_note(run):
    _, rep, _ = run
    (example,) = [e for e in rep["examples"] if e["name"].endswith("Linear")]
    assert example["status"] == "ok" and example["varied"] == ["batch", "lists and train/eval"]
    (note,) = example["not_varied"]
    assert note["what"] == "dim 1" and "4->5" in note["why"] and "and with sizes 8, 12, 16" in note["why"]


def test_text_blocks():
    group = {
        "path": "m.py", "line": 9, "guard": "tensor 'x' size mismatch at index 1", "frame_name": "f()",
        "triggers": ["dim 1 5->6", "dim 1 6->7"], "examples": ["m.py[0] f"],
        "cause": {"kind": "specialised", "text": "`i = SIZES.index(n)` needs the size", "source": None},
        "predicted_by": [], "requested": False, "remedy": "replace SIZES.index(size) with tensor code",
        "limit_note": "this frame recompiles on every new size of dim 1 and falls back to eager after 8 "
                      "(torch._dynamo.config.recompile_limit)",
    }
    out = io.StringIO()
    report.write_persistent([group, dict(group, predicted_by=[{"code": "TCL505", "line": 9, "how": "line"}],
                                         limit_note=None)], out)
    assert out.getvalue().splitlines() == [
        "m.py:9: recompile tensor 'x' size mismatch at index 1 in f() on dim 1 5->6, dim 1 6->7 [m.py[0] f]",
        "    cause: `i = SIZES.index(n)` needs the size",
        "    missed: no rule flags this line",
        "    remedy: replace SIZES.index(size) with tensor code",
        "    this frame recompiles on every new size of dim 1 and falls back to eager after 8 "
        "(torch._dynamo.config.recompile_limit)",
        "m.py:9: recompile tensor 'x' size mismatch at index 1 in f() on dim 1 5->6, dim 1 6->7 [m.py[0] f]",
        "    cause: `i = SIZES.index(n)` needs the size",
        "    predicted by TCL505",
        "    remedy: replace SIZES.index(size) with tensor code",
    ]


@pytest.mark.parametrize("reason, cause, wanted", [
    # a size that is 0 or 1 in the compiled graph: mark_unbacked
    ("3/1: tensor 'mask' size mismatch at index 0. expected 1, actual 2", {"kind": "frame"},
     "torch._dynamo.mark_unbacked(mask, 0)"),
    # no line seen to fix it: mark_dynamic / maybe_mark_dynamic, and the dynamic=True trade-off
    ("0/2: tensor 'x' size mismatch at index 2. expected 5, actual 6", {"kind": "frame"},
     "torch._dynamo.maybe_mark_dynamic(x, 2)"),
    # range(size), str(size), a dict keyed by a size
    ("0/2: tensor 'x' size mismatch at index 1. expected 5, actual 6",
     {"kind": "specialised", "use": "range", "source": "for i in range(n):"}, "vectorise the loop"),
    ("0/2: tensor 'x' size mismatch at index 1. expected 5, actual 6",
     {"kind": "specialised", "use": "string", "source": "name = str(n)"}, "build the string outside"),
    ("0/2: tensor 'x' size mismatch at index 1. expected 5, actual 6",
     {"kind": "specialised", "use": "lookup", "source": "s = TABLE[n]"}, "index a tensor instead of the Python TABLE"),
    # an int that crosses a graph break
    ("5/1: n_accept == 2", {"kind": "guard", "use": "value", "source": "return t[:, : n_accept + 1]"},
     "n_accept is a Python int baked into the graph"),
])
def test_remedies(reason, cause, wanted):
    assert wanted in explain.remedy({"reason": reason}, cause)


def test_a_module_int_attribute_is_explained_as_one():
    """Dynamo's hint names a module's int attribute: the cause is the counter, not a size, and the
    remedy is a buffer or the setting `tcl fix` inserts (allow_unspec_int_on_nn_module)."""
    reason = ("0/1: self.calls == 1 # if self.calls % 4 == 0: # m.py:12 in forward (HINT: torch.compile "
              "considers integer attributes of the nn.Module to be static. ...)")
    cause = explain._cause({"reason": reason, "guard_path": "m.py", "guard_line": 12,
                            "guard_source": "if self.calls % 4 == 0:"})
    assert cause["kind"] == "module int" and cause["line"] == 12
    assert "reads self.calls, an int attribute of the module" in cause["text"]
    fix = explain.remedy({"reason": reason}, cause)
    assert "register_buffer('calls'" in fix and "allow_unspec_int_on_nn_module = True" in fix


def test_use_of_a_specialising_line_and_guard_summary():
    assert [explain._use_of(s) for s in ("i = SIZES.index(x.shape[1])", "for i in range(1, seq_len):",
                                         "name = str(x.size(1))", "w = TABLE.get(x.shape[1], 1.0)",
                                         "if x.shape[1] == 8:")] == ["index", "range", "string", "lookup", "compare"]
    assert [explain._use_of(s) for s in ("parts = x.chunk(x.size(0))", "keep = list(range(n))",
                                         "w = [1.0] * x.shape[1]", "if seq_len in SEEN:")] == \
        ["chunk", "list", "list", "member"]
    cause = explain._cause({"reason": "1/1: len(___stack0) == 5 # for v in firsts: # m.py:8 in f",
                            "guard_path": "m.py", "guard_line": 8, "guard_source": "    for v in firsts:"})
    assert cause["use"] == "length" and "whose length changes between calls" in cause["text"]
    assert "vectorise the loop" in explain.remedy({"reason": "1/1: len(___stack0) == 5"}, cause)
    for use in ("chunk", "list", "member", "length"):
        assert explain._rewrite(use, "") and use in explain._USE_TEXT
    assert explain.guard_summary("0/1: tensor 'x' size mismatch at index 1. expected 5, actual 6") == \
        "tensor 'x' size mismatch at index 1"
    assert explain.guard_summary("2/1: ___stack0 == 'tensor([[ 1.5009, 0.7109, -0.0428' # s = str(h) # m.py:3") == \
        "___stack0 == 'tensor([[ 1.5009, 0.7109...'"


def test_exploration_stops_when_its_share_of_the_timeout_is_spent():
    import time

    from tcl.verify import recompiles

    job = {"device": "cpu", "mode": "default", "backend": "eager", "timeout": 10.0,
           "example_started": time.monotonic() - 7.0}  # 70% spent: past the 60% share
    found, error, notes = recompiles.explore(lambda x: x * 2, (torch.ones(2, 3),), {}, job, "eager")
    assert (found, error, notes["varied"]) == ([], None, [])
    assert notes["stopped"].startswith("time limit: not varied batch, dim 1")
    assert "of the 10s per-example timeout spent" in notes["stopped"]


def test_a_trace_keeps_more_than_dynamos_64_compilation_records():
    from torch._dynamo import utils

    from tcl.verify.compile_trace import CompileTrace

    functions = []
    for i in range(70):  # 70 code objects: 70 compilations
        scope = {}
        exec(f"def f{i}(x):\n    return x + {i}\n", scope)
        functions.append(scope[f"f{i}"])
    torch._dynamo.reset()
    with CompileTrace() as trace:
        for fn in functions:
            trace.next_call()
            torch.compile(fn, backend="eager")(torch.ones(2))
    torch._dynamo.reset()
    assert len(trace.compilations) == 70
    assert utils._compilation_metrics.maxlen == utils.DEFAULT_COMPILATION_METRICS_LIMIT


def test_a_guard_is_placed_on_its_own_line_not_the_outer_frame(tmp_path):
    """A hook's lambda grows a list the forward's layer call runs: Dynamo quotes the lambda's line
    (85) and prints the user stack outermost first (91, the forward): the cause is line 85."""
    from tcl.verify import recompiles

    path = str(tmp_path / "lib.py")
    reason = ("0/2: len(self.captured) == 2 # self.layer.register_forward_hook(lambda m, a, out: "
              f"self.captured.append(out)) # {tmp_path.name}/lib.py:85 in <lambda> User stack trace: "
              f'File "{path}", line 91, in forward return self.layer(x)')
    origin = recompiles._guard_origin(reason, path, [path])
    assert origin["guard_line"] == 85 and origin["guard_path"] == os.path.abspath(path)
    # With no short frame, the innermost user frame of the stack.
    stack = (f'0/0: n == 2 # y = x * n # User stack trace: File "{path}", line 91, in forward '
             f'File "{path}", line 40, in helper')
    assert recompiles._guard_origin(stack, path, [path])["guard_line"] == 40


def test_a_value_the_calls_change_is_explained_as_state_not_as_a_size():
    """A float accumulator (AverageMeter's self.sum) or a timestamp read after a break fails its
    guard on identical inputs: the cause says so, the remedy is a tensor or moving it out, and
    guards that differ only in the float compared are one problem."""
    rec = {"reason": "3/1: ___stack0.__self__.sum == 86.66466569900513 # self.sum += val * n # m.py:26 in update",
           "guard_path": "m.py", "guard_line": 26, "guard_source": "self.sum += val * n",
           "trigger": "every call (a value it reads changed)", "phase": "every call", "on_same_inputs": True}
    cause = explain._cause(rec)
    assert cause["kind"] == "state" and "the calls themselves change" in cause["text"]
    assert "needs the size" not in cause["text"]
    assert "keep the value in a tensor updated in place" in explain.remedy(rec, cause)
    assert explain._group_key("x.sum == 0.0") == explain._group_key("x.sum == 86.66466569900513")
    assert recompiles_subject("0/2: len(self.captured) == 2 # ...") == "len(self.captured)"


def recompiles_subject(reason):
    from tcl.verify import recompiles

    return recompiles._guard_subject(reason)


def test_a_counter_finding_is_confirmed_by_its_functions_every_call_recompile(tmp_path):
    """The guard Dynamo reports may name another value the call moves (`self.sum`, a line above
    the meter's `self.count += n`): a TCL501 finding matches a recompile on every call whose
    guard points into its own function, and only such a rule (TCL505's sizes do not)."""
    from tcl.verify.common import STATE_PHASE
    from tcl.verify.matching import FileShape, _norm, _recompile_matches

    source = tmp_path / "meter.py"
    source.write_text(textwrap.dedent('''
        class Meter:
            def update(self, val, n=1):
                self.sum += val * n
                self.count += n


        def other(x):
            return x
    ''').lstrip("\n"))
    path = _norm(str(source))
    rec = {"path": "train.py", "line": 40, "phase": STATE_PHASE, "expected": False,
           "reason": "1/0: ___stack0.__self__.sum == 0.0 # self.sum += val * n # meter.py:3 in update"}
    shapes = {}

    def shape(p):
        return shapes.setdefault(p, FileShape(p))

    assert _recompile_matches(path, 4, rec, shape, persistent=True, state=True)
    assert not _recompile_matches(path, 4, rec, shape, persistent=True, state=False)
    assert not _recompile_matches(path, 8, rec, shape, persistent=True, state=True)  # another function
    assert not _recompile_matches(path, 4, dict(rec, phase="batch"), shape, persistent=True, state=True)
