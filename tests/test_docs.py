"""docs/rules.md is generated from the rule classes (`python -m tcl.docs`): docs and code agree."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tcl.docs import anchor, render_rules, rendered_files
from tcl.rules import ALL_RULES

REPO = Path(__file__).resolve().parent.parent
RULES_MD = REPO / "docs" / "rules.md"


def test_rules_md_is_what_the_generator_writes():
    assert RULES_MD.read_text(encoding="utf-8") == render_rules(), (
        "docs/rules.md is out of date with tcl/rules/: run `python -m tcl.docs` and commit the result"
    )


def test_every_rule_page_is_what_the_generator_writes():
    pages = {path: text for path, text in rendered_files(RULES_MD).items() if path != RULES_MD}
    assert sorted(p.name for p in pages) == sorted(f"{rule.code}.md" for rule in ALL_RULES)
    for path, text in pages.items():
        assert path.read_text(encoding="utf-8") == text, f"{path} is stale: run `python -m tcl.docs`"
    generated = {p.name for p in pages}
    assert {p.name for p in (REPO / "docs" / "rules").glob("*.md")} == generated, "a page for a removed rule"


def test_check_mode_and_output_option(tmp_path):
    check = subprocess.run([sys.executable, "-m", "tcl.docs", "--check"], capture_output=True, text=True, cwd=REPO)
    assert check.returncode == 0, check.stderr
    target = tmp_path / "rules.md"
    wrote = subprocess.run([sys.executable, "-m", "tcl.docs", "--output", str(target)], capture_output=True, text=True)
    assert wrote.returncode == 0 and target.read_text(encoding="utf-8") == render_rules()
    target.write_text("stale\n")
    stale = subprocess.run([sys.executable, "-m", "tcl.docs", "--check", "--output", str(target)], capture_output=True, text=True)
    assert stale.returncode == 1 and "python -m tcl.docs" in stale.stderr


def test_every_rule_has_a_section_with_its_facts():
    text = render_rules()
    headings = re.findall(r"^## (TCL\d+) (\S+)$", text, re.M)
    assert headings == [(rule.code, rule.name) for rule in ALL_RULES]
    sections = re.split(r"^## ", text, flags=re.M)[1:]
    for rule, section in zip(ALL_RULES, sections):
        assert f"](#{anchor(rule)})" in text  # the summary table links the section
        assert rule.fix in section
        for gb_id in rule.gb_ids():
            assert f"[{gb_id}](https://meta-pytorch.github.io/compile-graph-break-site/gb/{gb_id.lower()}.html)" in section
        assert rule.INVALID[0].code.strip("\n") in section and "# BREAK" in section
        assert rule.VALID[0].code.strip("\n") in section


def test_integrations_doc_names_every_integration():
    text = (REPO / "docs" / "integrations.md").read_text(encoding="utf-8")
    for needle in ("tcl-check", "tcl-fix", "flake8 --select TCL", "--format sarif", "upload-sarif",
                   "--format github", "flake8.importStrategy"):
        assert needle in text, needle


def test_ci_runs_the_readme_setup_commands_verbatim():
    """.ci/run takes its two commands from README.md's "## Set up" (scripts/readme_setup.py) and
    runs them in a new virtualenv: what a new user copies is what CI proves."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("readme_setup", REPO / "scripts" / "readme_setup.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    commands = module.setup_commands((REPO / "README.md").read_text())
    assert commands == [
        "pip install -e . && tcl check fixtures/",
        'pip install "torch==2.13.0" -e ".[test]" && python -m pytest -q',
    ]
    ci = (REPO / ".ci" / "run").read_text()
    assert "python3 -m venv" in ci and "scripts/readme_setup.py README.md" in ci
