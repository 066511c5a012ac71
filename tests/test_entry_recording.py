"""Recording what goes through torch.compile (tcl/entry_recording.py), and `pytest --tcl-record`'s
recorded_entries.json. Real torch on the CPU, backend="eager" wherever a compiled callable runs.

Budget: a few seconds in process; the pytester test starts one inner pytest (torch import, 3 s),
the xdist test another (skipped without pytest-xdist).
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import sys
import textwrap
from pathlib import Path

import pytest

from tcl import entry_recording
from tcl.entry_recording import (
    CompileRecorder, bindings_of, entry_of, merge_entry_files, module_classes_of, read_entry_file, record_entries,
    write_entry_file,
)
from tcl.safe_files import Refused

torch = pytest.importorskip("torch")

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parent.parent

MODELS = textwrap.dedent('''\
    import torch
    from torch import nn


    class Base(nn.Module):
        def forward(self, x):
            return x + 1

        def helper(self, x):
            return x * 2


    class Sub(Base):
        pass


    class Aliased(nn.Module):
        def _impl(self, x):
            return x - 1

        forward = _impl
        run = _impl


    def step(x, scale=1.0):
        return x * scale


    class Scaler:
        def __init__(self, factor):
            self.factor = factor

        def __call__(self, x):
            return x * self.factor


    class Tools:
        @classmethod
        def build(cls, x):
            return x

        @staticmethod
        def static(x):
            return x


    def make():
        def local_step(x):
            return x + 3

        return local_step
''')

DECORATED = textwrap.dedent('''\
    import torch


    def plain(x):
        return x + 1


    @torch.compile
    def bare(x):
        return x + 2


    @torch.compile(fullgraph=True, backend="eager")
    def with_options(x):
        return x * 2


    @torch.compile(backend="eager", dynamic=False)
    def with_more_options(x):
        return x * 3
''')


def _import(tmp_path: Path, monkeypatch, name: str, source: str):
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)
    module = __import__(name)
    return module, str(path.resolve())


@pytest.fixture
def models(tmp_path, monkeypatch):
    module, path = _import(tmp_path, monkeypatch, "tclent_models", MODELS)
    yield module, path
    sys.modules.pop("tclent_models", None)


def _line(path: str, text: str) -> int:
    lines = Path(path).read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if line.strip() == text)


# ---------------------------------------------------------------- naming


def test_module_and_compiled_module_are_class_entries(models):
    m, path = models
    sub_line = _line(path, "class Sub(Base):")
    assert entry_of(m.Sub()) == ("tclent_models:Sub", path, sub_line)
    compiled = torch.compile(m.Sub(), backend="eager")
    assert type(compiled).__name__ == "OptimizedModule"
    assert entry_of(compiled) == ("tclent_models:Sub", path, sub_line)
    # module.compile() hands torch.compile the bound Module._call_impl: still the module's class.
    assert entry_of(m.Sub()._call_impl) == ("tclent_models:Sub", path, sub_line)
    assert entry_of(functools.partial(torch.compile(m.Base(), backend="eager"))) == (
        "tclent_models:Base", path, _line(path, "class Base(nn.Module):"))


def test_bound_method_names_the_instance_class_not_the_defining_one(models):
    m, path = models
    # helper is defined in Base; the spec names Sub (the analyser resolves the MRO itself), the
    # file and line are those of the function's source.
    assert entry_of(m.Sub().helper) == ("tclent_models:Sub.helper", path, _line(path, "def helper(self, x):"))
    assert entry_of(m.Sub().forward) == ("tclent_models:Sub.forward", path, _line(path, "def forward(self, x):"))
    # An alias is named by the attribute the class holds it under, not by the function's __name__.
    impl_line = _line(path, "def _impl(self, x):")
    assert entry_of(m.Aliased()._impl) == ("tclent_models:Aliased._impl", path, impl_line)
    assert entry_of(m.Aliased().run)[0] == "tclent_models:Aliased._impl"  # __name__ is held: it wins
    # A classmethod is bound to the class itself; a staticmethod is a plain function.
    assert entry_of(m.Tools.build)[0] == "tclent_models:Tools.build"
    assert entry_of(m.Tools().static)[0] == "tclent_models:Tools.static"
    assert entry_recording.describe(m.Sub().helper).what == "method"


def test_function_partial_and_callable_object(models):
    m, path = models
    step = ("tclent_models:step", path, _line(path, "def step(x, scale=1.0):"))
    assert entry_of(m.step) == step
    assert entry_of(functools.partial(functools.partial(m.step, scale=2.0))) == step
    # A torch.compile'd function (functools.wraps) names and locates what it wraps.
    assert entry_of(torch.compile(m.step, backend="eager")) == step
    assert entry_of(m.Scaler(3)) == ("tclent_models:Scaler.__call__", path, _line(path, "def __call__(self, x):"))
    kinds = {name: entry_recording.describe(t).what for name, t in
             {"f": m.step, "p": functools.partial(m.step), "c": m.Scaler(1), "m": m.Sub()}.items()}
    assert kinds == {"f": "function", "p": "function", "c": "callable", "m": "module"}


def test_what_cannot_be_named_is_a_one_line_problem(models):
    m, _ = models
    # a def nested in a function is named as such (tcl resolves it in its enclosing def)
    local = entry_of(m.make())
    assert local[0] == "tclent_models:make.<locals>.local_step"
    assert entry_of(functools.partial(m.make(), 1)) == local
    assert "is a lambda" in entry_of(lambda x: x)

    def make_module():
        class Local(torch.nn.Module):
            def forward(self, x):
                return x

        return Local()

    assert "make_module.<locals>.Local` is defined inside a function" in entry_of(make_module())
    assert "is built in" in entry_of(torch.sin)
    assert "is a class" in entry_of(m.Sub)
    assert "is not callable" in entry_of(42)
    problem = entry_recording.describe(make_module())
    assert problem.what.endswith(":test_what_cannot_be_named_is_a_one_line_problem.<locals>.make_module.<locals>.Local")


# ---------------------------------------------------------------- recording


def test_recorder_records_every_form_once_with_counts_and_tests(tmp_path, monkeypatch, models):
    m, path = models
    original = torch.compile
    out = tmp_path / "out" / "recorded_entries.json"
    with record_entries(out) as recorder:
        assert torch.compile is not original
        recorder.current_test = "tests/test_a.py::test_one"
        decorated, decorated_path = _import(tmp_path, monkeypatch, "tclent_decorated", DECORATED)
        assert torch.equal(decorated.with_options(torch.ones(2)), torch.full((2,), 2.0))
        compiled = torch.compile(m.Sub(), backend="eager")
        assert torch.equal(compiled(torch.ones(2)), torch.full((2,), 2.0))
        torch.compile(m.Sub().helper, backend="eager")
        recorder.current_test = "tests/test_a.py::test_two"
        fn = torch.compile(functools.partial(m.step, scale=4.0), backend="eager")
        assert torch.equal(fn(torch.ones(2)), torch.full((2,), 4.0))
        torch.compile(model=m.step, backend="eager")  # the keyword form
        torch.compile(m.Scaler(2), backend="eager")
        torch.compile(m.make(), backend="eager")
        recorder.current_test = None
        torch.compile(m.step, backend="eager")  # no test known: counted, no id
        m.Base().compile(backend="eager")  # nn.Module.compile goes through torch.compile
    assert torch.compile is original
    sys.modules.pop("tclent_decorated", None)

    data = json.loads(out.read_text())
    assert data == read_entry_file(out)
    entries = {e["entry"]: e for e in data["entries"]}
    assert [e["entry"] for e in data["entries"]] == sorted(entries)
    assert {k: (e["what"], e["count"], e["tests"]) for k, e in entries.items()} == {
        "tclent_decorated:bare": ("function", 1, ["tests/test_a.py::test_one"]),
        "tclent_decorated:with_options": ("function", 1, ["tests/test_a.py::test_one"]),
        "tclent_decorated:with_more_options": ("function", 1, ["tests/test_a.py::test_one"]),
        "tclent_models:Base": ("module", 1, []),
        "tclent_models:Sub": ("module", 1, ["tests/test_a.py::test_one"]),
        "tclent_models:Sub.helper": ("method", 1, ["tests/test_a.py::test_one"]),
        "tclent_models:step": ("function", 3, ["tests/test_a.py::test_two"]),
        "tclent_models:Scaler.__call__": ("callable", 1, ["tests/test_a.py::test_two"]),
        "tclent_models:make.<locals>.local_step": ("function", 1, ["tests/test_a.py::test_two"]),
    }
    assert entries["tclent_decorated:with_options"]["file"] == decorated_path
    assert entries["tclent_decorated:with_options"]["line"] == _line(
        decorated_path, '@torch.compile(fullgraph=True, backend="eager")')
    assert entries["tclent_models:Sub"]["file"] == path
    assert data["problems"] == []


STEPS = textwrap.dedent('''\
    import torch
    import tclent_models

    SHARED = tclent_models.Scaler(3)
    LIMIT = 4


    def uses_global(x):
        return SHARED(x) * LIMIT
''')


def test_bindings_name_the_classes_free_variables_and_globals_held(tmp_path, monkeypatch, models):
    m, _ = models
    steps, _ = _import(tmp_path, monkeypatch, "tclent_steps", STEPS)
    net, scaler, count, weight = m.Sub(), m.Scaler(2.0), 3, torch.ones(1)

    def step(x):
        return net(scaler(x)) * count + weight + torch.ones(1) + len([m.step])

    # instances of importable classes only: no int, tensor, module (torch, m) or function
    assert bindings_of(step) == {"net": "tclent_models:Sub", "scaler": "tclent_models:Scaler"}
    assert bindings_of(steps.uses_global) == {"SHARED": "tclent_models:Scaler"}  # a global it reads
    assert bindings_of(functools.partial(step)) == bindings_of(step)
    assert bindings_of(m.Sub()) == {} and bindings_of(m.Sub().helper) == {}  # `self` is the entry

    out = tmp_path / "rec.json"
    with record_entries(out):
        torch.compile(step, backend="eager")
        other = m.Base()

        def step(x):  # the same qualname, another class held: both are kept
            return net(x) + other(x)

        torch.compile(step, backend="eager")
        torch.compile(m.Sub(), backend="eager")
    entries = {e["entry"]: e for e in json.loads(out.read_text())["entries"]}
    recorded = entries[f"{__name__}:test_bindings_name_the_classes_free_variables_and_globals_held.<locals>.step"]
    assert recorded["bindings"] == {"net": ["tclent_models:Sub"], "other": ["tclent_models:Base"],
                                    "scaler": ["tclent_models:Scaler"]}
    assert "bindings" not in entries["tclent_models:Sub"]
    sys.modules.pop("tclent_steps", None)


def test_module_classes_name_every_submodule_class_of_what_is_compiled(tmp_path, models):
    m, _ = models
    holder = torch.nn.Sequential(m.Sub(), torch.nn.ModuleList([m.Base(), torch.nn.Linear(2, 2)]), m.Aliased())
    # the container's own torch classes are left out; each class once, in module order
    assert module_classes_of(holder) == ["tclent_models:Sub", "tclent_models:Base", "tclent_models:Aliased"]
    assert module_classes_of(holder.forward) == module_classes_of(holder)  # a bound method's module
    assert module_classes_of(torch.compile(holder, backend="eager")) == module_classes_of(holder)

    def step(x):
        return holder(x)

    assert module_classes_of(step) == module_classes_of(holder)  # through a free variable
    assert module_classes_of(m.step) == [] and module_classes_of(m.Scaler(1.0)) == []

    out = tmp_path / "rec.json"
    with record_entries(out):
        torch.compile(holder, backend="eager")
        torch.compile(m.Sub(), backend="eager")
    entries = {e["entry"]: e for e in json.loads(out.read_text())["entries"]}
    assert entries["torch.nn.modules.container:Sequential"]["modules"] == module_classes_of(holder)
    assert entries["tclent_models:Sub"]["modules"] == ["tclent_models:Sub"]


def test_the_file_format(tmp_path, models):
    m, path = models
    out = tmp_path / "entries.json"
    with record_entries(out) as recorder:
        for i in range(7):
            recorder.current_test = f"t.py::test_{i}"
            torch.compile(m.step, backend="eager")
            torch.compile(lambda x: x, backend="eager")
    data = json.loads(out.read_text())
    assert list(data) == ["format", "version", "torch", "entries", "problems"]
    assert (data["format"], data["version"], data["torch"]) == ("tcl-recorded-entries", 1, torch.__version__)
    assert data["entries"] == [{"entry": "tclent_models:step", "file": path, "line": _line(path, "def step(x, scale=1.0):"),
                                "what": "function", "count": 7, "tests": [f"t.py::test_{i}" for i in range(5)]}]
    (problem,) = data["problems"]
    assert list(problem) == ["what", "why", "tests"] and len(problem["tests"]) == 5
    assert problem["what"].endswith("<lambda>") and "is a lambda" in problem["why"]
    assert out.read_text().endswith("}\n") and not list(tmp_path.glob("*.tmp"))
    assert read_entry_file(out)["entries"][0]["count"] == 7
    (tmp_path / "other.json").write_text('{"format": "tcl-recorded-inputs", "version": 1}')
    with pytest.raises(ValueError, match="not a recorded-entries file"):
        read_entry_file(tmp_path / "other.json")


def test_original_restored_and_file_written_after_an_exception(tmp_path, models):
    m, _ = models
    original = torch.compile
    out = tmp_path / "entries.json"
    with pytest.raises(RuntimeError, match="the test failed"):
        with record_entries(out):
            torch.compile(m.step, backend="eager")
            raise RuntimeError("the test failed")
    assert torch.compile is original
    assert [e["entry"] for e in read_entry_file(out)["entries"]] == ["tclent_models:step"]
    # A decorator made while recording and applied after it: passes through, records nothing.
    recorder = CompileRecorder(None)
    with recorder:
        decorator = torch.compile(backend="eager")
    compiled = decorator(m.step)
    assert torch.equal(compiled(torch.ones(2), 3.0), torch.full((2,), 3.0))
    assert recorder.index()["entries"] == [] and torch.compile is original


def test_recording_never_fails_the_compile_call(tmp_path, monkeypatch, models):
    m, _ = models

    def broken(target):
        raise RuntimeError("naming exploded")

    monkeypatch.setattr(entry_recording, "describe", broken)
    with record_entries(tmp_path / "entries.json") as recorder:
        recorder.current_test = "t.py::test_x"
        compiled = torch.compile(m.step, backend="eager")
        decorated = torch.compile(backend="eager")(m.step)
        with pytest.raises(RuntimeError, match="Model can't be None"):  # torch's own errors stay
            torch.compile(backend="eager")(None)
    assert torch.equal(compiled(torch.ones(2), 2.0), torch.full((2,), 2.0))
    assert torch.equal(decorated(torch.ones(2), 5.0), torch.full((2,), 5.0))
    index = read_entry_file(tmp_path / "entries.json")
    assert index["entries"] == []
    why = "tcl could not name it: RuntimeError: naming exploded"
    assert index["problems"] == [{"what": "builtins:NoneType instance", "why": why, "tests": ["t.py::test_x"]},
                                 {"what": "tclent_models:step", "why": why, "tests": ["t.py::test_x"]}]


def test_atomic_write_never_goes_through_a_link(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    out = tmp_path / "entries.json"
    index = entry_recording._document("2.x", [], [])
    temp = Path(f"{out}.{os.getpid()}.tmp")
    temp.symlink_to(victim)
    with pytest.raises(Refused, match="is a symlink: not writing through it"):
        write_entry_file(out, index)
    assert victim.read_text() == "precious\n" and not out.exists() and temp.is_symlink()
    temp.unlink()
    temp.write_text("left by a killed session")  # a regular leftover is replaced
    out.symlink_to(victim)  # a link at the target is replaced by the file, its target untouched
    write_entry_file(out, index)
    assert victim.read_text() == "precious\n" and not out.is_symlink() and not temp.exists()
    assert json.loads(out.read_text())["format"] == "tcl-recorded-entries"


def test_merge_of_worker_parts(tmp_path):
    def entry(name, count, tests):
        return {"entry": name, "file": f"/src/{name}.py", "line": 3, "what": "function", "count": count,
                "tests": tests}

    problem = {"what": "m:f.<locals>.g", "why": "`f.<locals>.g` is defined inside a function", "tests": ["a::1"]}
    write_entry_file(tmp_path / "p.gw0.part", entry_recording._document(
        "2.13", [entry("m:b", 2, ["a::1", "a::2", "a::3"]), entry("m:a", 1, [])], [problem]))
    write_entry_file(tmp_path / "p.gw1.part", entry_recording._document(
        "2.13", [dict(entry("m:b", 3, ["a::3", "b::1", "b::2", "b::3"]), bindings={"opt": ["m:Adam"]},
                      modules=["m:Block", "m:Head"])],
        [dict(problem, tests=["b::9"])]))
    merged = merge_entry_files([tmp_path / "p.gw0.part", tmp_path / "p.gw1.part"], tmp_path / "all.json")
    assert merged == read_entry_file(tmp_path / "all.json")
    assert merged["torch"] == "2.13"
    assert [(e["entry"], e["count"], e["tests"]) for e in merged["entries"]] == [
        ("m:a", 1, []), ("m:b", 5, ["a::1", "a::2", "a::3", "b::1", "b::2"])]
    assert [e.get("bindings") for e in merged["entries"]] == [None, {"opt": ["m:Adam"]}]  # joined per name
    assert [e.get("modules") for e in merged["entries"]] == [None, ["m:Block", "m:Head"]]
    assert merged["problems"] == [dict(problem, tests=["a::1", "b::9"])]


def test_eval_worker_reports_the_entry(models, monkeypatch):
    m, _ = models
    monkeypatch.setattr(sys, "path", list(sys.path))  # worker.py puts eval/ and the repo on it
    spec = importlib.util.spec_from_file_location("tcl_eval_worker", REPO / "eval" / "worker.py")
    worker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(worker)
    assert worker._entry(m.Sub()) == {"entry": "tclent_models:Sub"}
    assert worker._entry(m.make()) == {"entry": "tclent_models:make.<locals>.local_step"}
    assert "is a lambda" in worker._entry(lambda x: x)["entry_problem"]


# ---------------------------------------------------------------- pytest --tcl-record

INNER_MODELS = textwrap.dedent('''\
    import torch
    from torch import nn


    class Net(nn.Module):
        def forward(self, x):
            return x * 2


    def double(x):
        return x * 2


    @torch.compile(backend="eager")
    def at_import(x):
        return x + 1
''')

INNER_TESTS = textwrap.dedent('''\
    import torch

    import tinyents


    def test_module():
        compiled = torch.compile(tinyents.Net(), backend="eager")
        assert torch.equal(compiled(torch.ones(2)), torch.full((2,), 2.0))


    def test_decorator_with_options():
        compiled = torch.compile(fullgraph=True, backend="eager")(tinyents.double)
        assert torch.equal(compiled(torch.ones(2)), torch.full((2,), 2.0))
        assert torch.equal(tinyents.at_import(torch.ones(1)), torch.full((1,), 2.0))


    def test_local():
        def inner(x):
            return x

        torch.compile(inner, backend="eager")
''')


def _inner_project(pytester):
    pytester.makepyfile(tinyents=INNER_MODELS, test_ents=INNER_TESTS)
    pytester.syspathinsert()


def test_pytest_tcl_record_writes_recorded_entries(pytester):
    _inner_project(pytester)
    result = pytester.runpytest_subprocess("--tcl-record", "-p", "no:cacheprovider", "-p", "no:randomly")
    result.assert_outcomes(passed=3)
    data = read_entry_file(pytester.path / ".tcl" / "recorded_entries.json")
    tests = {e["entry"]: (e["what"], e["count"], e["tests"]) for e in data["entries"]}
    assert tests == {
        "tinyents:Net": ("module", 1, ["test_ents.py::test_module"]),
        "tinyents:double": ("function", 1, ["test_ents.py::test_decorator_with_options"]),
        "tinyents:at_import": ("function", 1, []),  # decorated while the tests were collected
        "test_ents:test_local.<locals>.inner": ("function", 1, ["test_ents.py::test_local"]),
    }
    files = {e["entry"]: e["file"] for e in data["entries"]}
    assert files["tinyents:Net"] == str((pytester.path / "tinyents.py").resolve())
    assert data["problems"] == []
    result.stdout.fnmatch_lines([
        "*= tcl record =*",
        "tcl: recorded 4 compiled entries to .tcl/recorded_entries.json",
    ])
    assert (pytester.path / ".tcl" / "recorded_inputs.zip").is_file()  # the inputs are still recorded
    assert not list((pytester.path / ".tcl").glob("*.tmp"))


def test_pytest_tcl_record_under_xdist_merges_the_workers_entries(pytester):
    pytest.importorskip("xdist")
    _inner_project(pytester)
    result = pytester.runpytest_subprocess("--tcl-record", "-n", "2", "-p", "no:cacheprovider",
                                           "-p", "no:randomly")
    result.assert_outcomes(passed=3)
    data = read_entry_file(pytester.path / ".tcl" / "recorded_entries.json")
    # Each worker imported tinyents: the import-time decorator is counted once per worker.
    assert {e["entry"]: e["count"] for e in data["entries"]} == {
        "tinyents:Net": 1, "tinyents:double": 1, "tinyents:at_import": 2}
    assert len(data["problems"]) == 1
    assert not list((pytester.path / ".tcl").glob("*.part"))
    assert result.stdout.str().count("tcl: recorded 3 compiled entries") == 1
