"""The bundled fixtures: the analyzer reports exactly the `# expect: TCLxxx` marks, no more, no less."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tcl.config import Config
from tcl.engine import Analyzer

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
EXPECT = re.compile(r"#\s*expect:\s*(?P<codes>TCL\d+(?:\s*,\s*TCL\d+)*)")
FILES = sorted(p for p in FIXTURES.glob("*.py") if p.name != "check_truth.py")


def expected_marks(source: str) -> set[tuple[int, str]]:
    marks = set()
    for number, line in enumerate(source.splitlines(), 1):
        match = EXPECT.search(line)
        if match:
            marks.update((number, code.strip()) for code in match.group("codes").split(","))
    return marks


def test_fixture_files_exist():
    assert len(FILES) >= 8
    assert sum(len(expected_marks(p.read_text())) for p in FILES) >= 40


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_fixture_findings_match_marks(path):
    source = path.read_text()
    report = Analyzer(Config(torch_version="2.13")).check_source(source, str(path))
    assert report.errors == []
    found = {(f.line, f.code) for f in report.findings}
    expected = expected_marks(source)
    assert sorted(found - expected) == [], "false positives"
    assert sorted(expected - found) == [], "missed"
