"""The pytest plugin (plugins/tcl_pytest.py) as users run it: `python -m pytest` in a subprocess
on a temporary project, found through tcl's `pytest11` entry point (`pip install -e .`).

Budget: about 30 s on 2 cores; each inner pytest that imports torch costs 2-3 s, the replay runs
the eager backend.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from tcl import recording
from tcl.verify import child as verify_child

torch = pytest.importorskip("torch")

REPO = Path(__file__).resolve().parent.parent

MODELS = textwrap.dedent('''\
    import torch
    from torch import nn


    class Printer(nn.Module):
        def __init__(self, width: int) -> None:
            super().__init__()
            self.proj = nn.Linear(width, width)

        def forward(self, x, scale=1.0):
            print("input", x.shape)
            return self.proj(x) * scale


    class Branchy(nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                return x * 2
            return x - 1


    class Counter(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("calls", torch.zeros(()))

        def forward(self, x, *, factor):
            self.calls += 1
            return x * factor
''')

TESTS = textwrap.dedent('''\
    import pytest
    import torch
    from torch import nn

    from tinynet.models import Branchy, Counter, Printer


    def test_printer():
        assert Printer(4)(torch.ones(2, 4), scale=2.0).shape == (2, 4)


    def test_branchy_rejects_strings():
        with pytest.raises(AttributeError):
            Branchy()("not a tensor")


    def test_branchy():
        assert torch.equal(Branchy()(torch.ones(3)), torch.full((3,), 2.0))
        assert torch.equal(Branchy()(-torch.ones(3)), torch.full((3,), -2.0))


    def test_compiled_counter():
        compiled = torch.compile(Counter(), backend="eager", fullgraph=True)
        assert torch.equal(compiled(torch.ones(2), factor=3.0), torch.full((2,), 3.0))


    def test_local_class():
        class Local(nn.Module):
            def forward(self, x):
                return x + 1

        assert Local()(torch.zeros(1)).item() == 1.0
''')

# Test code: --tcl leaves it out unless --tcl-path names tests/.
HELPERS = textwrap.dedent('''\
    import torch


    @torch.compile
    def noisy(x):
        print(x)
        return x + 1
''')

CLEAN = textwrap.dedent('''\
    import torch
    from torch import nn


    class Gate(nn.Module):
        def forward(self, x):
            if x.shape[0] > 1:  # metadata: fine
                x = torch.where(x > 0, x, -x)
            if x.sum() > 100:  # noqa: TCL201
                x = x / 2
            return x
''')

PYPROJECT = textwrap.dedent('''\
    [tool.pytest.ini_options]
    testpaths = ["tests"]
    # The warning torch gives for global hooks on a compiled module's calls is a UserWarning:
    # the plugin's hooks must not make the user's tests fail on it.
    # Other plugins' deprecation notices (pytest-asyncio's, at configure time) are not the point.
    filterwarnings = ["error::UserWarning", "ignore::pytest.PytestDeprecationWarning"]
''')


def make_project(root: Path, models: str, tests: str) -> Path:
    files = {"pyproject.toml": PYPROJECT, "tinynet/__init__.py": "", "tinynet/models.py": models,
             "tests/test_models.py": tests, "tests/helpers.py": HELPERS}
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def _env() -> dict:
    env = dict(os.environ)
    # The plugin must come from the installed entry point, and the project's own settings rule.
    for name in ("PYTHONPATH", "PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        env.pop(name, None)
    return env


def run(project: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=project, env=_env(), capture_output=True,
                          text=True, timeout=timeout)


def pytest_in(project: Path, *args: str) -> subprocess.CompletedProcess:
    return run(project, "-m", "pytest", "-p", "no:cacheprovider", *args)


@pytest.fixture
def hazards(tmp_path):
    return make_project(tmp_path, MODELS, TESTS)


def test_idle_plugin_is_loaded_and_imports_nothing_heavy(tmp_path):
    make_project(tmp_path, "X = 1\n", textwrap.dedent('''\
        import sys


        def test_plugin_loaded_lazily():
            assert "tcl_pytest" in sys.modules, "entry point not registered: pip install -e ."
            heavy = [m for m in ("torch", "libcst", "tcl.engine", "tcl.runner") if m in sys.modules]
            assert heavy == []
    '''))
    result = pytest_in(tmp_path, "-q")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "tcl check" not in result.stdout and "tcl record" not in result.stdout
    options = set(re.findall(r"--tcl[\w-]*", pytest_in(tmp_path, "--help").stdout))
    assert {"--tcl", "--tcl-path", "--tcl-record", "--tcl-select"} <= options
    docs = (REPO / "docs" / "integrations.md").read_text(encoding="utf-8")
    assert [option for option in sorted(options) if option not in docs] == []


def test_tcl_fails_the_session_with_tcl_check_lines(hazards):
    result = pytest_in(hazards, "--tcl", "-q")
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    assert "5 passed" in out  # the tests themselves pass: the findings fail the session
    check = run(hazards, "-m", "tcl", "check", "--format", "flake8", "tinynet")
    assert check.returncode == 1
    expected = check.stdout.splitlines()
    assert [line.split(" ", 2)[:2] for line in expected] == [
        ["tinynet/models.py:11:9:", "TCL101"], ["tinynet/models.py:17:12:", "TCL201"]]
    section = out.split("= tcl check =", 1)[1].splitlines()[1:]
    assert section[:2] == expected  # byte for byte what `tcl check` prints
    assert section[2].startswith("tcl: 2 findings; 2 files checked in tinynet (the packages the tests import")
    assert "tests/" not in out.split("= tcl check =", 1)[1]  # the compiled print in the tests is not checked

    # Named paths are checked as given; the check runs after collection, so --collect-only has it.
    chosen = pytest_in(hazards, "--tcl", "--tcl-path", "tinynet", "--tcl-path", "tests",
                       "--tcl-select", "TCL101", "--collect-only", "-q")
    lines = [line for line in chosen.stdout.splitlines() if ": TCL" in line]
    assert chosen.returncode == 1, chosen.stdout + chosen.stderr
    assert [line.split(" ", 2)[:2] for line in lines] == [
        ["tests/helpers.py:6:5:", "TCL101"], ["tinynet/models.py:11:9:", "TCL101"]]


def test_clean_project_passes(tmp_path):
    make_project(tmp_path, CLEAN, textwrap.dedent('''\
        import torch

        from tinynet.models import Gate


        def test_gate():
            assert Gate()(torch.ones(2)).shape == (2,)
    '''))
    result = pytest_in(tmp_path, "--tcl", "-q")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "tcl: no findings; 2 files checked in tinynet" in result.stdout


def test_record_then_replay_confirms_the_findings(hazards):
    result = pytest_in(hazards, "--tcl-record", "-q")
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    recording = hazards / ".tcl" / "recorded_inputs.zip"
    with zipfile.ZipFile(recording) as archive:
        index = json.loads(archive.read("index.json"))
    records = {r["class"]: r for r in index["records"]}
    assert set(records) == {"tinynet.models.Printer", "tinynet.models.Branchy", "tinynet.models.Counter"}
    assert records["tinynet.models.Printer"]["signature"] == "Tensor[2, 4] float32, scale=2.0"
    # The call inside pytest.raises failed, so the first recorded call is the next one.
    assert records["tinynet.models.Branchy"]["test"] == "tests/test_models.py::test_branchy"
    # A torch.compile'd module is recorded through its OptimizedModule wrapper.
    assert records["tinynet.models.Counter"]["signature"] == "Tensor[2] float32, factor=3.0"
    assert records["tinynet.models.Printer"]["file"] == str((hazards / "tinynet" / "models.py").resolve())
    assert [p["class"] for p in index["problems"]] == ["test_models.test_local_class.<locals>.Local"]
    assert "tcl: recorded the first call of 3 nn.Module classes in .tcl/recorded_inputs.zip" in out
    assert "replay: tcl verify --replay .tcl/recorded_inputs.zip tinynet" in out
    # The compiled entries go beside the recording (tests/test_entry_recording.py has the details).
    assert "tcl: recorded 1 compiled entry to .tcl/recorded_entries.json" in out
    entries = json.loads((hazards / ".tcl" / "recorded_entries.json").read_text())
    assert [(e["entry"], e["tests"]) for e in entries["entries"]] == [
        ("tinynet.models:Counter", ["tests/test_models.py::test_compiled_counter"])]

    # The instance is saved as it was before its first call: forward's `self.calls += 1` is not in it.
    counter = records["tinynet.models.Counter"]
    saved_path = list(sys.path)
    try:
        (module, args, kwargs), = verify_child._load_recorded(
            {"recording": str(recording), "entries": [counter["entry"]], "path": counter["file"]})
    finally:  # the project's package must not stay importable in this process
        sys.path[:] = saved_path
        for name in [n for n in sys.modules if n == "tinynet" or n.startswith("tinynet.")]:
            del sys.modules[name]
    assert module.calls.item() == 0 and kwargs == {"factor": 3.0}
    assert torch.equal(args[0], torch.ones(2))

    replay = run(hazards, "-m", "tcl", "verify", "--replay", ".tcl/recorded_inputs.zip", "tinynet",
                 "--device", "cpu", "--backend", "eager", "--format", "json", "--no-config")
    assert replay.returncode == 0, replay.stdout + replay.stderr
    report = json.loads(replay.stdout)
    statuses = {(f["code"], f["line"]): f["status"] for f in report["findings"]}
    assert statuses == {("TCL101", 11): "confirmed", ("TCL201", 17): "confirmed"}
    # Numbered in the order the tests ran (which a plugin like pytest-randomly may shuffle).
    numbered = [re.fullmatch(r"(.*)\[(\d)\] (.*)", e["name"]).groups() for e in report["examples"]]
    assert sorted(n for _, n, _ in numbered) == ["0", "1", "2"]
    assert sorted(f"{head} {tail}" for head, _, tail in numbered) == [
        "tinynet/models.py (replay) Branchy from tests/test_models.py::test_branchy",
        "tinynet/models.py (replay) Counter from tests/test_models.py::test_compiled_counter",
        "tinynet/models.py (replay) Printer from tests/test_models.py::test_printer",
    ]
    assert all(e["status"] == "ok" for e in report["examples"])


def test_replay_of_classes_outside_the_checked_files_is_a_usage_error(tmp_path):
    make_project(tmp_path, MODELS, "")
    (tmp_path / "other.py").write_text("import torch\n\n\n@torch.compile\ndef f(x):\n    return x\n")
    recording = tmp_path / "rec.zip"
    with zipfile.ZipFile(recording, "w") as archive:
        archive.writestr("index.json", json.dumps({
            "format": "tcl-recorded-inputs", "version": 1, "records": [{
                "class": "tinynet.models.Printer", "module": "tinynet.models", "qualname": "Printer",
                "file": str(tmp_path / "tinynet" / "models.py"), "entry": "records/0.pt"}],
            "problems": []}))
    result = run(tmp_path, "-m", "tcl", "verify", "--replay", "rec.zip", "other.py", "--device", "cpu",
                 "--no-config")
    assert result.returncode == 2
    assert "1 recorded classes are defined in files not checked here: tinynet.models.Printer" in result.stderr
    assert "no examples" in result.stderr
    bad = run(tmp_path, "-m", "tcl", "verify", "--replay", "other.py", "other.py", "--device", "cpu")
    assert bad.returncode == 2 and "not a `pytest --tcl-record` file" in bad.stderr


def test_record_option_swallowing_a_test_path_is_a_usage_error(hazards):
    result = pytest_in(hazards, "--tcl-record", "tests")
    assert result.returncode == 4
    assert "write --tcl-record=PATH" in result.stderr


# ---------------------------------------------------------------- the recorder in process


RECORDED = textwrap.dedent('''\
    import torch
    from torch import nn


    class Adder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("n", torch.zeros(()))

        def forward(self, x, *, bias):
            self.n += 1
            bias.add_(1)  # mutates its keyword argument
            return x + bias


    class Tree(nn.Module):
        def __init__(self, depth: int) -> None:
            super().__init__()
            self.child = Tree(depth - 1) if depth else None

        def forward(self, x):
            return x if self.child is None else self.child(x) + 1
''')


@pytest.mark.parametrize("torch_shows_kwargs", [True, False])
def test_recorder_first_successful_call_and_keyword_arguments(tmp_path, monkeypatch, torch_shows_kwargs):
    name = f"tclrec_{'kw' if torch_shows_kwargs else 'nokw'}"
    source = tmp_path / f"{name}.py"
    source.write_text(RECORDED)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = __import__(name)
    if not torch_shows_kwargs:  # a torch whose _call_impl no longer holds them
        monkeypatch.setattr(recording, "_call_kwargs", lambda frame, module: None)
    root = str(tmp_path.resolve())
    recorder = recording.Recorder(str(tmp_path / "rec.zip"), [root], root)
    recorder.start()
    try:
        adder = module.Adder()
        with pytest.raises(TypeError):
            adder(torch.ones(2))  # no bias: raises, so not an example
        adder(torch.ones(2), bias=torch.full((2,), 3.0))
        adder(torch.zeros(2), bias=torch.zeros(2))
        module.Tree(2)(torch.zeros(1))
    finally:
        index = recorder.finish()
        del sys.modules[name]
    assert torch.nn.modules.module._global_forward_pre_hooks == {}
    assert [r["class"] for r in index["records"]] == [f"{name}.Adder", f"{name}.Tree"]
    examples = verify_child._load_recorded({"recording": str(tmp_path / "rec.zip"), "path": str(source),
                                            "entries": [r["entry"] for r in index["records"]]})
    sys.modules.pop(name, None)
    (adder_copy, args, kwargs), (tree, tree_args, _) = examples
    assert adder_copy.n.item() == 0 and torch.equal(args[0], torch.ones(2))
    # Seen before the call, the keyword argument is as the caller passed it; taken after it
    # (the fallback), it carries forward's in-place change.
    assert torch.equal(kwargs["bias"], torch.full((2,), 3.0 if torch_shows_kwargs else 4.0))
    # The outer call is the example, not the nested calls of the same class inside it.
    assert tree.child is not None and tree.child.child is not None


# ---------------------------------------------------------------- pytest-xdist


def test_xdist_workers_record_and_the_controller_checks_once(hazards):
    pytest.importorskip("xdist")
    result = pytest_in(hazards, "--tcl", "--tcl-record", "-n", "2", "-p", "no:benchmark")
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    assert out.count("= tcl check =") == 1 and out.count(": TCL") == 2
    with zipfile.ZipFile(hazards / ".tcl" / "recorded_inputs.zip") as archive:
        index = json.loads(archive.read("index.json"))
        assert sorted(r["class"].rsplit(".", 1)[1] for r in index["records"]) == ["Branchy", "Counter", "Printer"]
        assert sorted(archive.namelist()) == ["index.json", "records/0.pt", "records/1.pt", "records/2.pt"]
    assert list((hazards / ".tcl").glob("*.part")) == []
