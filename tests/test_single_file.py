"""One answer everywhere: checking one file of a project reports, for that file, what checking
the whole project reports, through every entry point (tcl check, flake8, the language server).

The case that used to differ: file B's helper breaks the graph, but only file A's compiled
forward calls it, so the finding exists only in A's analysis of the project.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

A = textwrap.dedent('''
    import torch
    from torch import nn

    from helpers import normalise


    class Model(nn.Module):
        def forward(self, x):
            return normalise(x) * 2
''')
B = textwrap.dedent('''
    import torch


    def normalise(x):
        print("normalising", x.shape)
        if x.sum() > 0:
            return x / x.sum()
        return x


    def unused(x):
        print(x)
        return x
''')
REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def project(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.tcl]\ntorch-version = "2.13"\n')
    (tmp_path / "model.py").write_text(A)
    (tmp_path / "helpers.py").write_text(B)
    sub = tmp_path / "docs_only"
    sub.mkdir()
    (sub / "notes.py").write_text("VALUE = 1\n")  # a file that does not reach helpers.py
    return tmp_path


def run(*command, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *command], capture_output=True, text=True, cwd=cwd, timeout=180)


def helper_findings(lines: list[str]) -> list[str]:
    return sorted(line for line in lines if line.startswith("helpers.py:"))


def test_every_entry_point_reports_the_tree_run_findings_for_one_file(project):
    tree = helper_findings(run("-m", "tcl", "check", "--format", "flake8", "--no-cache", ".", cwd=project).stdout.splitlines())
    # What a whole-tree run finds in helpers.py: normalise's print and branch, reached from
    # Model.forward in model.py (unused() is never compiled: nothing there).
    assert [line.split(": ")[1].split()[0] for line in tree] == ["TCL101", "TCL201"]
    assert all("reached from Model.forward" in line for line in tree)

    alone = run("-m", "tcl", "check", "--format", "flake8", "--no-cache", "helpers.py", cwd=project)
    assert helper_findings(alone.stdout.splitlines()) == tree, alone.stderr
    cached = [run("-m", "tcl", "check", "--format", "flake8", "helpers.py", cwd=project) for _ in range(2)]  # cold, then warm cache
    assert [helper_findings(c.stdout.splitlines()) for c in cached] == [tree, tree]

    flake8 = run("-m", "flake8", "--select", "TCL", "--tcl-no-cache", "helpers.py", cwd=project)
    assert helper_findings(flake8.stdout.splitlines()) == tree, flake8.stderr

    # An editor's buffer through flake8 (stdin): the text is analysed alone, with the same facts.
    stdin = subprocess.run([sys.executable, "-m", "flake8", "--select", "TCL", "--tcl-no-cache",
                            "--stdin-display-name", "helpers.py", "-"], input=B, capture_output=True,
                           text=True, cwd=project, timeout=180)
    assert helper_findings(stdin.stdout.splitlines()) == tree, stdin.stderr

    assert helper_findings(lsp_lines(project, project / "helpers.py")) == tree


def test_the_other_files_of_a_subset_do_not_add_their_own_findings(project):
    """Checking helpers.py says nothing about model.py, even though model.py was analysed."""
    (project / "model.py").write_text(A + "\n\n@torch.compile\ndef noisy(x):\n    print(x)\n    return x\n")
    out = run("-m", "tcl", "check", "--format", "flake8", "--no-cache", "helpers.py", cwd=project).stdout.splitlines()
    assert out and all(line.startswith("helpers.py:") for line in out)


def lsp_lines(project: Path, path: Path) -> list[str]:
    """`tcl check`-style lines for the diagnostics the language server publishes on open."""
    pytest.importorskip("pygls")
    spec = importlib.util.spec_from_file_location("lsp_bench", REPO / "bench" / "lsp_bench.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    client = bench.Client([sys.executable, "-m", "tcl", "lsp"], None, project)
    try:
        client.request("initialize", {"processId": None, "rootUri": project.as_uri(), "capabilities": {}})
        client.notify("initialized", {})
        client.notify("textDocument/didOpen", {"textDocument": {
            "uri": path.as_uri(), "languageId": "python", "version": 1, "text": path.read_text()}})
        _, diagnostics = client.diagnostics(path.as_uri(), 1, timeout=120)
    finally:
        client.close()
    return [f"{path.name}:{d['range']['start']['line'] + 1}:{d['range']['start']['character'] + 1}: "
            f"{d['code']} {d['message']}" for d in diagnostics]


def test_the_project_root_rule(tmp_path):
    from tcl.project_root import forget_roots, project_root

    (tmp_path / "repo" / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "repo" / ".git").mkdir()
    source = tmp_path / "repo" / "src" / "pkg" / "mod.py"
    source.write_text("x = 1\n")
    forget_roots()
    assert project_root(source) == str(tmp_path / "repo")
    (tmp_path / "repo" / "src" / "setup.cfg").write_text("[metadata]\n")
    forget_roots()
    assert project_root(source) == str(tmp_path / "repo" / "src")  # the nearest marker wins
    (tmp_path / "repo" / "src" / "pkg" / "pyproject.toml").write_text("")
    forget_roots()
    assert project_root(source) == str(tmp_path / "repo" / "src" / "pkg")
    assert project_root(tmp_path / "repo" / "src" / "pkg") == str(tmp_path / "repo" / "src" / "pkg")


def test_callers_through_a_package_re_export_are_found(tmp_path):
    from tcl.project_root import reaching_files

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from .helpers import normalise\n")
    (pkg / "helpers.py").write_text(B)
    (tmp_path / "model.py").write_text(A.replace("from helpers import normalise", "from pkg import normalise"))
    (tmp_path / "unrelated.py").write_text("# mentions helpers and pkg only in a comment\nimport os\n")
    files = [str(pkg / "helpers.py"), str(pkg / "__init__.py"), str(tmp_path / "model.py"), str(tmp_path / "unrelated.py")]
    assert reaching_files(files[:1], files[1:]) == files[1:3]


TRAIN = textwrap.dedent('''
    import torch

    from model import Model

    model = torch.compile(Model())
    print(model(torch.randn(4)))
''')


def test_a_checked_compile_call_traces_the_model_it_compiles_from_another_file(project):
    """`tcl check train.py`: the model it compiles lives in model.py, which this run does not
    check. Its forward is traced from train.py's compile call, and the findings are reported
    where they are (the user's own files), as a whole-tree run reports them; a warm cache
    filled by runs over other sets of files gives the same answer."""
    (project / "train.py").write_text(TRAIN)
    tree = run("-m", "tcl", "check", "--format", "flake8", "--no-cache", ".", cwd=project).stdout.splitlines()
    expected = helper_findings(tree)
    assert [line.split(": ")[1].split()[0] for line in expected] == ["TCL101", "TCL201"]
    alone = run("-m", "tcl", "check", "--format", "flake8", "--no-cache", "train.py", cwd=project)
    assert sorted(alone.stdout.splitlines()) == expected, alone.stderr
    # The cache: a report of train.py stored when model.py was checked with it traced nothing
    # of model.py; reused for train.py alone it would hide the findings (and the reverse).
    for paths in ([".", "train.py"], ["train.py", "model.py"], ["train.py"], ["train.py", "model.py"]):
        out = run("-m", "tcl", "check", "--format", "flake8", *paths, cwd=project).stdout.splitlines()
        assert sorted(out) == expected, paths
    # Without a compile call nothing of model.py is reported from train.py.
    (project / "train.py").write_text(TRAIN.replace("torch.compile(Model())", "Model()"))
    assert run("-m", "tcl", "check", "--format", "flake8", "train.py", cwd=project).stdout == ""


def test_fix_fixes_what_check_reports_on_the_same_paths(project):
    """`tcl check model.py` (or helpers.py, or train.py) reports the print in helpers.py that
    Model.forward reaches; `tcl fix` on the same path fixes it there, with the diff a whole-tree
    `tcl fix .` gives, and says which named file reaches a file it was not given."""
    (project / "train.py").write_text(TRAIN)
    guard = "+    if not torch.compiler.is_compiling():\n+        print(\"normalising\", x.shape)\n"
    tree = run("-m", "tcl", "fix", ".", cwd=project)
    assert "# tcl fix helpers.py: 1 fix" in tree.stdout and guard in tree.stdout, tree.stderr
    tree_diff = tree.stdout.split("--- helpers.py", 1)[1]
    for path in ("helpers.py", "model.py", "train.py"):
        fixed = run("-m", "tcl", "fix", path, cwd=project)
        assert fixed.stdout.split("--- helpers.py", 1)[1] == tree_diff, (path, fixed.stdout, fixed.stderr)
        reached = "" if path == "helpers.py" else f" (reached from {path})"
        assert f"# tcl fix helpers.py{reached}: 1 fix" in fixed.stdout
        assert "would fix 1 finding in 1 file (1 more with --unsafe-fixes)" in fixed.stderr
    assert (project / "helpers.py").read_text() == B  # nothing written without --apply
    applied = run("-m", "tcl", "fix", "--apply", "train.py", cwd=project)
    assert applied.returncode == 1, applied.stderr
    assert guard.replace("+", "") in (project / "helpers.py").read_text()
    assert (project / "train.py").read_text() == TRAIN and (project / "model.py").read_text() == A
    # What is left is what `tcl check train.py` still reports: the branch (an unsafe fix).
    left = run("-m", "tcl", "check", "--format", "flake8", "--no-cache", "train.py", cwd=project).stdout.splitlines()
    assert [line.split(": ")[1].split()[0] for line in left] == ["TCL201"]
    assert [line.split(" ")[0] for line in applied.stdout.splitlines() if line.startswith("helpers.py:")] == \
        [left[0].split(" ")[0]]
    again = run("-m", "tcl", "fix", "--apply", "train.py", cwd=project)
    assert (project / "helpers.py").read_text().count("is_compiling") == 1, again.stdout  # idempotent


def test_fix_writes_a_reached_file_only_inside_its_project(project, tmp_path_factory):
    """helpers.py is a link to a file outside the project: `tcl check model.py` reports its
    findings, and `tcl fix --apply model.py` refuses to write through the link (as it refuses
    a named file reached through a link out of the checked paths)."""
    outside = tmp_path_factory.mktemp("elsewhere") / "helpers.py"
    outside.write_text(B)
    (project / "helpers.py").unlink()
    (project / "helpers.py").symlink_to(outside)
    applied = run("-m", "tcl", "fix", "--apply", "model.py", cwd=project)
    assert outside.read_text() == B, applied.stdout
    assert "helpers.py: not written" in applied.stderr and applied.returncode == 2, applied.stderr
