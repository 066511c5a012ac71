"""The flake8 plugin (plugins/tcl_flake8.py) as users run it: `flake8` in a subprocess.

`flake8 --select TCL PATHS` must print exactly what `tcl check PATHS` prints.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"

HAZARD = textwrap.dedent('''
    import torch

    @torch.compile
    def step(x):
        print(x.shape)
        if x.sum() > 0:
            x = x * 2
        return x
''')

# Cross-file: Model is an nn.Module only through base.py, and utils.py (no "torch" in it) is
# reported because Model.forward calls it.
CROSS_FILE = {
    "pkg/__init__.py": "",
    "pkg/base.py": "import torch.nn as nn\n\n\nclass Base(nn.Module):\n    pass\n",
    "pkg/utils.py": "def log_it(x):\n    print(x)\n    return x\n",
    "pkg/model.py": textwrap.dedent('''\
        from .base import Base
        from .utils import log_it


        class Model(Base):
            def forward(self, x):
                if x.sum() > 0:
                    x = x * 2
                return log_it(x)
    '''),
}


def run(args, cwd, stdin=None):
    return subprocess.run(args, capture_output=True, text=True, cwd=cwd, input=stdin, timeout=300)


def flake8(*args, cwd=REPO, stdin=None):
    return run([sys.executable, "-m", "flake8", "--tcl-no-cache", *args], cwd, stdin)


def tcl(*args, cwd=REPO):
    return run([sys.executable, "-m", "tcl", "check", "--no-cache", "--format", "flake8", *args], cwd)


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_plugin_is_registered():
    result = run([sys.executable, "-m", "flake8", "--version"], REPO)
    assert result.returncode == 0
    assert "tcl: " in result.stdout


def test_flake8_reports_exactly_what_tcl_check_reports_on_fixtures():
    expected = tcl("fixtures/")
    assert expected.returncode == 1 and expected.stdout
    got = flake8("--select", "TCL", "-j", "2", "fixtures/")  # forked workers inherit the analysis
    assert got.returncode == 1, got.stderr
    assert got.stdout == expected.stdout


def test_columns_are_not_off_by_one(tmp_path):
    (tmp_path / "m.py").write_text(HAZARD)
    got = flake8("--select", "TCL", "m.py", cwd=tmp_path).stdout.splitlines()
    assert got[0].startswith("m.py:6:5: TCL101 print() inside a compiled region breaks the graph [GB0059] -> ")
    assert got[1].startswith("m.py:7:8: TCL201 ")
    assert got == tcl("m.py", cwd=tmp_path).stdout.splitlines()


def test_cross_file_findings_match_tcl_check(tmp_path):
    write_tree(tmp_path, CROSS_FILE)
    utils = tmp_path / "pkg/utils.py"  # CRLF: flake8 reads it with universal newlines
    utils.write_bytes(utils.read_bytes().replace(b"\n", b"\r\n"))
    expected = tcl("pkg", cwd=tmp_path).stdout
    assert "pkg/utils.py:2:5: TCL101" in expected and "pkg/model.py:7:12: TCL201" in expected
    assert flake8("--select", "TCL", "-j", "1", "pkg", cwd=tmp_path).stdout == expected
    dotted = flake8("--select", "TCL", cwd=tmp_path).stdout  # flake8 names files ./pkg/...
    assert dotted == "".join("./" + line + "\n" for line in expected.splitlines())


def test_stdin_buffer_is_analysed_with_its_directory(tmp_path):
    write_tree(tmp_path, CROSS_FILE)
    source = (tmp_path / "pkg/model.py").read_text()
    got = flake8("--select", "TCL", "--stdin-display-name", "pkg/model.py", "-", cwd=tmp_path, stdin=source)
    assert got.stdout.startswith("pkg/model.py:7:12: TCL201 "), got.stdout + got.stderr
    plain = flake8("--select", "TCL", "-", cwd=tmp_path, stdin=HAZARD)
    assert plain.stdout.startswith("stdin:6:5: TCL101 ")


def test_noqa_and_selection_are_flake8s(tmp_path):
    (tmp_path / "m.py").write_text(HAZARD.replace("print(x.shape)", "print(x.shape)  # noqa: TCL101"))
    (tmp_path / "n.py").write_text(HAZARD)
    got = flake8("--select", "TCL", "m.py", "n.py", cwd=tmp_path).stdout.splitlines()
    assert [line.split(" ")[:2] for line in got] == [
        ["m.py:7:8:", "TCL201"], ["n.py:6:5:", "TCL101"], ["n.py:7:8:", "TCL201"],
    ]
    extended = flake8("--select", "F", "--extend-select", "TCL1", "n.py", cwd=tmp_path).stdout
    assert "TCL101" in extended and "TCL201" not in extended
    ignored = flake8("--select", "TCL", "--ignore", "TCL2", "n.py", cwd=tmp_path).stdout
    assert "TCL101" in ignored and "TCL201" not in ignored


def test_tool_tcl_config_applies_as_in_tcl_check(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.tcl]\nignore = ["TCL201"]\ntorch-version = "2.13"\n')
    (tmp_path / "m.py").write_text(HAZARD)
    expected = tcl("m.py", cwd=tmp_path).stdout
    assert "TCL101" in expected and "TCL201" not in expected
    assert flake8("--select", "TCL", "m.py", cwd=tmp_path).stdout == expected
    (tmp_path / "pyproject.toml").write_text('[tool.tcl]\nmode = "nonsense"\n')
    broken = flake8("--select", "TCL", "m.py", cwd=tmp_path)
    assert "m.py:1:1: TCL000 tcl configuration error:" in broken.stdout


def test_unparseable_file_does_not_crash_flake8(tmp_path):
    # Python parses 3001 implicitly concatenated strings; libcst 1.x refuses them.
    (tmp_path / "big.py").write_text("import torch\nx = " + " ".join(["'a'"] * 3001) + "\n")
    (tmp_path / "m.py").write_text(HAZARD)
    expected = tcl(".", cwd=tmp_path)
    got = flake8("--select", "TCL", "big.py", "m.py", cwd=tmp_path)
    assert got.returncode == 1, got.stderr
    assert "Traceback" not in got.stderr
    lines = got.stdout.splitlines()
    assert any(line.startswith("big.py:") and " TCL000 tcl could not analyse this file: cannot parse" in line for line in lines)
    assert "m.py:6:5: TCL101" in got.stdout
    if "big.py" in expected.stderr:  # tcl check: the same message on stderr, exit 2
        assert expected.returncode == 2


def test_select_f_does_no_tcl_work_and_non_torch_trees_never_load_the_engine(tmp_path):
    (tmp_path / "m.py").write_text(HAZARD)
    (tmp_path / "plain.py").write_text("import re\n\nPATTERN = re.compile('x')\n\n\ndef forward(x):\n    return x\n")
    probe = textwrap.dedent('''
        import sys
        from flake8.main.cli import main
        rc = main(sys.argv[1:])
        print("ENGINE" if "tcl.engine" in sys.modules else "NO-ENGINE", "LIBCST" if "libcst" in sys.modules else "NO-LIBCST",
              "TORCH" if "torch" in sys.modules else "NO-TORCH")
    ''')
    select_f = run([sys.executable, "-c", probe, "--tcl-no-cache", "-j", "1", "--select", "F", "m.py"], tmp_path)
    assert select_f.stdout.splitlines()[-1] == "NO-ENGINE NO-LIBCST NO-TORCH", select_f.stdout + select_f.stderr
    plain = run([sys.executable, "-c", probe, "--tcl-no-cache", "-j", "1", "plain.py"], tmp_path)
    assert plain.stdout.splitlines()[-1] == "NO-ENGINE NO-LIBCST NO-TORCH", plain.stdout + plain.stderr
    torch_file = run([sys.executable, "-c", probe, "--tcl-no-cache", "-j", "1", "--select", "TCL", "m.py"], tmp_path)
    assert "TCL101" in torch_file.stdout and torch_file.stdout.splitlines()[-1] == "ENGINE LIBCST NO-TORCH"


def test_plugin_module_imports_nothing_heavy():
    probe = "import sys, tcl_flake8; print(sorted(m for m in ('torch', 'libcst', 'tcl.engine', 'tcl.rules') if m in sys.modules))"
    result = run([sys.executable, "-c", probe], REPO)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_plugin_discovery_matches_the_runner(tmp_path):
    """The plugin lists files without importing the engine; it must list what tcl check lists."""
    import tcl_flake8
    from tcl.runner import collect_files

    write_tree(tmp_path, {**CROSS_FILE, "build/gen.py": "import torch\n", "docs/conf.py": "x = 1\n",
                          "pyproject.toml": '[tool.tcl]\nexclude = ["docs/"]\n'})
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        session = tcl_flake8._Session(["."], None, None, None, False, 1, run_now=False)
        session._discover(["."])
        files, _ = collect_files(["."], session.config, session.root)
    finally:
        os.chdir(cwd)
    assert sorted(session.files.values()) == sorted(files)
    assert not any("build" in f or "docs" in f for f in files)


@pytest.mark.parametrize("select,expected", [
    (None, True), (["F"], False), (["TCL"], True), (["TCL101"], True), (["T"], True), (["E", "W"], False),
])
def test_selection_shortcut(select, expected):
    import argparse

    import tcl_flake8

    assert tcl_flake8._tcl_selected(argparse.Namespace(select=select, extend_select=None)) is expected
    assert tcl_flake8._tcl_selected(argparse.Namespace(select=select, extend_select=["TCL"])) is True
