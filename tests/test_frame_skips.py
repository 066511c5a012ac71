"""Breaks Dynamo cannot resume after (`Rule.resumes`), checked on the compiler.

Dynamo splits the graph and resumes after a break at a call, a subscript (not at a slice bound
read from a tensor), a comparison or a jump. A break anywhere else (loading an LSTM attribute, a formatted tensor, a method lookup on
a sparse tensor or a hook handle, `v in t`, `not t` as a value) makes it compile the graph
so far and run the rest of the frame eagerly ("Skipping the function and falling back to
eager"): nothing after it breaks or recompiles. Each INVALID example whose finding says so must
log that skip at its line, and a program with later breaks and recompile hazards shows tcl
hiding exactly what the compiler never reaches.
"""

from __future__ import annotations

import os
import textwrap

import pytest

os.environ["PYTHONBREAKPOINT"] = "0"

from tcl.config import Config
from tcl.rules import ALL_RULES
from tcl.runner import run

from source_modules import load_module
from test_rule_examples import INSTALLED, _settings, analyze, example_version

CANNOT_RESUME = "Dynamo cannot resume after it"

NOT_RESUMING = [
    pytest.param(rule, example, id=f"{rule.code}-invalid-{i}")
    for rule in ALL_RULES if rule.category == "graph-break"
    for i, example in enumerate(rule.INVALID)
    if any(CANNOT_RESUME in f.note for f in analyze(example.code, example_version(example), example.assume,
                                                         example.settings).findings)
]


def test_some_rules_do_not_resume():
    codes = {param.values[0].code for param in NOT_RESUMING}
    assert {"TCL201", "TCL206", "TCL210", "TCL402", "TCL408", "TCL410", "TCL413"} <= codes


@pytest.mark.parametrize("rule, example", NOT_RESUMING)
def test_the_compiler_skips_the_rest_of_the_frame(rule, example):
    if not example.applies_to(INSTALLED):
        pytest.skip(f"example is for torch {example.versions}")
    from tcl.oracle import probe_source

    report = analyze(example.code, example_version(example), example.assume, example.settings)
    lines = sorted(f.line + rule.runtime_line_offset for f in report.findings if CANNOT_RESUME in f.note)
    with _settings(example):
        result = probe_source(example.code, example.entry, example.args)
    assert result.exception is None
    assert set(lines) <= {skip.line for skip in result.frame_skips}


LATER = """
    import torch
    from torch import nn


    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.LSTM(4, 4)

        def forward(self, x):
            out, _ = self.rnn(x)
            if out.sum() > 0:
                out = out + 1
            return out.sum().item()


    def slice_bound(x, n):
        head = x[:, : n.sum()]  # a slice bound: Dynamo cannot resume after it (2.13, 2.14)
        if head.sum() > 0:
            head = head * 2
        return head


    def retain(x):
        y = x * 2
        y.retain_grad()
        if y.sum() > 0:
            y = y + 1
        return y


    def formatted(x):
        text = f"value={x}"
        k = len(text)
        if x.sum() > 0:
            x = x + 1
        return x + k


    def sparse(x):
        nnz = x.to_sparse()._nnz()
        if x.sum() > 0:
            x = x + 1
        return x * nnz


    def in_branch(x, n, flag: bool):
        if flag:
            x = x * x.to_sparse()._nnz()
            print("hidden")
        print("reached when flag is false")
        return x


    slice_step = torch.compile(slice_bound)
    retain_step = torch.compile(retain)
    formatted_step = torch.compile(formatted)
    sparse_step = torch.compile(sparse)
    branch_step = torch.compile(in_branch)
"""


def check(tmp_path, source, **options):
    path = tmp_path / "model.py"
    path.write_text(textwrap.dedent(source))
    result = run([str(path)], Config(torch_version="2.13", **options), jobs=1)
    assert not result.all_errors
    return sorted((f.code, f.line) for f in result.findings), result.findings


def test_what_follows_a_break_that_cannot_resume_is_hidden(tmp_path):
    found, findings = check(tmp_path, LATER)
    assert found == [("TCL101", 52), ("TCL206", 19), ("TCL402", 34), ("TCL408", 12),
                     ("TCL410", 42), ("TCL410", 50), ("TCL413", 27)]
    lstm = next(f for f in findings if f.code == "TCL408")
    assert "the rest of Encoder.forward() runs eagerly; 2 later breaks in it show once this one is fixed" in lstm.note
    # --show-hidden lists them; under fullgraph=True every break is an error where it stands.
    assert ("TCL201", 13) in check(tmp_path, LATER, show_hidden=True)[0]
    assert ("TCL201", 20) in check(tmp_path, LATER, show_hidden=True)[0]  # behind the slice bound
    assert ("TCL201", 13) in check(tmp_path, LATER, mode="fullgraph")[0]


@pytest.mark.parametrize("entry, args, lines", [
    ("Encoder", "(torch.randn(3, 2, 4),)", [12]),
    ("slice_bound", "(torch.randn(2, 4), torch.tensor([1, 1]))", [19]),  # tcl still reports TCL201 at 20
    ("retain", "(torch.randn(3, requires_grad=True),)", [27]),
    ("formatted", "(torch.randn(3),)", [35]),  # TCL402 breaks where the string is used
    ("sparse", "(torch.randn(3),)", [42]),
    ("in_branch", "(torch.randn(2, 4), torch.tensor([1, 1]), True)", [50]),
    ("in_branch", "(torch.randn(2, 4), torch.tensor([1, 1]), False)", [52]),
])
def test_the_compiler_logs_only_the_first_break(entry, args, lines):
    pytest.importorskip("torch")
    from tcl.oracle import probe_source

    result = probe_source(textwrap.dedent(LATER), entry, args)
    assert result.exception is None, result.exception
    assert sorted({b.line for b in result.breaks}) == lines


HAZARDS = """
    import torch


    def before(x, n):
        out = []
        for i in range(x.shape[0]):
            out.append(x[i] * i)
        y = torch.stack(out)
        return y * y.to_sparse()._nnz()


    def after(x, n):
        y = x * x.to_sparse()._nnz()
        out = []
        for i in range(x.shape[0]):
            out.append(y[i] * i)
        return torch.stack(out)


    before_step = torch.compile(before)
    after_step = torch.compile(after)
"""


def test_only_hazards_before_the_break_recompile(tmp_path):
    found, _ = check(tmp_path, HAZARDS)
    assert found == [("TCL410", 10), ("TCL410", 14), ("TCL505", 7)]


@pytest.mark.parametrize("entry, recompiles", [("before", True), ("after", False)])
def test_the_compiler_recompiles_only_before_the_break(tmp_path, entry, recompiles):
    torch = pytest.importorskip("torch")
    from tcl.verify.recompiles import count_compiles

    module = load_module(HAZARDS, tmp_path, "hazards")
    calls = [(torch.randn(size, 4), torch.tensor([1, 1])) for size in (3, 5, 7, 9)]
    compiles = count_compiles(getattr(module, entry), calls)
    assert (compiles > 2) is recompiles, compiles


AFTER_EXIT = """
    import torch


    def after_exit(x, n):
        if n.shape[0] == 1:
            return x
        out = []
        for i in range(x.shape[0]):
            out.append(x[i] * x[i].sum().item())
        return torch.stack(out)


    def exit_between(x, n):
        out = []
        for i in range(x.shape[0]):
            out.append(x[i] * i)
        if n.shape[0] == 1:
            return torch.stack(out)
        for row in out:
            row.add_(row.sum().item())
        return torch.stack(out)


    after_exit_step = torch.compile(after_exit)
    exit_between_step = torch.compile(exit_between)
"""


def test_a_skip_after_an_exit_hides_the_hazards_after_that_exit(tmp_path):
    # after_exit: the loop's trip count (line 9) and the break in its body (line 10) come after
    # the same early return, so every call that reaches the loop skips the frame. exit_between:
    # the early return (line 18) comes between the hazard (line 16) and the skip (line 21): a
    # call that returns there compiles the first loop and recompiles on each new size.
    found, _ = check(tmp_path, AFTER_EXIT)
    assert found == [("TCL203", 10), ("TCL203", 21), ("TCL505", 16)]


@pytest.mark.parametrize("entry, n, recompiles", [
    ("after_exit", [1, 1], False),
    ("exit_between", [1], True),
    ("exit_between", [1, 1], False),  # the same frame when the return is not taken: skipped
])
def test_the_compiler_skips_after_an_exit(tmp_path, entry, n, recompiles):
    torch = pytest.importorskip("torch")
    from tcl.verify.recompiles import count_compiles

    module = load_module(AFTER_EXIT, tmp_path, "after_exit")
    calls = [(torch.randn(size, 4), torch.tensor(n)) for size in (3, 5, 7, 9)]
    compiles = count_compiles(getattr(module, entry), calls)
    assert (compiles > 2) is recompiles, compiles


def _resume_probe(example) -> tuple[str, int] | None:
    """The example's code with `print("after")` right after its one `# BREAK` statement, and
    that statement's line; None where that says nothing (a return, a compound statement, a
    break inside a loop, with or try, which skip the frame anyway, or a lazily formatted string
    whose break is reported at the next line)."""
    import ast

    marks = example.expected_lines()
    if len(marks) != 1 or not example.default_breaks:
        return None
    tree = ast.parse(example.code)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    statement = next((n for n in ast.walk(tree) if isinstance(n, ast.stmt) and n.lineno == marks[0]
                      and n.end_lineno == marks[0] and not isinstance(n, ast.FunctionDef)), None)
    if statement is None or not isinstance(statement, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr)):
        return None
    node = parents.get(statement)
    while node is not None and not isinstance(node, ast.FunctionDef):
        if isinstance(node, (ast.For, ast.While, ast.With, ast.Try, ast.If)):
            return None
        node = parents.get(node)
    lines = example.code.splitlines()
    line = lines[marks[0] - 1]
    indent = line[: len(line) - len(line.lstrip())]
    return "\n".join(lines[:marks[0]] + [indent + 'print("after")'] + lines[marks[0]:]) + "\n", marks[0]


RESUMING = [
    pytest.param(rule, example, id=f"{rule.code}-invalid-{i}")
    for rule in ALL_RULES if rule.category == "graph-break" and rule.runtime_line_offset == 0
    for i, example in enumerate(rule.INVALID)
    if _resume_probe(example) is not None
    and not any(CANNOT_RESUME in f.note for f in analyze(example.code, example_version(example), example.assume,
                                                             example.settings).findings)
]


@pytest.mark.parametrize("rule, example", RESUMING)
def test_the_compiler_resumes_where_tcl_says_it_does(rule, example):
    """The converse of the test above: where tcl keeps reporting after a break, the compiler
    resumes there, so a print right after the break breaks too (a slice bound read from a tensor
    did not: TCL206 says so since session 28)."""
    if not example.applies_to(INSTALLED):
        pytest.skip(f"example is for torch {example.versions}")
    from tcl.oracle import probe_source

    code, line = _resume_probe(example)
    with _settings(example):
        result = probe_source(code, example.entry, example.args)
    assert result.exception is None
    assert line + 1 in {b.line for b in result.breaks}, "the rest of the frame ran eagerly"
