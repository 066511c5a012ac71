"""`tcl check`, `tcl rules`, `tcl explain` as a user runs them: real subprocesses on temp trees."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

HAZARD = textwrap.dedent('''
    import torch

    @torch.compile
    def step(x):
        print(x.shape)
        if x.sum() > 0:
            x = x * 2
        return x
''')
CLEAN = textwrap.dedent('''
    import torch

    @torch.compile
    def step(x):
        if x.shape[0] > 2:
            x = x * 2
        return x
''')


def tcl(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "tcl", *args], capture_output=True, text=True, cwd=cwd, timeout=120
    )


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "model.py").write_text(HAZARD)
    (tmp_path / "pkg" / "clean.py").write_text(CLEAN)
    return tmp_path


PRINT_LINE = "pkg/model.py:6:5: TCL101 print() inside a compiled region breaks the graph [GB0059]"
PRINT_FIX = (
    "guard it with `if not torch.compiler.is_compiling():`, or list print in "
    "torch._dynamo.config.reorderable_logging_functions"
)


def test_text_output_and_exit_status(tree):
    result = tcl("check", "pkg", cwd=tree)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[0] == PRINT_LINE
    assert lines[1] == f"    fix: {PRINT_FIX}"
    assert lines[2] == "pkg/model.py:7:8: TCL201 Python branch on tensor data (if) breaks the graph [GB0170]"
    assert lines[3] == "    judged tensor data: x: parameter, used as a tensor"  # why x is tensor data
    assert lines[4].startswith("    fix: ")
    assert lines[5:] == ["Found 2 findings in 1 file (checked 2 files)"]


def test_concise_and_flake8_formats(tree):
    concise = tcl("check", "--format", "concise", "pkg", cwd=tree).stdout.splitlines()
    assert concise[0] == PRINT_LINE and concise[1].startswith("pkg/model.py:7:8: TCL201 ")
    assert concise[2:] == ["Found 2 findings in 1 file (checked 2 files)"]
    flake8_style = tcl("check", "--format", "flake8", "pkg", cwd=tree).stdout.splitlines()
    assert flake8_style[0] == f"{PRINT_LINE} -> {PRINT_FIX}" and len(flake8_style) == 2  # no summary


def test_first_line_stays_short_and_details_go_below(tmp_path):
    """A helper reached from compiled code, inside a loop: the chain and the cost get lines of
    their own in text output, and the whole one-line form is kept for flake8-style output."""
    (tmp_path / "m.py").write_text(textwrap.dedent('''\
        import torch


        def helper(x):
            for _ in range(2):
                print(x)
            return x


        class Model(torch.nn.Module):
            def forward(self, x):
                return helper(x)
    '''))
    text = tcl("check", "m.py", cwd=tmp_path).stdout.splitlines()
    assert text[0] == "m.py:6:9: TCL101 print() inside a compiled region breaks the graph [GB0059]"
    assert text[1] == "    inside a for loop: Dynamo drops the whole frame helper() to eager"
    assert text[2].startswith("    fix: guard it with")
    assert text[3] == "    in helper, reached from Model.forward"
    one_line = tcl("check", "--format", "flake8", "m.py", cwd=tmp_path).stdout.splitlines()
    assert one_line == [
        "m.py:6:9: TCL101 print() inside a compiled region breaks the graph (inside a for loop: Dynamo "
        "drops the whole frame helper() to eager) (in helper, reached from Model.forward) [GB0059] -> "
        f"{PRINT_FIX}"
    ]
    assert all(len(line) <= 160 for line in text)


def test_quiet_and_statistics(tree):
    assert tcl("check", "-q", "pkg", cwd=tree).stdout == "pkg/model.py\n"
    silent = tcl("check", "-qq", "pkg", cwd=tree)
    assert (silent.returncode, silent.stdout) == (1, "")
    stats = tcl("check", "--statistics", "--format", "concise", "pkg", cwd=tree).stdout.splitlines()
    assert stats[2:] == [
        "1  TCL101  print() inside a compiled region breaks the graph",
        "1  TCL201  Python branch on tensor data (if) breaks the graph",
        "Found 2 findings in 1 file (checked 2 files)",
    ]


def test_summary_counts_files_that_could_not_be_analysed(tree):
    (tree / "pkg" / "broken.py").write_text("import torch\ndef f(:\n")
    result = tcl("check", "pkg", cwd=tree)
    assert result.returncode == 2
    assert result.stdout.splitlines()[-1] == (
        "Found 2 findings in 1 file (checked 3 files); 1 file could not be analysed"
    )


def test_rules_table_is_aligned():
    lines = tcl("rules", cwd=".").stdout.splitlines()
    assert len(lines) > 20
    # Every column starts at the same place on each row; the GB ids, of any length, come last.
    header = lines[0]
    for column in ("name", "modes; torch versions", "graph-break ids"):
        at = header.index(column)
        assert all(line[at - 2:at] == "  " and line[at] != " " for line in lines[1:]), column


def test_clean_file_exits_zero(tree):
    result = tcl("check", "pkg/clean.py", cwd=tree)
    assert (result.returncode, result.stdout, result.stderr) == (0, "No findings (checked 1 file)\n", "")


def test_json_output(tree):
    result = tcl("check", "--format", "json", "pkg", cwd=tree)
    assert result.returncode == 1
    data = json.loads(result.stdout)
    assert data["errors"] == []
    first = data["findings"][0]
    assert set(first) >= {"code", "path", "line", "col", "end_line", "end_col", "message", "gb", "severity", "fix"}
    assert (first["code"], first["path"], first["line"], first["col"], first["gb"]) == ("TCL101", "pkg/model.py", 6, 5, "GB0059")
    assert (first["end_line"], first["end_col"]) == (6, 19)


def test_noqa_suppresses(tree):
    source = HAZARD.replace("print(x.shape)", "print(x.shape)  # noqa: TCL101").replace(
        "if x.sum() > 0:", "if x.sum() > 0:  # noqa"
    )
    (tree / "pkg" / "model.py").write_text(source)
    result = tcl("check", "pkg", cwd=tree)
    assert (result.returncode, result.stdout) == (0, "No findings (checked 2 files)\n")


def test_noqa_on_last_line_of_multiline_call(tree):
    (tree / "pkg" / "model.py").write_text(HAZARD.replace("print(x.shape)", "print(\n        x.shape,\n    )  # noqa: TCL101"))
    result = tcl("check", "--select", "TCL101", "pkg", cwd=tree)
    assert (result.returncode, result.stdout) == (0, "No findings (checked 2 files)\n")


def test_noqa_for_other_code_does_not_suppress(tree):
    (tree / "pkg" / "model.py").write_text(HAZARD.replace("print(x.shape)", "print(x.shape)  # noqa: TCL201"))
    result = tcl("check", "--select", "TCL101", "pkg", cwd=tree)
    assert result.returncode == 1


def test_select_and_ignore_options(tree):
    assert tcl("check", "--select", "TCL2", "--format", "concise", "pkg", cwd=tree).stdout.count("TCL") == 1
    assert tcl("check", "--ignore", "TCL101,TCL201", "pkg", cwd=tree).returncode == 0


def test_pyproject_config(tree):
    (tree / "pyproject.toml").write_text(textwrap.dedent('''
        [tool.tcl]
        ignore = ["TCL101"]
        exclude = ["generated/"]
        torch-version = "2.14"
    '''))
    (tree / "pkg" / "generated").mkdir()
    (tree / "pkg" / "generated" / "gen.py").write_text(HAZARD)
    result = tcl("check", "--format", "json", "pkg", cwd=tree)
    data = json.loads(result.stdout)
    assert [f["code"] for f in data["findings"]] == ["TCL201"]
    assert data["tool"]["torch_version"] == "2.14"


def test_bad_config_is_one_line_error(tree):
    (tree / "pyproject.toml").write_text("[tool.tcl]\nselct = ['TCL1']\n")
    result = tcl("check", "pkg", cwd=tree)
    assert result.returncode == 2
    assert result.stderr.strip() == f"tcl: {tree / 'pyproject.toml'}: unknown [tool.tcl] keys: selct"


def test_torch_version_changes_rules(tree):
    (tree / "pkg" / "model.py").write_text(
        "import random\nimport torch\n\n@torch.compile\ndef f(x):\n    return x * random.random()\n"
    )
    assert tcl("check", "--torch-version", "2.13", "pkg/model.py", cwd=tree).returncode == 1
    assert tcl("check", "--torch-version", "2.14", "pkg/model.py", cwd=tree).returncode == 0


def test_fullgraph_mode_drops_default_only_rules(tree):
    (tree / "pkg" / "model.py").write_text(
        "import torch\n\n@torch.compile(fullgraph=True)\ndef f(x):\n    return x * x.sum().item()\n"
    )
    assert tcl("check", "pkg/model.py", cwd=tree).returncode == 1
    assert tcl("check", "--mode", "fullgraph", "pkg/model.py", cwd=tree).returncode == 0


def test_bad_inputs_one_line_each_and_run_goes_on(tree):
    bad = tree / "pkg"
    (bad / "syntax.py").write_text("import torch\ndef forward(x:\n    return x\n")
    (bad / "latin.py").write_bytes("import torch\n# caf\xe9\n".encode("latin-1"))
    (bad / "empty.py").write_text("")
    (bad / "nul.py").write_bytes(b"import torch\nx = 1\x00\n")
    (bad / "loop").mkdir()
    os.symlink("..", bad / "loop" / "up")
    result = tcl("check", "pkg", cwd=tree)
    assert result.returncode == 2
    errors = sorted(result.stderr.splitlines())
    assert len(errors) == 4, errors
    assert errors[0].startswith("pkg/latin.py: cannot decode as utf-8")
    assert errors[1].startswith("pkg/loop/up: symlink loop")
    assert errors[2].startswith("pkg/nul.py: cannot parse: source contains a NUL byte")
    assert errors[3].startswith("pkg/syntax.py:2: cannot parse:")
    assert "Traceback" not in result.stderr
    # the hazard file is still checked
    assert "pkg/model.py:6:5: TCL101" in result.stdout


def test_missing_path_is_an_error(tree):
    result = tcl("check", "nope.py", cwd=tree)
    assert result.returncode == 2
    assert result.stderr.strip() == "nope.py: no such file or directory"


def test_rules_and_explain():
    listing = tcl("rules")
    assert listing.returncode == 0
    assert "TCL101  print-in-compiled-region" in listing.stdout
    data = json.loads(tcl("rules", "--format", "json").stdout)
    assert {"code": "TCL203", "modes": ["default"]}.items() <= data[[r["code"] for r in data].index("TCL203")].items()
    explained = tcl("explain", "tcl201")
    assert explained.returncode == 0
    assert "GB0170" in explained.stdout and "torch.where" in explained.stdout
    assert tcl("explain", "TCL999").returncode == 2


def test_check_never_imports_torch(tree):
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "from tcl.cli import main\n"
        f"raise SystemExit(main(['check', {str(tree / 'pkg')!r}]))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1, result.stderr
    assert "TCL101" in result.stdout


def test_parallel_jobs_match_serial(tmp_path):
    for i in range(30):
        (tmp_path / f"m{i}.py").write_text(HAZARD if i % 3 else CLEAN)
    serial = tcl("check", "-j", "1", ".", cwd=tmp_path)
    parallel = tcl("check", "-j", "2", ".", cwd=tmp_path)
    assert serial.stdout == parallel.stdout
    assert serial.stdout.count("TCL101") == 20


def test_assume_from_pyproject_and_command_line(tree):
    (tree / "pkg" / "model.py").write_text(textwrap.dedent('''
        import torch
        from torch import nn

        class Block(nn.Module):
            def forward(self, x):
                if self.training and x.isnan().any():
                    raise ValueError("NaN")
                if x.dtype == torch.float16 and not torch.isfinite(x).all():
                    x = x.clamp(-1000, 1000)
                return x
    '''))
    lines = lambda result: [f["line"] for f in json.loads(result.stdout)["findings"]]  # noqa: E731
    assert lines(tcl("check", "--format", "json", "pkg/model.py", cwd=tree)) == [7, 9]
    result = tcl("check", "--format", "json", "--assume", "training=false", "pkg/model.py", cwd=tree)
    assert lines(result) == [9]
    assert json.loads(result.stdout)["tool"]["assume"] == {"training": False}
    (tree / "pyproject.toml").write_text('[tool.tcl]\nassume = { training = false, dtype = "bfloat16" }\n')
    assert tcl("check", "pkg/model.py", cwd=tree).returncode == 0
    assert lines(tcl("check", "--format", "json", "--assume", "training=true", "pkg/model.py", cwd=tree)) == [7]
    bad = tcl("check", "--assume", "dtype=int8", "pkg/model.py", cwd=tree)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "assume.dtype must be a floating dtype" in bad.stderr
    bad = tcl("check", "--assume", "device=tpu", "pkg/model.py", cwd=tree)
    assert bad.returncode == 2 and "assume.device must be one of cpu, cuda, xpu, mps" in bad.stderr
    (tree / "pyproject.toml").write_text('[tool.tcl]\nassume = { mode = "eval" }\n')
    bad = tcl("check", "pkg/model.py", cwd=tree)
    assert bad.returncode == 2 and "unknown assume keys: mode" in bad.stderr


def test_what_git_ignores_is_not_walked(tree):
    """A directory walk skips what the repository's .gitignore and .git/info/exclude ignore (last
    match wins, `!` re-includes); a file named on the command line is checked anyway;
    --no-respect-gitignore walks everything."""
    (tree / ".git" / "info").mkdir(parents=True)
    (tree / ".git" / "info" / "exclude").write_text(".carry/\n")
    (tree / ".gitignore").write_text("# generated\n*_gen.py\n!keep_gen.py\n/pkg/scratch.py\n")
    for name in ("a_gen.py", "keep_gen.py", "scratch.py"):
        (tree / "pkg" / name).write_text(HAZARD)
    (tree / ".carry" / "pkg").mkdir(parents=True)
    (tree / ".carry" / "pkg" / "copy.py").write_text(HAZARD)

    def checked(*args):
        data = json.loads(tcl("check", "--format", "json", "--select", "TCL201", *args, cwd=tree).stdout)
        return sorted({os.path.relpath(os.path.join(tree, f["path"]), tree) for f in data["findings"]})

    walked = checked(".")
    assert os.path.join("pkg", "keep_gen.py") in walked
    assert not {os.path.join("pkg", "a_gen.py"), os.path.join("pkg", "scratch.py"),
                os.path.join(".carry", "pkg", "copy.py")} & set(walked)
    assert checked("pkg/a_gen.py") == [os.path.join("pkg", "a_gen.py")]  # named: checked
    everything = checked("--no-respect-gitignore", ".")
    assert {os.path.join("pkg", "a_gen.py"), os.path.join(".carry", "pkg", "copy.py")} <= set(everything)


def test_respect_gitignore_config_is_checked(tree):
    (tree / "pyproject.toml").write_text("[tool.tcl]\nrespect-gitignore = 'yes'\n")
    result = tcl("check", "pkg", cwd=tree)
    assert result.returncode == 2
    assert "respect-gitignore: expected true or false" in result.stderr


def test_the_per_file_limit_is_longer_when_installed_code_is_followed():
    """`tcl check --follow-imports train.py` analyses what train.py compiles in installed
    packages too (transformers' generate: 16 s cold, quiet machine): its default limit is 120 s,
    not 20 s, and a limit the user gives wins either way (0: none)."""
    from tcl.cli import file_timeout
    from tcl.config import Config

    assert file_timeout(None, Config()) == 20.0
    assert file_timeout(None, Config(follow_imports=True)) == 120.0
    assert file_timeout(5.0, Config(follow_imports=True)) == 5.0
    assert file_timeout(0.0, Config(follow_imports=True)) == 0.0
