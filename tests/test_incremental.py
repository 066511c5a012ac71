"""The editor's incremental re-check gives exactly what a fresh analysis gives.

tcl.incremental_parse must build the module libcst builds; an Analyzer carrying an EditMemo
must report, after every edit, the findings a fresh Analyzer reports for the same text.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import libcst as cst
import pytest

from tcl.config import Config
from tcl.engine import Analyzer
from tcl.incremental import EditMemo
from tcl.incremental_parse import StatementMemo, parse_incrementally

REPO = Path(__file__).resolve().parent.parent


def bench():
    spec = importlib.util.spec_from_file_location("lsp_bench", REPO / "bench" / "lsp_bench.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def real_sources() -> list[Path]:
    paths = sorted((REPO / "fixtures").glob("*.py")) + sorted((REPO / "tcl").rglob("*.py"))
    try:
        import importlib.util as util

        torch_spec = util.find_spec("torch")
        if torch_spec is not None and torch_spec.origin:
            paths += sorted((Path(torch_spec.origin).parent / "nn" / "modules").glob("*.py"))
    except (ImportError, ValueError):
        pass
    return paths


EDGE_CASES = {
    "block footer comments": "class A:\n    x = 1\n\n    # owned by the block\n\n# owned by f\ndef f():\n    pass\n",
    "comment after a simple statement": "x = 1\n    # indented, after a simple statement\ny = 2\n",
    "semicolons": "import os; import sys\nx = 1; y = 2\n\ndef f(): return 1\n",
    "no trailing newline": "import torch\n\ndef f(x):\n    return x",
    "header and footer": "# header\n\n\nimport torch\n\n\nx = 1\n# footer\n\n",
    "two-space indent later": "x = 1\nif x:\n  y = 2\nclass A:\n    pass\n",
    "decorators and comments": "@a\n# between\n@b\ndef f():\n    pass\n\n\n@c\nclass C:\n    pass\n",
    "continuation lines before the first block": "x = foo(\n      1)\n\nif x:\n  y = 2\n",
    "windows newlines": "import torch\r\n\r\ndef f(x):\r\n    return x\r\n",
}


@pytest.mark.parametrize("name", sorted(EDGE_CASES))
def test_edge_cases_parse_as_libcst_parses(name):
    source = EDGE_CASES[name]
    module = parse_incrementally(source, ast.parse(source), StatementMemo())
    assert module.deep_equals(cst.parse_module(source))
    assert module.code == source


def test_real_files_parse_as_libcst_parses_and_reuse_unchanged_statements():
    memo = StatementMemo()
    for path in real_sources():
        source = path.read_text()
        module = parse_incrementally(source, ast.parse(source), memo)
        assert module.deep_equals(cst.parse_module(source)), path
        assert module.code == source, path
    # An edit inside one function: only its statement is parsed again; the others are the same nodes.
    source = (REPO / "fixtures" / "attention.py").read_text()
    before = parse_incrementally(source, ast.parse(source), memo)
    edited = source.replace("def forward(self", "def forward(  self", 1)
    parsed = memo.parsed
    after = parse_incrementally(edited, ast.parse(edited), memo)
    assert memo.parsed == parsed + 1
    assert after.deep_equals(cst.parse_module(edited))
    shared = sum(a is b for a, b in zip(before.body, after.body))
    assert shared == len(before.body) - 1


def findings(report):
    return ([(f.code, f.line, f.col, f.end_line, f.end_col, f.message, f.severity) for f in report.findings],
            [str(e) for e in report.errors])


def test_edits_give_the_findings_of_a_fresh_analysis():
    lsp_bench = bench()
    text = lsp_bench.model_text()
    config = Config(torch_version="2.13")
    warm = Analyzer(config)
    warm.memo = EditMemo()
    path = "/nonexistent/model.py"
    assert findings(warm.check_source(text, path)) == findings(Analyzer(config).check_source(text, path))
    for number in range(15):
        text = lsp_bench.edited(text, number)
        assert findings(warm.check_source(text, path)) == findings(Analyzer(config).check_source(text, path)), number
    # Unchanged functions were not walked again.
    assert warm.memo.reused > 5 * warm.memo.walked / 15


def test_an_edit_that_changes_what_a_callee_returns_reaches_its_caller():
    before = (
        "import torch\n\n"
        "def helper(x):\n    return x * 2\n\n"
        "@torch.compile\ndef step(x):\n    y = helper(x)\n    if y.sum() > 0:\n        return y\n    return x\n"
    )
    after = before.replace("return x * 2", "return 3")  # the branch is now on a Python int
    config = Config(torch_version="2.13")
    warm = Analyzer(config)
    warm.memo = EditMemo()
    for text in (before, after, before):
        assert findings(warm.check_source(text, "m.py")) == findings(Analyzer(config).check_source(text, "m.py"))


INHERITED = (
    "import torch\nfrom torch import nn\n\n"
    "class Base(nn.Module):\n"
    "    def forward(self, x):\n"
    "        def inner(y):\n            return y.sum()\n"
    "        if inner(x) > 0:\n            return self.scale(x)\n"
    "        return x\n\n"
    "    def scale(self, x):\n        return x * 2\n\n"
    "class Child(Base):\n"
    "    def scale(self, x):\n        print(x)\n        return x * 3\n\n"
    "def unrelated(a):\n    return a\n"
)


def test_an_inherited_method_and_a_nested_def_are_not_walked_again_after_an_unrelated_edit():
    # Child runs Base.forward as a copy bound to Child, and forward calls its nested def: both
    # are FunctionInfo made by each analysis, which the memo keeps (EditMemo.derived).
    config = Config(torch_version="2.13")
    warm = Analyzer(config)
    warm.memo = EditMemo()
    texts = [INHERITED, INHERITED.replace("return a\n", "return a + 1\n"),
             INHERITED.replace("print(x)\n", "x = x + 0\n")]
    walked = []
    for text in texts:
        before = warm.memo.walked
        assert findings(warm.check_source(text, "m.py")) == findings(Analyzer(config).check_source(text, "m.py"))
        walked.append(warm.memo.walked - before)
    assert walked[0] > 0
    assert walked[1] == 0  # nothing a walk read changed
    assert walked[2] > 0  # Child.scale changed: it and its callers are walked again
    assert any(f.code == "TCL101" for f in warm.check_source(texts[0], "m.py").findings)
