"""The pre-commit hooks in .pre-commit-hooks.yaml, run for real with `pre-commit try-repo`.

try-repo clones a git repository at a commit, so the hook repository is this working tree
copied into a temporary git repository and committed there (uncommitted and untracked files
included). pre-commit then builds its own virtualenv and pip-installs tcl into it, as a user's
pre-commit does: that also checks that the package installs from a plain (non-editable) build.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("pre_commit", reason="pre-commit is in the test extra: pip install -e '.[test]'")
pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="pre-commit needs git")

REPO = Path(__file__).resolve().parent.parent
NOT_COPIED = shutil.ignore_patterns(
    ".git", "__pycache__", "*.pyc", "*.egg-info", ".pytest_cache", ".hypothesis", "build", "dist",
    ".tcl_cache", ".benchmarks", ".venv", "venv", ".tox", ".nox",
)
HAZARD = textwrap.dedent('''\
    import torch


    @torch.compile
    def step(x):
        print(x.shape)
        return x
''')
CLEAN = textwrap.dedent('''\
    import torch


    @torch.compile
    def step(x):
        if x.shape[0] > 2:
            x = x * 2
        return x
''')


def git(*args, cwd):
    subprocess.run(
        ["git", "-c", "user.name=tcl tests", "-c", "user.email=tcl@example.invalid", "-c", "commit.gpgsign=false",
         "-c", "init.defaultBranch=main", *args],
        cwd=cwd, check=True, capture_output=True, timeout=120,
    )


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory):
    repo = tmp_path_factory.mktemp("hooks") / "tcl"
    shutil.copytree(REPO, repo, ignore=NOT_COPIED)
    git("init", "-q", cwd=repo)
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "tcl working tree", cwd=repo)
    return repo


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    environment = dict(os.environ)
    environment["PRE_COMMIT_HOME"] = str(tmp_path_factory.mktemp("pre-commit-home"))
    environment["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    environment["PIP_NO_INPUT"] = "1"
    return environment


def target_repo(path: Path, files: dict[str, str]) -> Path:
    path.mkdir()
    git("init", "-q", cwd=path)
    for name, text in files.items():
        (path / name).write_text(text)
    git("add", "-A", cwd=path)
    return path


def try_repo(hook_repo: Path, target: Path, env, *hook: str) -> subprocess.CompletedProcess:
    """`pre-commit try-repo HOOK_REPO [HOOK] --all-files`; every call builds a fresh hook environment."""
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(hook_repo), *hook, "--all-files", "--color", "never"],
        cwd=target, env=env, capture_output=True, text=True, timeout=420,
    )


def test_hooks_fail_on_a_hazard_print_it_and_fix_it(hook_repo, env, tmp_path):
    # No hook id: try-repo runs every hook of .pre-commit-hooks.yaml, tcl-check then tcl-fix.
    target = target_repo(tmp_path / "project", {"model.py": HAZARD, "clean.py": CLEAN, "notes.txt": "print(x)\n"})
    result = try_repo(hook_repo, target, env)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    check, fix = output.split("- hook id: tcl-check", 1)[1].split("- hook id: tcl-fix", 1)
    assert "model.py:6:5: TCL101 print() inside a compiled region breaks the graph [GB0059]" in check
    assert "clean.py" not in check
    assert "files were modified by this hook" in fix and "fixed 1 finding in 1 file" in fix
    assert "if not torch.compiler.is_compiling():\n        print(x.shape)" in (target / "model.py").read_text()
    assert (target / "clean.py").read_text() == CLEAN


def test_tcl_check_hook_passes_on_a_clean_repo(hook_repo, env, tmp_path):
    target = target_repo(tmp_path / "project", {"clean.py": CLEAN})
    result = try_repo(hook_repo, target, env, "tcl-check")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "tcl check (torch.compile graph breaks)" in result.stdout and "Passed" in result.stdout
