"""Reach beyond forward: calls on objects, compile calls on objects, declared and recorded
entries, and --follow-imports into installed packages (tcl/instances.py, tcl/entries.py,
tcl/installed.py). Each test runs the real runner on a small tree and checks where findings
land; the installed packages are a fake site-packages directory."""

from __future__ import annotations

import json
import textwrap

import pytest

from tcl import installed
from tcl.cli import main
from tcl.config import Config
from tcl.entries import EntryError, parse
from tcl.runner import run


def write(root, name, text):
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def check(paths, **options):
    config = Config(torch_version="2.13", **options)
    result = run([str(p) for p in paths], config, jobs=1)
    return sorted(result.findings, key=lambda f: f.sort_key()), result.all_errors


OBJECTS = """
    import torch
    import torch.nn as nn

    class Dist:
        def __init__(self, t):
            self.t = t

        def log_prob(self, x):
            return x.tolist()

    class Flow(nn.Module):
        def forward(self, c) -> Dist:
            return Dist(c)

    class Encoder:
        def encode(self, x):
            print("encoding")
            return x

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = Encoder()

        def forward(self, x):
            return self.encoder.encode(x)

        def generate(self, x):
            return x.item()

    class Step:
        def __call__(self, x):
            return x.tolist()
"""


def test_calls_on_objects_reach_their_methods(tmp_path):
    write(tmp_path, "lib.py", OBJECTS)
    user = write(tmp_path, "user.py", """
        import torch
        from lib import Flow

        flow = Flow().eval()

        @torch.compile
        def nll(x, c):
            return flow(c).log_prob(x)
    """)
    findings, errors = check([user, tmp_path / "lib.py"])
    assert not errors
    where = {(f.path.rsplit("/", 1)[-1], f.code, f.function) for f in findings}
    assert ("lib.py", "TCL205", "Dist.log_prob") in where  # flow(c) -> Flow.forward -> Dist
    assert ("lib.py", "TCL101", "Encoder.encode") in where  # self.encoder.encode(x) in Net.forward


def test_compile_calls_on_objects_are_entries(tmp_path):
    lib = write(tmp_path, "lib.py", OBJECTS)
    user = write(tmp_path, "user.py", """
        import torch
        from lib import Net, Step

        model = Net()
        fast = torch.compile(model.generate)
        step = torch.compile(Step())

        def train(batches):
            def inner(x):
                return x.tolist()
            inner = torch.compile(inner)
            for x in batches:
                inner(x)
    """)
    findings, errors = check([user, lib])
    assert not errors
    codes = {(f.path.rsplit("/", 1)[-1], f.line, f.code) for f in findings}
    assert ("lib.py", 30, "TCL203") in codes  # Net.generate: x.item()
    assert ("lib.py", 34, "TCL205") in codes  # Step.__call__, compiled as an instance
    assert ("user.py", 11, "TCL205") in codes  # the nested def compiled in train()


def test_compile_of_unresolvable_object_reports_nothing(tmp_path):
    user = write(tmp_path, "user.py", """
        import torch
        model = make_model()
        fast = torch.compile(model.generate)
    """)
    findings, errors = check([user])
    assert findings == [] and errors == []


def test_declared_entries_from_config_and_command_line(tmp_path, capsys):
    write(tmp_path, "pkg/__init__.py", "")
    write(tmp_path, "pkg/steps.py", """
        import torch

        def train_step(x):
            return x.item()

        def make():
            def step(x):
                if x.sum() > 0:
                    return x
                return -x
            return step

        class Runner:
            def run(self, x):
                return x.tolist()
    """)
    write(tmp_path, "pyproject.toml", """
        [tool.tcl]
        entries = ["pkg.steps:train_step"]
    """)
    user = write(tmp_path, "train.py", "import torch\n")
    monkey_cwd = pytest.MonkeyPatch()
    monkey_cwd.chdir(tmp_path)
    try:
        status = main(["check", "train.py", "--no-cache", "--entry", "pkg.steps:make.<locals>.step",
                       "--entry", "pkg.steps:Runner.run", "--torch-version", "2.13"])
    finally:
        monkey_cwd.undo()
    out = capsys.readouterr().out
    assert status == 1
    assert "pkg/steps.py:5:12: TCL203" in out  # from [tool.tcl] entries
    assert "pkg/steps.py:9:12: TCL201" in out  # the nested def
    assert "pkg/steps.py:16:16: TCL205" in out  # Runner.run
    assert user.exists()


@pytest.mark.parametrize("spec, message", [
    ("pkg.steps:Nope", "entry pkg.steps:Nope: pkg/steps.py defines no Nope"),
    ("pkg.steps:Runner.nope", "class Runner has no method nope"),
    ("pkg.steps:make.<locals>.zz", "make defines no nested zz"),
    ("nowhere.mod:f", "entry nowhere.mod:f: no module nowhere.mod among the checked files"),
])
def test_an_entry_that_names_nothing_is_one_line_and_the_run_goes_on(tmp_path, capsys, spec, message):
    write(tmp_path, "pkg/__init__.py", "")
    write(tmp_path, "pkg/steps.py", """
        import torch

        def make():
            def step(x):
                return x.item()
            return step

        class Runner:
            def run(self, x):
                return x.tolist()
    """)
    monkey = pytest.MonkeyPatch()
    monkey.chdir(tmp_path)
    try:
        status = main(["check", "pkg", "--no-cache", "--no-config", "--entry", spec,
                       "--entry", "pkg.steps:Runner.run", "--torch-version", "2.13"])
    finally:
        monkey.undo()
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if "entry" in line]
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in captured.err
    assert "pkg/steps.py:11:16: TCL205" in captured.out  # the good entry still ran
    assert status == 2


def test_malformed_entry_is_a_config_error():
    with pytest.raises(EntryError, match="expected module.path:Name"):
        parse("pkg.steps.train_step", "--entry")
    assert parse("a.b:C.m", "--entry").text == "a.b:C.m"


def test_recorded_entries_are_read_and_stale_ones_reported(tmp_path, capsys):
    write(tmp_path, "pkg/__init__.py", "")
    write(tmp_path, "pkg/model.py", """
        import torch

        class Base:
            def sample(self, x):
                return x.item()

        class Model(Base):
            pass
    """)
    write(tmp_path, "pyproject.toml", "[tool.tcl]\n")
    (tmp_path / ".tcl").mkdir()
    (tmp_path / ".tcl" / "recorded_entries.json").write_text(json.dumps({
        "format": "tcl-recorded-entries", "version": 1, "torch": "2.13.0",
        "entries": [
            {"entry": "pkg.model:Model.sample", "file": str(tmp_path / "pkg" / "model.py"), "line": 8,
             "what": "method", "count": 1, "tests": []},
            {"entry": "pkg.model:Gone.run", "file": None, "line": None, "what": "method", "count": 1, "tests": []},
        ],
        "problems": [],
    }))
    monkey = pytest.MonkeyPatch()
    monkey.chdir(tmp_path)
    try:
        status = main(["check", "pkg", "--no-cache", "--torch-version", "2.13"])
    finally:
        monkey.undo()
    captured = capsys.readouterr()
    assert "pkg/model.py:6:16: TCL203" in captured.out  # Model.sample, inherited from Base
    assert "entry pkg.model:Gone.run" in captured.err and "defines no Gone" in captured.err
    assert status == 2


def test_unreadable_recording_is_one_line(tmp_path):
    bad = tmp_path / "rec.json"
    bad.write_text("{not json")
    user = write(tmp_path, "user.py", "import torch\n")
    findings, errors = check([user], recorded_entries=str(bad))
    assert len(errors) == 1 and "cannot read recorded entries" in str(errors[0])


@pytest.fixture
def site_packages(tmp_path, monkeypatch):
    site = tmp_path / "site-packages"
    write(site, "fakelib/__init__.py", "from .models import Model, Sampler\n")
    write(site, "fakelib/base.py", """
        import torch.nn as nn

        class Base(nn.Module):
            pass
    """)
    write(site, "fakelib/models.py", """
        import torch
        from .base import Base

        class Model(Base):
            def forward(self, x):
                return self.helper(x)

            def helper(self, x):
                if x.sum() > 0:
                    return x
                return -x

        class Sampler:
            def sample(self, x):
                return x.tolist()

        class Loss(Base):
            def forward(self, x):
                return self.compute(x)

            def compute(self, x):
                return x

        class ItemLoss(Loss):
            def compute(self, x):
                return x.item()

        class Chain(Base):
            def __init__(self, steps):
                super().__init__()
                self.steps = torch.nn.ModuleList(steps)

            def forward(self, x):
                for step in self.steps:
                    x = step(x)
                return x

        class Normalised(Base):
            def forward(self, x):
                if x.max() > 1:
                    return x / x.max()
                return x

        class Stack(Base):
            def __init__(self, layers):
                super().__init__()
                self.layers = torch.nn.ModuleList(layers)

            def forward(self, x):
                for layer in self.layers:
                    layer.reset_cache()
                return x

        class Cached(Base):
            def reset_cache(self):
                return self.pos.item()

            def forward(self, x):
                return x
    """)
    write(site, "brokenlib/__init__.py", "def f(:\n")
    monkeypatch.setattr(installed, "site_directories", lambda: [str(site)])
    return site


def test_follow_imports_reports_library_breaks_at_the_users_line(tmp_path, site_packages):
    user = write(tmp_path / "proj", "train.py", """
        import torch
        import fakelib

        model = fakelib.Model()
        compiled = torch.compile(model)

        sampler = fakelib.Sampler()

        @torch.compile
        def draw(x):
            return sampler.sample(x) + [1]
    """)
    findings, errors = check([user], follow_imports=True)
    assert not errors
    by_code = {f.code: f for f in findings}
    branch = by_code["TCL201"]
    assert branch.path == str(user) and branch.line == 6  # the torch.compile(model) line
    assert branch.library == "fakelib/models.py:10:12"
    assert branch.library_path.endswith("fakelib/models.py")
    listed = by_code["TCL205"]
    assert (listed.path, listed.line) == (str(user), 12)  # the call in draw()
    assert listed.library == "fakelib/models.py:16:16"
    assert "in Sampler.sample at fakelib/models.py:16:16, reached from draw" in listed.context
    # the calls inside the library between the user's line and the hazard: forward -> helper
    assert [(where, line, function) for where, _, line, function in branch.trail] == [
        ("fakelib/models.py:7:16", 7, "Model.forward")]
    assert branch.trail[0][1].endswith("fakelib/models.py")
    assert listed.trail == ()  # draw() calls Sampler.sample itself


def test_a_library_findings_call_path_in_every_output(tmp_path, site_packages, capsys):
    """The call path through installed code shows in the text, one-line, JSON and SARIF
    outputs (a SARIF code flow: the user's line, each call in the library, the hazard)."""
    import json

    user = write(tmp_path / "proj", "train.py", """
        import torch
        import fakelib

        compiled = torch.compile(fakelib.Model())
    """)
    assert main(["check", "--no-cache", "--follow-imports", str(user)]) == 1
    text = capsys.readouterr().out
    assert "    through fakelib/models.py:7:16 (Model.forward)\n" in text
    assert main(["check", "--no-cache", "--follow-imports", "--format", "flake8", str(user)]) == 1
    assert ", through fakelib/models.py:7:16 (Model.forward))" in capsys.readouterr().out
    assert main(["check", "--no-cache", "--follow-imports", "--format", "json", str(user)]) == 1
    finding, = json.loads(capsys.readouterr().out)["findings"]
    assert [(hop["at"], hop["line"], hop["function"]) for hop in finding["trail"]] == [
        ("fakelib/models.py:7:16", 7, "Model.forward")]
    assert main(["check", "--no-cache", "--follow-imports", "--format", "sarif", str(user)]) == 1
    result, = json.loads(capsys.readouterr().out)["runs"][0]["results"]
    steps = result["codeFlows"][0]["threadFlows"][0]["locations"]
    assert [step["location"]["physicalLocation"]["region"]["startLine"] for step in steps] == [5, 7, 10]
    assert steps[1]["location"]["physicalLocation"]["artifactLocation"]["uri"].endswith("fakelib/models.py")


def test_fix_never_writes_installed_code_it_follows_into(tmp_path, site_packages, capsys):
    """`tcl fix --apply --follow-imports train.py` reports the library's break at the user's
    line and rewrites nothing in site-packages: installed code is read-only."""
    (tmp_path / "proj" / ".git").mkdir(parents=True)
    user = write(tmp_path / "proj", "train.py", """
        import torch
        import fakelib

        print("start")
        compiled = torch.compile(fakelib.Normalised())
    """)
    before = {path: path.read_text() for path in site_packages.rglob("*.py")}
    assert main(["fix", "--apply", "--follow-imports", "--no-config", str(user)]) == 1
    out = capsys.readouterr()
    assert f"{user}:6:12: TCL201" in out.out, out  # the library's branch, at the compile call
    assert "fakelib" not in out.err, out.err  # no diff, no write, no refusal: never a target
    assert {path: path.read_text() for path in site_packages.rglob("*.py")} == before


def test_follow_imports_stops_at_the_packages_dynamo_skips(tmp_path, site_packages):
    """tqdm is on Dynamo's THIRDPARTY_SKIPLIST (generated per release into tcl/torch_facts): Dynamo
    never traces its code, and a call into it is itself the break (TCL106). So tcl reports the
    call and does not follow it into tqdm's source, whose counters and locks the compiler never
    sees."""
    write(site_packages, "tqdm/__init__.py", "from .std import tqdm\n")
    write(site_packages, "tqdm/std.py", """
        class tqdm:
            def __init__(self, total=None):
                self.n = 0

            def update(self, n=1):
                self.n += n
                print("progress", self.n)
    """)
    write(site_packages, "steplib/__init__.py", """
        import tqdm


        def step(x, bar):
            bar.update(1)
            return x * 2


        def run(x):
            bar = tqdm.tqdm(total=3)
            return step(x, bar)
    """)
    user = write(tmp_path / "proj", "train.py", """
        import torch
        import steplib

        fast = torch.compile(steplib.run)
    """)
    findings, errors = check([user], follow_imports=True)
    assert not errors
    assert ("TCL106", "steplib/__init__.py:11:11") in [(f.code, f.library) for f in findings]
    assert not [f for f in findings if f.library.startswith("tqdm/")], findings  # never followed


def test_a_compile_of_installed_code_says_it_is_not_read_without_follow_imports(tmp_path, site_packages,
                                                                                 capsys):
    """Without --follow-imports, `tcl check train.py` reads none of what train.py compiles from
    an installed package; instead of a bare "No findings" it notes each such compile call (not a
    finding: the exit status stays 0), in text, JSON and SARIF, and through the cache."""
    user = write(tmp_path / "proj", "train.py", """
        import re
        import torch
        import fakelib
        from fakelib import Sampler

        model = fakelib.Model()
        fast = torch.compile(model)
        sampler = Sampler()
        draw = torch.compile(sampler.sample)
        pattern = re.compile("x")


        def own(x):
            return x


        mine = torch.compile(own)
    """)
    result = run([str(user)], Config(torch_version="2.13"), jobs=1)
    assert [(n.line, n.col) for n in result.notes] == [(8, 8), (10, 8)]
    assert "installed package fakelib (fakelib.Model)" in result.notes[0].message
    assert "--follow-imports" in result.notes[0].message
    assert not run([str(user)], Config(torch_version="2.13", follow_imports=True), jobs=1).notes
    cache = tmp_path / "cache"
    for _ in range(2):  # cold, then from the cache
        code = main(["check", "--no-config", "--cache-dir", str(cache), "--format", "json", str(user)])
        out = capsys.readouterr()
        assert code == 0 and [n["line"] for n in json.loads(out.out)["notes"]] == [8, 10], out
    assert main(["check", "--no-config", "--no-cache", str(user)]) == 0
    err = capsys.readouterr().err
    assert f"{user}:8:8: note: this compiles code of the installed package fakelib" in err
    assert main(["check", "--no-config", "--no-cache", "--format", "sarif", str(user)]) == 0
    sarif = json.loads(capsys.readouterr().out)
    assert [n["level"] for n in sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"]] == ["note", "note"]


@pytest.mark.parametrize("build", [
    "model = fakelib.Model().eval()",  # a module method that returns the module
    "model = load()",  # what a helper of the file returns
    "tokenizer, model = load_pair()",  # unpacked from a tuple a helper returns
    "_, model = load_pair()",
])
def test_a_model_built_the_way_scripts_build_it_is_followed(tmp_path, site_packages, build, capsys):
    """`tokenizer, model = load()` then `torch.compile(model)`: the model class is found
    through the helper's return, with --follow-imports (its findings) and without (the note)."""
    user = write(tmp_path / "proj", "infer.py", f"""
        import torch
        import fakelib


        def load():
            model = fakelib.Model()
            return model.to("cpu")


        def load_pair():
            return "tokenizer", fakelib.Model().eval()


        def main(x):
            {build}
            fast = torch.compile(model)
            return fast(x)
    """)
    findings, errors = check([user], follow_imports=True)
    assert not errors
    assert [(f.code, f.library) for f in findings] == [("TCL201", "fakelib/models.py:10:12")]
    result = run([str(user)], Config(torch_version="2.13"), jobs=1)
    assert [(n.line, "fakelib.Model" in n.message) for n in result.notes] == [(17, True)]


def test_without_follow_imports_installed_code_is_not_read(tmp_path, site_packages):
    user = write(tmp_path / "proj", "train.py", """
        import torch
        import fakelib

        compiled = torch.compile(fakelib.Model())
    """)
    findings, errors = check([user])
    assert findings == [] and errors == []


def test_user_subclass_of_installed_module_is_a_module(tmp_path, site_packages):
    """The installed class hierarchy is read with or without --follow-imports: Mine derives from
    fakelib's Base, an nn.Module, so its forward is an entry; so is a subclass of Mine in another
    file of the project (the project scan reads installed bases too)."""
    user = write(tmp_path / "proj", "model.py", """
        import torch
        from fakelib.base import Base

        class Mine(Base):
            def forward(self, x):
                return x.item()
    """)
    (tmp_path / "proj" / "pyproject.toml").write_text("")
    other = write(tmp_path / "proj", "other.py", """
        from model import Mine

        class Yours(Mine):
            def forward(self, x):
                print(x)
                return x
    """)
    for follow in (False, True):
        findings, _ = check([user, other], api_entries="off", follow_imports=follow)
        assert [(f.path.rsplit("/", 1)[-1], f.code) for f in findings] == [("model.py", "TCL203"), ("other.py", "TCL101")]
        findings, _ = check([other], api_entries="off", follow_imports=follow)
        assert [f.code for f in findings] == ["TCL101"]


def test_installed_entries_and_broken_installed_packages(tmp_path, site_packages, capsys):
    user = write(tmp_path / "proj", "train.py", """
        import torch
        import brokenlib

        compiled = torch.compile(brokenlib.f)
    """)
    findings, errors = check([user], follow_imports=True,
                             entries=[parse("fakelib.models:Sampler.sample", "--entry")])
    assert [(f.code, f.library.split(":")[0]) for f in findings] == [("TCL205", "fakelib/models.py")]
    # the broken package is one line; the rest of the run went on
    assert len(errors) == 1 and "brokenlib/__init__.py:1" in str(errors[0]) and "not followed" in str(errors[0])
    _, errors = check([user], follow_imports=False, entries=[parse("fakelib.models:Sampler.sample", "--entry")])
    assert len(errors) == 1 and "no module fakelib.models among the checked files" in str(errors[0])


def test_closure_over_a_factory_parameter(tmp_path):
    lib = write(tmp_path, "lib.py", OBJECTS)
    user = write(tmp_path, "user.py", """
        import torch
        from lib import Flow

        def _nll(flow):
            def nll(x, c):
                return flow(c).log_prob(x)
            return nll

        def build():
            flow = Flow()
            return _nll(flow)
    """)
    findings, errors = check([user, lib], entries=[parse("user:_nll.<locals>.nll", "--entry")])
    assert not errors
    assert ("TCL205", "Dist.log_prob") in [(f.code, f.function) for f in findings]
    without, _ = check([user, lib], api_entries="off")  # public API entries reach it by themselves
    assert ("TCL205", "Dist.log_prob") not in [(f.code, f.function) for f in without]


def test_an_inherited_method_runs_on_the_compiled_objects_class(tmp_path, site_packages):
    """`torch.compile(ItemLoss())`: Loss.forward's `self.compute(x)` is ItemLoss.compute, as in
    Python; installed classes have no subclass list to find overrides by."""
    user = write(tmp_path / "proj", "train.py", """
        import torch
        from fakelib.models import ItemLoss, Loss

        loss = torch.compile(ItemLoss())
        plain = torch.compile(Loss())
    """)
    findings, errors = check([user], follow_imports=True)
    assert not errors
    assert [(f.code, f.line, f.function, f.library.rsplit(":", 1)[0]) for f in findings] == [
        ("TCL203", 5, "ItemLoss.compute", "fakelib/models.py:27")]  # at torch.compile(ItemLoss())


def test_factories_loops_and_containers(tmp_path, site_packages):
    """Patterns users build models with: a factory passed as an argument and imported inside
    it, tuple unpacking, layers in an nn.ModuleList (comprehension or .append) and a
    Sequential, each layer's forward reached from the compiled call."""
    write(site_packages, "fakelib/layers.py", """
        import torch
        import torch.nn as nn

        class Layer(nn.Module):
            def forward(self, x):
                return x.tolist()

        class Other(nn.Module):
            def forward(self, x):
                print("other")
                return x

        class Appended(nn.Module):
            def forward(self, x):
                return x.item()

        class Stack(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.ModuleList([Layer() for _ in range(2)])
                self.seq = nn.Sequential(Other(), nn.ReLU())
                self.more = nn.ModuleList()
                for _ in range(2):
                    self.more.append(Appended())

            def forward(self, x):
                for i, layer in enumerate(self.layers):
                    x = layer(x)
                x = self.seq(x)
                return self.more[0](x)
    """)
    user = write(tmp_path / "proj", "train.py", """
        import torch

        def make_stack():
            from fakelib.layers import Stack
            return Stack()

        def build(make):
            model, scale = make(), 2.0

            def step(x):
                return model(x) * scale
            return step

        STEPS = {"stack": build(make_stack)}
    """)
    findings, errors = check([user], follow_imports=True, entries=[parse("train:build.<locals>.step", "--entry")])
    assert not errors
    assert sorted((f.code, f.function) for f in findings) == [
        ("TCL101", "Other.forward"), ("TCL203", "Appended.forward"), ("TCL205", "Layer.forward")]
    assert {f.line for f in findings} == {12}  # model(x) in step: the user's line


@pytest.mark.parametrize("body, message", [
    ('follow-imports = "yes"', "follow-imports: expected true or false"),
    ('entries = ["pkg.mod"]', "expected module.path:Name"),
    ("entries = [1]", "entries: expected a list of strings"),
])
def test_config_keys_are_checked(tmp_path, body, message):
    from tcl.config import ConfigError, load

    pyproject = write(tmp_path, "pyproject.toml", f"[tool.tcl]\n{body}\n")
    with pytest.raises(ConfigError, match=message) as raised:
        load(pyproject)
    assert "\n" not in str(raised.value) and str(pyproject) in str(raised.value)


def test_config_keys_are_read(tmp_path):
    from tcl.config import load

    pyproject = write(tmp_path, "pyproject.toml", """
        [tool.tcl]
        entries = ["pkg.mod:f"]
        recorded-entries = "rec/entries.json"
        follow-imports = true
    """)
    config = load(pyproject)
    assert [e.text for e in config.entries] == ["pkg.mod:f"] and config.follow_imports
    assert config.recorded_entries == str(tmp_path / "rec" / "entries.json")


def test_a_submodule_passed_to_a_constructor_is_called_through_its_attribute(tmp_path):
    # `ImageLoss(matcher=matcher)` then `self.matcher(...)`: the matcher's forward runs.
    write(tmp_path, "losses.py", """
        import torch
        from torch import nn

        class Matcher:  # not a module: reached only through the attribute
            def __call__(self, scores):
                return scores.nonzero()

        class Unused:
            def __call__(self, scores):
                print("never passed to ImageLoss")
                return scores

        class ImageLoss:
            def __init__(self, matcher, weight=1.0):
                self.matcher = matcher
                self.weight = weight

            def __call__(self, scores):
                return self.matcher(scores) * self.weight

        def detection_loss(scores):
            matcher = Matcher()
            criterion = ImageLoss(matcher=matcher)
            return criterion(scores)
        """)
    user = write(tmp_path, "train.py", """
        import torch
        from losses import detection_loss

        step = torch.compile(detection_loss)
        """)
    found, errors = check([user, tmp_path / "losses.py"])
    assert errors == []
    assert [(f.path.rsplit("/", 1)[-1], f.line, f.code) for f in found] == [("losses.py", 7, "TCL301")]


def test_compile_of_an_imported_function_is_an_entry(tmp_path):
    write(tmp_path, "steps.py", """
        import torch

        def train_step(x):
            return x.tolist()
        """)
    user = write(tmp_path, "train.py", """
        import torch
        from steps import train_step

        step = torch.compile(train_step)
        """)
    found, errors = check([user, tmp_path / "steps.py"])
    assert errors == []
    assert [(f.path.rsplit("/", 1)[-1], f.line, f.code) for f in found] == [("steps.py", 5, "TCL205")]


# -- session 9: calls whose target is chosen at run time --------------------------------------
# Each source is also compiled (tcl.oracle.probe_source): the lines tcl reports through the new
# resolution are the lines where Dynamo breaks, so the reach is the compiler's, not a guess.

AUTOGRAD_FUNCTION = """
    import torch


    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.k = k
            if ctx.needs_input_grad[0]:
                ctx.save_for_backward(x)
            if x.sum() > 0:  # forward
                return x * k
            return x

        @staticmethod
        def backward(ctx, g):
            if g.sum() > 0:
                return g * ctx.k, None
            return g, None


    @torch.compile
    def fn(x):
        return Scale.apply(x, 3) + 1
"""

CLASS_REGISTRY = """
    import torch


    class Solver:
        def __init__(self, func):
            self.func = func

        def integrate(self, y):
            return self._advance(y)


    class Euler(Solver):
        def _advance(self, y):
            return y + self.func(y)


    class Adaptive(Solver):
        def _advance(self, y):
            err = y.abs().max()
            if err > 1.0:
                return y
            return y + err


    SOLVERS = {"euler": Euler, "adaptive": Adaptive}


    def odeint(func, y0, method):
        solver = SOLVERS[method](func)
        return solver.integrate(y0)


    @torch.compile
    def fn(y0):
        return odeint(torch.neg, y0, "adaptive")
"""

NAMED_METHODS = """
    import torch


    class Reducer(torch.nn.Module):
        def forward(self, losses):
            return self.reduce(losses, "element")

        def reduce(self, losses, kind):
            getattr(self, "check_{}".format(kind))(losses)
            reduction = self.reduction_for(kind)
            return reduction(losses)

        def reduction_for(self, kind):
            return getattr(self, f"{kind}_reduction")

        def check_element(self, losses):
            pass

        def element_reduction(self, losses):
            divisor = losses.sum()
            if divisor != 0:
                return losses.sum() / divisor
            return losses.sum()
"""

BOUND_METHOD_ARGUMENT = """
    import torch


    def default(val, d):
        return val if val is not None else (d() if callable(d) else d)


    class EMA(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("step", torch.tensor(0))

        def current_decay(self):
            if self.step.item() <= 0:
                return 0.0
            return 0.9

        def forward(self, x, decay=None):
            decay = default(decay, self.current_decay)
            return x * decay
"""

GENERIC_BASE = """
    from typing import Generic, TypeVar

    import torch

    T = TypeVar("T")


    class Interaction(torch.nn.Module, Generic[T]):
        pass


    class Scored(Interaction[torch.Tensor]):
        def forward(self, x):
            if x.sum() > 0:
                return x
            return -x
"""

REBOUND_INSTANCE = """
    import torch


    class Deferred:
        def __call__(self, unfinished):
            return False


    class StopCheck:
        def __call__(self, unfinished):
            return bool(unfinished.max() == 0)


    class Decode(torch.nn.Module):
        def __init__(self, deferred=False):
            super().__init__()
            self.deferred = deferred

        def forward(self, x):
            if self.deferred:
                stop = Deferred()
            else:
                stop = StopCheck()
            done = stop(x)
            return x * 2
"""
REBOUND_FUNCTION = """
    import torch


    def plain(x):
        return x * 2


    def guarded(x):
        if x.sum() > 0:
            return x
        return -x


    class Pick(torch.nn.Module):
        def __init__(self, tails="linear"):
            super().__init__()
            self.tails = tails

        def forward(self, x):
            if self.tails is None:
                spline_fn = plain
            else:
                spline_fn = guarded
            return spline_fn(x)
"""


ISINSTANCE_GENEXP = """
    import torch


    class Regularizer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("term", torch.zeros(1))

        def pop_term(self):
            out = self.term.clone()
            self.term.detach_().zero_()
            return out


    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)
            self.reg = Regularizer()

        def collect(self):
            return sum(r.pop_term() for r in self.modules() if isinstance(r, Regularizer))

        def forward(self, x):
            return self.lin(x).sum() + self.collect()
"""

ISINSTANCE_LOOP = """
    import torch


    class Expert(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)

        def aux_loss(self, x):
            load = self.lin(x).sum()
            if load > 0:
                return load
            return -load


    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.experts = torch.nn.ModuleList([Expert(), Expert()])

        def forward(self, x):
            aux = x.sum()
            for m in self.modules():
                if not isinstance(m, (Expert,)):
                    continue
                aux = aux + m.aux_loss(x)
            return aux
"""


def _lines_of(findings):
    return sorted({(f.code, f.line) for f in findings})


def _compiler_lines(source, entry, args):
    pytest.importorskip("torch")
    from tcl.oracle import probe_source

    result = probe_source(textwrap.dedent(source), entry, args)
    assert result.exception is None, result.exception
    return sorted({b.line for b in result.breaks})


@pytest.mark.parametrize("source, entry, args, expected", [
    # forward and backward of an autograd.Function, both traced by Dynamo from `.apply` (the
    # forward's break sends the call to eager, so the backward's shows only without it)
    (AUTOGRAD_FUNCTION, "fn", "(torch.randn(4, requires_grad=True),)", [("TCL201", 11), ("TCL201", 17)]),
    (AUTOGRAD_FUNCTION.replace("if x.sum() > 0:  # forward", "if k > 0:"), "fn",
     "(torch.randn(4, requires_grad=True),)", [("TCL201", 17)]),
    # a class chosen from a module-level table by a string: any of its classes' methods
    (CLASS_REGISTRY, "fn", "(torch.randn(4),)", [("TCL201", 21)]),
    # methods fetched by a name built from constant parts, directly and through a helper
    (NAMED_METHODS, "Reducer", "(torch.randn(4),)", [("TCL201", 22)]),
    # a bound method handed to a helper that calls it
    (BOUND_METHOD_ARGUMENT, "EMA", "(torch.randn(4),)", [("TCL203", 15)]),
    # a module class whose base is a generic class subscripted (`Interaction[torch.Tensor]`)
    (GENERIC_BASE, "Scored", "(torch.randn(4),)", [("TCL201", 15)]),
    # a local name bound to one function or another: the option picks at run time
    (REBOUND_FUNCTION, "Pick", "(torch.randn(4),)", [("TCL201", 10)]),
    # a local bound to an instance of one class or another (transformers' decoding loop's stop
    # check): a call of it runs either's __call__
    (REBOUND_INSTANCE, "Decode", "(torch.randn(4),)", [("TCL204", 12)]),
    # an element narrowed by isinstance() in a comprehension's condition (`detach_` under
    # compile: GB0148, TCL421), and in a loop after `if not isinstance(...): continue`
    (ISINSTANCE_GENEXP, "Model", "(torch.randn(2, 4),)", [("TCL421", 12)]),
    (ISINSTANCE_LOOP, "Model", "(torch.randn(2, 4),)", [("TCL201", 12)]),
])
def test_run_time_chosen_targets_are_reached(tmp_path, source, entry, args, expected):
    path = write(tmp_path, "model.py", source)
    findings, errors = check([path])
    assert not errors
    assert _lines_of(findings) == expected
    # The compiler breaks at the first of them (a break sends the rest of the call to eager).
    assert set(_compiler_lines(source, entry, args)) >= {line for _, line in expected[:1]}


def test_named_methods_need_a_constant_part(tmp_path):
    """`getattr(self, name)` with nothing constant in `name` fetches nothing tcl can know."""
    path = write(tmp_path, "model.py", NAMED_METHODS.replace('f"{kind}_reduction"', "kind"))
    findings, _ = check([path], api_entries="off")  # (element_reduction is public API by itself)
    assert ("TCL201", 22) not in _lines_of(findings)


def test_a_table_with_a_non_class_value_builds_nothing_known(tmp_path):
    path = write(tmp_path, "model.py", CLASS_REGISTRY.replace('"adaptive": Adaptive}', '"adaptive": Adaptive, "x": 3}'))
    findings, _ = check([path])
    assert ("TCL201", 21) not in _lines_of(findings)


LAYERS = """
    import torch
    from torch import nn


    class Conv(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv1d(2, 2, 1)

        def forward(self, x):
            return self.conv(x)


    class Clip(nn.Module):
        def forward(self, x):
            if x.abs().max() > 10:
                return x
            return x + 1


    class Encoder(nn.Module):
        def __init__(self, n):
            super().__init__()
            model = [Conv()]
            for _ in range(n):
                model += [Conv()]
            model += [nn.ELU()]
            model.append(Clip())
            self.layers = nn.ModuleList(model)

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return x
"""


def test_a_loop_over_a_built_up_module_list_runs_every_element(tmp_path, monkeypatch):
    """`for layer in self.layers: x = layer(x)` runs each element's forward, not only the
    first's; the list is built with `+=` and `.append` before `nn.ModuleList(model)`. Checked
    from the user's compile call into an installed package, where only reach finds it."""
    site = tmp_path / "site-packages"
    write(site, "layerlib/__init__.py", LAYERS)
    monkeypatch.setattr(installed, "site_directories", lambda: [str(site)])
    user = write(tmp_path / "proj", "train.py", """
        import torch
        import layerlib

        model = torch.compile(layerlib.Encoder(2))
    """)
    findings, errors = check([user], follow_imports=True)
    assert not errors
    assert [(f.code, f.library) for f in findings] == [("TCL201", "layerlib/__init__.py:17:12")]
    assert set(_compiler_lines(textwrap.dedent(LAYERS) + "\n\ndef run(x):\n    return Encoder(2)(x)\n", "run",
                               "(torch.full((1, 2, 3), 20.0),)")) >= {17}


def write_step_recording(path, user, line, bindings=None):
    """A recording of one compiled nested def, `train:build.<locals>.step`, with `bindings`."""
    entry = {"entry": "train:build.<locals>.step", "file": str(user), "line": line, "what": "function",
             "count": 1, "tests": []}
    if bindings is not None:
        entry["bindings"] = bindings
    path.write_text(json.dumps({"format": "tcl-recorded-entries", "version": 1, "torch": "2.13.0",
                                "entries": [entry], "problems": []}))


def test_recorded_free_variable_classes_resolve_a_closures_calls(tmp_path, site_packages):
    """A training step over `opt = make(...)` and `loss_fn = build(...)`: nothing static says what
    they are; the recording names the classes they held when the step ran (EntrySpec.bindings),
    so the step's calls reach those classes' methods in the installed package."""
    user = write(tmp_path / "proj", "train.py", """
        import torch

        def build(make, make_loss):
            sampler = make()
            loss_fn = make_loss()

            def step(x):
                return sampler.sample(x), loss_fn(x)

            return step
    """)
    recording = tmp_path / "proj" / "rec.json"
    write_step_recording(recording, user, 8)
    findings, errors = check([user], follow_imports=True, recorded_entries=str(recording))
    assert not errors and findings == []  # without bindings the names lead nowhere

    write_step_recording(recording, user, 8, {"sampler": ["fakelib.models:Sampler"],
                                             "loss_fn": ["fakelib.models:ItemLoss"],
                                             "bad name": ["x:Y"], "junk": "not a list"})
    findings, errors = check([user], follow_imports=True, recorded_entries=str(recording))
    assert not errors
    by_code = {f.code: f for f in findings}
    assert by_code["TCL205"].library == "fakelib/models.py:16:16"  # Sampler.sample's .tolist()
    assert by_code["TCL203"].library == "fakelib/models.py:27:16"  # ItemLoss.compute's .item()
    assert {f.line for f in findings} == {9}  # both at the step's call line


def check_module_recording(user, recording, entry: str, **extra):
    """Write a recording of one compiled module `entry` (plus `extra` fields, e.g. its
    submodules' classes) and check `user` with it and --follow-imports."""
    item = {"entry": entry, "file": None, "line": None, "what": "module", "count": 1, "tests": [], **extra}
    recording.write_text(json.dumps({"format": "tcl-recorded-entries", "version": 1, "torch": "2.13.0",
                                     "entries": [item], "problems": []}))
    return check([user], follow_imports=True, recorded_entries=str(recording))


def test_recorded_submodule_classes_are_entries(tmp_path, site_packages):
    """`torch.compile(chain)` of a module whose steps a container holds: no static reading says
    which classes `step(x)` runs; the recording names the submodules' classes ("modules"), and
    each class's forward is an entry. A class that names nothing is left out, not an error."""
    user = write(tmp_path / "proj", "train.py", """
        import torch
        import fakelib.models

        def build(steps):
            return torch.compile(fakelib.models.Chain(steps))
    """)
    recording = tmp_path / "proj" / "rec.json"

    def recorded(**extra):
        return check_module_recording(user, recording, "fakelib.models:Chain", **extra)

    findings, errors = recorded()
    assert not errors and findings == []
    findings, errors = recorded(modules=["fakelib.models:Chain", "fakelib.models:Normalised", "fakelib.nothing:X",
                                         "fakelib.models:Missing", "not a spec"])
    assert not errors
    assert [(f.code, f.library) for f in findings] == [("TCL201", "fakelib/models.py:41:12")]
    # Without --follow-imports the compiled entry itself is the one error; its submodules add none.
    _, errors = check([user], follow_imports=False, recorded_entries=str(recording))
    assert len(errors) == 1 and "entry fakelib.models:Chain: no module" in str(errors[0])


def test_a_method_called_on_a_container_element_runs_in_the_recorded_submodule_classes(tmp_path, site_packages):
    """`for layer in self.layers: layer.reset_cache()` with the layers a constructor argument:
    the recording's submodule classes that define `reset_cache` are what the call may run
    (torchtune's `reset_caches` -> KVCache.size's `.item()`); without them the call is not
    followed, and a recorded class without the method adds nothing."""
    user = write(tmp_path / "proj", "train.py", """
        import torch
        import fakelib.models

        def build(layers):
            return torch.compile(fakelib.models.Stack(layers))
    """)
    recording = tmp_path / "proj" / "rec.json"

    def recorded(**extra):
        return check_module_recording(user, recording, "fakelib.models:Stack", **extra)

    findings, errors = recorded()
    assert not errors and findings == []
    findings, errors = recorded(modules=["fakelib.models:Stack", "fakelib.models:Normalised"])
    assert not errors and [f.code for f in findings] == ["TCL201"]  # Normalised's forward only
    findings, errors = recorded(modules=["fakelib.models:Stack", "fakelib.models:Cached"])
    assert not errors
    # Once, at the user's compile line (the recorded entry reaches the same line in the package).
    assert [(f.code, f.line, f.library) for f in findings] == [("TCL203", 6, "fakelib/models.py:57:16")]
    assert "in Cached.reset_cache at fakelib/models.py:57:16, reached from Stack.forward" in findings[0].context


def test_a_rerecording_with_other_classes_is_not_served_from_the_cache(tmp_path, site_packages, capsys,
                                                                      monkeypatch):
    user = write(tmp_path / "proj", "train.py", """
        def build(make):
            sampler = make()

            def step(x):
                return sampler.sample(x)

            return step
    """)
    recording = tmp_path / "proj" / "rec.json"
    monkeypatch.chdir(tmp_path / "proj")
    argv = ["check", "train.py", "--follow-imports", "--recorded-entries", str(recording),
            "--torch-version", "2.13", "--cache-dir", str(tmp_path / "cache")]
    write_step_recording(recording, user, 5)
    assert main(argv) == 0 and "TCL205" not in capsys.readouterr().out
    write_step_recording(recording, user, 5, {"sampler": ["fakelib.models:Sampler"]})
    assert main(argv) == 1 and "train.py:6:16: TCL205" in capsys.readouterr().out



MODULE_COMPILE_LIB = """
    import torch
    from torch import nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            y = self.lin(x)
            print("y", y.shape)
            return y
"""


@pytest.mark.parametrize("user_code, reached", [
    ("model = Net()\nmodel.compile(mode='default')\n", True),
    ("class Trainer:\n    def __init__(self):\n        self.model = Net()\n        self.model.compile()\n", True),
    ("model = Net()\nmodel.eval()\npattern = re.compile('x')\n", False),
    ("model = make()\nmodel.compile()\n", False),
    # a module-level model called from a compiled step; a trainer compiling its attribute
    ("model = Net()\n\n@torch.compile\ndef step(x):\n    return model(x).sum()\n", True),
    ("class Trainer:\n    def __init__(self):\n        self.model = Net()\n        self.fast = torch.compile(self.model)\n", True),
    ("class Trainer:\n    def __init__(self):\n        self.model = Net()\n        self.fast = self.model\n", False),
    # a compiled step that takes the model: what the calls through its compiled alias pass
    ("def step(model, x):\n    return model(x).sum()\n\ndef main():\n    fast = torch.compile(step)\n"
     "    fast(Net(), torch.randn(2, 4))\n", True),
    ("def step(model, x):\n    return model(x).sum()\n\nfast = torch.compile(step)\n", False),
    # a wrapper whose forward runs the module it wraps
    ("model = torch.nn.DataParallel(Net())\nfast = torch.compile(model)\n", True),
    # a container whose forward runs each element in turn
    ("model = torch.nn.Sequential(torch.nn.Identity(), Net())\nfast = torch.compile(model)\n", True),
    ("def main():\n    net = torch.nn.Sequential(Net(), torch.nn.ReLU())\n    net.compile()\n", True),
    ("fast = torch.compile(torch.nn.Sequential(Net()))\n", True),
    ("model = torch.nn.Sequential(torch.nn.Identity())\nfast = torch.compile(model)\nunused = Net()\n", False),
    # a model whose class only its annotation says (a loader, a factory tcl cannot read)
    ("model: Net = torch.load('net.pt', weights_only=False)\nfast = torch.compile(model)\n", True),
    ("def main():\n    model: Net = load_checkpoint()\n    return torch.compile(model)\n", True),
    ("model: torch.nn.Module = torch.load('net.pt', weights_only=False)\nfast = torch.compile(model)\n", False),
])
def test_what_a_script_compiles_is_traced_into_its_project(tmp_path, user_code, reached):
    """`tcl check train.py`: the model it compiles lives in lib.py, a project file this run does
    not check, and is traced from the script's compile: `model.compile()` (nn.Module.compile,
    torch.compile of the module's call), a compiled step calling a module-level model,
    `torch.compile(self.model)`, an nn.Sequential holding the model, a model the annotation of its
    assignment names. `re.compile(...)` and a receiver of unknown class compile nothing tcl can
    know."""
    (tmp_path / "pyproject.toml").write_text("")
    write(tmp_path, "lib.py", MODULE_COMPILE_LIB)
    user = tmp_path / "user.py"
    user.write_text("import re\nimport torch\nfrom lib import Net\n\n" + user_code)
    findings, errors = check([user], api_entries="off")
    assert not errors
    assert [(f.path.rsplit("/", 1)[-1], f.code, f.line) for f in findings] == ([("lib.py", "TCL101", 13)] if reached else [])


def test_module_compile_traces_forward_on_the_compiler():
    torch = pytest.importorskip("torch")
    from torch._dynamo.utils import counters

    namespace: dict = {}
    exec(compile(textwrap.dedent(MODULE_COMPILE_LIB), "lib.py", "exec"), namespace)
    torch._dynamo.reset()
    counters.clear()
    net = namespace["Net"]()
    net.compile(backend="eager")
    net(torch.randn(2, 4))
    assert sum(counters["graph_break"].values()) >= 1  # the print in forward
    torch._dynamo.reset()
    counters.clear()
    wrapped = torch.compile(torch.nn.DataParallel(namespace["Net"]()), backend="eager")
    wrapped(torch.randn(2, 4))
    assert sum(counters["graph_break"].values()) >= 1  # DataParallel's forward runs Net's
    torch._dynamo.reset()
    counters.clear()
    chained = torch.compile(torch.nn.Sequential(torch.nn.Identity(), namespace["Net"]()), backend="eager")
    chained(torch.randn(2, 4))
    assert sum(counters["graph_break"].values()) >= 1  # Sequential's forward runs each element's
    torch._dynamo.reset()



def test_a_submodule_call_runs_the_call_its_base_overrides(tmp_path, site_packages):
    """`self.inner(x)` runs type(inner).__call__: a base's override (pyro's PyroModule, re-exported
    by its package) is traced before forward, by Dynamo and by tcl, also once the installed
    hierarchy makes the subclass a module."""
    base = write(site_packages, "trackpkg/base.py", TRACKED_BASE)
    init = write(site_packages, "trackpkg/__init__.py", "from .base import Tracked\n")
    model = write(site_packages, "trackpkg/model.py", TRACKED_MODEL)
    findings, errors = check([base, init, model], api_entries="off")
    assert not errors
    assert [(f.path.rsplit("/", 1)[-1], f.code, f.line, f.reached_from) for f in findings] == [
        ("base.py", "TCL101", 8, ("Outer.forward",))]
    source = textwrap.dedent(TRACKED_BASE) + textwrap.dedent(TRACKED_MODEL).replace("from trackpkg import Tracked", "")
    assert 8 in _compiler_lines(source, "Outer", "(torch.randn(4),)")


TRACKED_BASE = """
    import torch
    from torch import nn


    class Tracked(nn.Module):
        def __call__(self, *args, **kwargs):
            print("calling", type(self).__name__)
            return super().__call__(*args, **kwargs)
"""
TRACKED_MODEL = """
    import torch
    from torch import nn
    from trackpkg import Tracked


    class Inner(Tracked):
        def forward(self, x):
            return x * 2


    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Inner()

        def forward(self, x):
            return self.inner(x) + 1
"""
