"""A seeded slice of bench/fuzz.py: random programs inside compiled regions, and mutated real
model files, never make an exception escape `Analyzer.check_source`; every error it records is
one line that names the file (and, for internal errors, the rule when one was running).

`python bench/fuzz.py --examples 5000` runs the same generators at length.
"""

from __future__ import annotations

import importlib.util
import random
import sys
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tcl.config import Config
from tcl.engine import Analyzer

hypothesmith = pytest.importorskip("hypothesmith")

_spec = importlib.util.spec_from_file_location("tcl_bench_fuzz", Path(__file__).resolve().parent.parent / "bench" / "fuzz.py")
fuzz = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = fuzz
_spec.loader.exec_module(fuzz)

ANALYZER = Analyzer(Config())
def seeded_slice(examples: int) -> settings:
    return settings(max_examples=examples, deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))
SEEN: dict[str, int] = {}


def check_contract(source: str) -> fuzz.Outcome:
    """check_source may report anything, but only as well-formed one-line FileErrors."""
    try:
        report = ANALYZER.check_source(source, "fuzzed.py")
    except Exception as exc:  # pragma: no cover - the failure being tested for
        pytest.fail(f"{type(exc).__name__} escaped check_source: {exc}\n--- source:\n{source}")
    for error in report.errors:
        line = str(error)
        assert "\n" not in line and line.startswith("fuzzed.py"), line
        if error.message.startswith("internal error in "):
            assert "(" in error.message.split(":")[0], line  # `in TCLxxx (rule-name)`
    outcome = fuzz.classify(ANALYZER, source, "fuzzed.py")
    SEEN[outcome.kind] = SEEN.get(outcome.kind, 0) + 1
    return outcome


@seeded_slice(40)
@given(hypothesmith.from_grammar())
def test_hypothesmith_programs_in_compiled_regions(code):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_contract(fuzz.in_forward(code))
        check_contract(fuzz.decorated(code))


@seeded_slice(70)
@given(st.tuples(*[fuzz.torchish_strategies()] * 4))
def test_torch_flavoured_programs(parts):
    check_contract(fuzz.torchish_module(parts))


@seeded_slice(12)
@given(st.tuples(*[fuzz.torchish_strategies()] * 5))
def test_three_file_packages_through_the_runner(parts):
    """Cross-file analysis: traced code calls helpers and a base class in other files."""
    outcome = fuzz.classify_project(fuzz.project_text(parts))
    assert outcome.kind not in ("escape", "bad-error"), (outcome.signature, outcome.detail, outcome.traceback)
    if outcome.kind == "internal-error":
        assert "\n" not in outcome.detail and outcome.detail.split(":")[0].endswith(".py"), outcome.detail


def test_mutated_real_model_files():
    rng = random.Random(20261129)
    files = fuzz.real_files()
    assert any("fixtures" in str(p) for p in files)
    sources = [p.read_text(encoding="utf-8") for p in files]
    kinds: dict[str, int] = {}
    for _ in range(150):
        source = fuzz.mutate(rng.choice(sources), rng, rng.randint(1, 5))
        kind = check_contract(source).kind
        kinds[kind] = kinds.get(kind, 0) + 1
    # the slice exercises both paths: files that still parse and files that no longer do
    assert kinds.get("analysed", 0) >= 30 and kinds.get("parse-failure", 0) >= 10, kinds


def test_the_generators_reach_the_rules():
    """Guard against a fuzz that silently tests nothing: wrapped programs are analysed, and
    torch-flavoured ones produce findings."""
    findings = 0
    analysed = 0
    for source in fuzz.torchish_programs(15, seed=1, derandomize=True):
        report = ANALYZER.check_source(source, "fuzzed.py")
        analysed += not report.errors and not report.skipped
        findings += len(report.findings)
    assert analysed >= 10 and findings >= 10, (analysed, findings)
