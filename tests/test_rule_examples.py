"""One harness for every rule (Fixit style): each VALID/INVALID example is checked twice.

1. Statically: the analyzer reports the rule exactly on the `# BREAK` lines, nothing on VALID.
2. On the installed compiler: each INVALID example breaks at those lines (default mode, the
   graph_breaks log) with one of the rule's GB ids, and each VALID example does not break.
   Recompile rules instead call the example several times: INVALID recompiles, VALID compiles once.
A rule the installed torch disagrees with fails the suite.
"""

from __future__ import annotations

import os

import pytest

# breakpoint() must not stop the test run when the eager reference call executes it.
os.environ["PYTHONBREAKPOINT"] = "0"

from tcl.config import Config
from tcl.dynamo_settings import config_values
from tcl.engine import Analyzer
from tcl.rules import ALL_RULES
from tcl.torch_version import installed

INSTALLED = installed()

VALID_CASES = [
    pytest.param(rule, example, id=f"{rule.code}-valid-{i}")
    for rule in ALL_RULES
    for i, example in enumerate(rule.VALID)
]
INVALID_CASES = [
    pytest.param(rule, example, id=f"{rule.code}-invalid-{i}")
    for rule in ALL_RULES
    for i, example in enumerate(rule.INVALID)
]
ANALYZERS: dict[tuple, Analyzer] = {}


def analyze(code: str, version: str, assume: dict | None = None, settings: tuple = ()):
    key = (version, tuple(sorted((assume or {}).items())), tuple(settings))
    if key not in ANALYZERS:
        # An example says what is compiled (a forward, @torch.compile): its other functions
        # are not public API taken as compiled (tcl/api_entries.py).
        ANALYZERS[key] = Analyzer(Config(torch_version=version, assume=dict(assume or {}),
                                         dynamo_config=list(settings), api_entries="off"))
    return ANALYZERS[key].check_source(code, "example.py")


def example_version(example) -> str:
    """The installed release if the example applies to it, else a release it applies to."""
    for candidate in ([INSTALLED] if INSTALLED else []) + [(2, 13), (2, 14), (2, 11)]:
        if example.applies_to(candidate):
            return f"{candidate[0]}.{candidate[1]}"
    raise AssertionError(f"example applies to no measured release: {example.versions}")


def test_every_rule_has_examples():
    for rule in ALL_RULES:
        assert rule.VALID and rule.INVALID, rule.code
        for example in rule.INVALID:
            assert example.expected_lines(), f"{rule.code}: INVALID example without a # BREAK line"


@pytest.mark.parametrize("rule, example", INVALID_CASES)
def test_invalid_example_is_reported(rule, example):
    report = analyze(example.code, example_version(example), example.assume, example.settings)
    assert not report.errors
    lines = [f.line for f in report.findings if f.code == rule.code]
    assert lines == example.expected_lines()
    others = [(f.code, f.line) for f in report.findings if f.code != rule.code]
    assert others == [], "examples should show one rule at a time"
    for finding in report.findings:
        assert finding.gb in rule.gb_ids() or (not rule.gb and finding.gb is None)


@pytest.mark.parametrize("rule, example", VALID_CASES)
def test_valid_example_is_clean(rule, example):
    report = analyze(example.code, example_version(example), example.assume, example.settings)
    assert not report.errors
    assert report.findings == []


def removed_by(rule, example) -> tuple[str, ...]:
    """The settings that remove this example's hazard: its own where it says, else its rule's."""
    return tuple(sorted(rule.removed_by if example.removed_by is None else example.removed_by))


REMOVED_CASES = [
    pytest.param(rule, example, id=f"{rule.code}-removed-{i}")
    for rule in ALL_RULES if rule.removed_by
    for i, example in enumerate(rule.INVALID) if removed_by(rule, example)
]
KEPT_CASES = [
    pytest.param(rule, example, id=f"{rule.code}-kept-{i}")
    for rule in ALL_RULES if rule.removed_by
    for i, example in enumerate(rule.INVALID) if not removed_by(rule, example)
]


@pytest.mark.parametrize("rule, example", REMOVED_CASES)
def test_setting_silences_the_rule(rule, example):
    """A program that turns on the settings that remove a rule's breaks gets no finding of it."""
    report = analyze(example.code, example_version(example), example.assume, removed_by(rule, example))
    assert [f for f in report.findings if f.code == rule.code] == []


@pytest.mark.parametrize("rule, example", KEPT_CASES)
def test_an_example_the_setting_does_not_reach_is_still_reported(rule, example):
    report = analyze(example.code, example_version(example), example.assume, tuple(sorted(rule.removed_by)))
    assert sorted({f.line for f in report.findings if f.code == rule.code}) == example.expected_lines()


def test_a_setting_in_the_file_counts():
    rule = next(r for r in ALL_RULES if r.code == "TCL203")
    code = rule.INVALID[0].code.replace("import torch\n", "import torch\nimport torch._dynamo as dynamo\n"
                                        "dynamo.config.capture_scalar_outputs = True\n", 1)
    assert "capture_scalar_outputs" in code
    assert [f.code for f in analyze(code, example_version(rule.INVALID[0])).findings] == []


torch = pytest.importorskip("torch")


def _settings(example):
    import contextlib

    if not example.settings:
        return contextlib.nullcontext()
    return torch._dynamo.config.patch(**config_values(example.settings))


@pytest.mark.parametrize("rule, example", REMOVED_CASES)
def test_setting_removes_the_break_on_installed_torch(rule, example):
    """What `removed_by` claims, on the compiler: under the settings the example's lines do not
    break; for a recompile rule, the compilations stop growing with the number of calls."""
    if not example.applies_to(INSTALLED):
        pytest.skip(f"example is for torch {example.versions}")
    settings = config_values(removed_by(rule, example))
    if rule.category == "crash":
        with torch._dynamo.config.patch(**settings):
            assert crashing_calls(example) == ([], None)
        return
    if rule.category == "recompile":
        with torch._dynamo.config.patch(**settings):
            few, many = compiles(example, repeat=6), compiles(example, repeat=12)
        assert few == many <= 3, (few, many)
        return
    from tcl.oracle import probe_source

    with torch._dynamo.config.patch(**settings):
        result = probe_source(example.code, example.entry, example.args)
    assert result.exception is None
    assert set(runtime_lines(result, rule)) & set(example.expected_lines()) == set()


@pytest.mark.parametrize("rule, example", [case for case in KEPT_CASES if case.values[0].category == "recompile"])
def test_an_example_the_setting_does_not_reach_still_recompiles(rule, example):
    with torch._dynamo.config.patch(**config_values(rule.removed_by)):
        assert compiles(example, repeat=6) == 6


def runtime_lines(result, rule):
    return sorted({b.line - rule.runtime_line_offset for b in result.breaks})


def compiles(example, repeat: int | None = None) -> int:
    """Compilations over the example's calls (recompile rules); `repeat`: its first call, that
    many times."""
    from tcl.verify.recompiles import count_compiles

    target, calls, options = _compile_target(example)
    if repeat is not None:
        calls = [calls[0]] * repeat
    return count_compiles(target, calls, **options)


def persistent_calls(example) -> list[int]:
    """The calls (0-based) on which some frame recompiled again after its automatic-dynamic
    recompile: the runtime truth of `persistent` rules, graph breaks or not."""
    from tcl.verify.compile_trace import CompileTrace, persistent

    target, calls, options = _compile_target(example)
    torch._dynamo.reset()
    compiled = torch.compile(target, backend="eager", **options)
    with CompileTrace() as trace:
        for args in calls:
            trace.next_call()
            compiled(*args)
    torch._dynamo.reset()
    return sorted({c.call for c in persistent(trace.compilations)})


def crashing_calls(example, compiled: bool = True) -> tuple[list[int], int | None]:
    """The calls (0-based) that raise, compiled (backend eager) or eagerly, and the example's
    line in the innermost frame of the first error: the runtime truth of "crash" rules."""
    import traceback

    target, calls, options = _compile_target(example)
    torch._dynamo.reset()
    run = torch.compile(target, backend="eager", **options) if compiled else target
    raised, line = [], None
    for number, args in enumerate(calls):
        try:
            run(*args)
        except Exception as exc:  # noqa: BLE001 -- the error is what is measured
            raised.append(number)
            if line is None:
                from tcl.verify.recompiles import _frames

                lines = [n for path, n in _frames(exc) if path.endswith("recompile_example.py")]
                line = lines[-1] if lines else None
    torch._dynamo.reset()
    return raised, line


def _compile_target(example):
    import importlib.util
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "recompile_example.py")
        with open(path, "w") as handle:
            handle.write(example.code)
        spec = importlib.util.spec_from_file_location("recompile_example", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        entry = getattr(module, example.entry)
        entry = getattr(entry, "_torchdynamo_orig_callable", entry)
        target = entry() if isinstance(entry, type) else entry
        # The calls may use the example's own names (an object passed in as an argument).
        calls = eval(example.calls, {**vars(module), "torch": torch}) if example.calls else [(torch.randn(4, 4),)] * 3
        return target, calls, compile_options(example.code, example.entry)


# torch.compile keywords that change what Dynamo guards on; the counting backend replaces the rest.
GUARD_OPTIONS = ("dynamic",)


def compile_options(code: str, entry: str) -> dict:
    """The keywords the example's own torch.compile of `entry` passes (`dynamic=False`): the
    entry is unwrapped and compiled again with a counting backend, which must keep them."""
    import ast

    for node in ast.walk(ast.parse(code)):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == entry:
            calls = [d for d in node.decorator_list if isinstance(d, ast.Call)]
        elif isinstance(node, ast.Call) and node.args and ast.unparse(node.args[0]) == entry:
            calls = [node]
        else:
            continue
        for call in calls:
            if ast.unparse(call.func).rsplit(".", 1)[-1] == "compile":
                return {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg in GUARD_OPTIONS}
    return {}


@pytest.mark.parametrize("rule, example", INVALID_CASES)
def test_invalid_example_breaks_on_installed_torch(rule, example):
    if not example.applies_to(INSTALLED):
        pytest.skip(f"example is for torch {example.versions}")
    if rule.category == "crash":  # eager runs every call; compiled, the first runs, the rest raise
        calls = len(_compile_target(example)[1])
        assert crashing_calls(example, compiled=False) == ([], None)
        assert crashing_calls(example) == (list(range(1, calls)), example.expected_lines()[0])
        return
    if rule.category == "recompile":
        if rule.persistent:  # every new value compiles again, automatic dynamic shapes or not
            calls = len(_compile_target(example)[1])
            assert persistent_calls(example) == list(range(2, calls)), (
                "expected a recompile on every call after the automatic-dynamic one")
        else:
            assert compiles(example) > 1, "expected the calls to recompile"
        return
    from tcl.oracle import probe_source

    with _settings(example):
        result = probe_source(example.code, example.entry, example.args)
    assert result.exception is None
    if not example.default_breaks:
        assert result.breaks == [], "example says default mode logs no break"
        error = result.fullgraph_error
        assert error is not None and error.gb in rule.gb_ids()
        assert [error.line] == example.expected_lines()
        return
    assert runtime_lines(result, rule) == example.expected_lines()
    assert {b.gb for b in result.breaks} <= set(rule.gb_ids())
    fullgraph_breaks = example.fullgraph_breaks
    if fullgraph_breaks is None:
        fullgraph_breaks = "fullgraph" in rule.modes
    if not fullgraph_breaks:
        assert result.fullgraph_error is None or result.fullgraph_error.gb is None, (
            "rule says default mode only, but fullgraph=True broke with a GB id"
        )
    else:
        assert result.fullgraph_error is not None, "rule says fullgraph=True breaks too"


@pytest.mark.parametrize("rule, example", VALID_CASES)
def test_valid_example_compiles_without_break(rule, example):
    if not example.applies_to(INSTALLED):
        pytest.skip(f"example is for torch {example.versions}")
    if rule.category == "crash":
        assert crashing_calls(example, compiled=False) == ([], None), "the example's own calls must run"
        assert crashing_calls(example) == ([], None)
        return
    if rule.category == "recompile":
        if rule.persistent:  # the one automatic-dynamic recompile is allowed
            assert persistent_calls(example) == [], "expected at most the automatic-dynamic recompile"
        else:
            assert compiles(example) == 1, "expected one compilation for all calls"
        return
    from tcl.oracle import probe_source

    with _settings(example):
        result = probe_source(example.code, example.entry, example.args)
    assert result.exception is None
    assert result.breaks == []
    assert result.first_error is None
