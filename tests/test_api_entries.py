"""A library's public API as entry points (tcl/api_entries.py): public functions and methods
that take tensor data are checked as compiled when nothing in their file reaches them. Each
positive case is compiled too: the compiler breaks where tcl reports."""

from __future__ import annotations

import textwrap

import pytest

from tcl.cli import main
from tcl.config import Config, ConfigError, load
from tcl.runner import run

SOLVER = """\
import torch


def _check(y0):
    if torch.isnan(y0).any():
        raise ValueError("y0 has NaNs")


def odeint(func, y0: torch.Tensor, t, rtol=1e-7):
    _check(y0)
    y = y0
    for i in range(len(t) - 1):
        y = y + (t[i + 1] - t[i]) * func(t[i], y)
    return y


def describe(name, steps=3):
    print(name, steps)


def scale(x, flag):
    if flag:
        return x.sum() * 2
    return x.mean()


class Solver:
    def integrate(self, y, steps):
        total = torch.tanh(y).sum()
        if total > 0:
            return y * steps
        return y

    def _private(self, y):
        print(y.shape)
"""


def write(root, name, text):
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def check(paths, **options):
    result = run([str(p) for p in paths], Config(torch_version="2.13", **options), jobs=1)
    return sorted(result.findings, key=lambda f: f.sort_key()), result.all_errors


def lines(findings):
    return [(f.code, f.line) for f in findings]


def test_public_functions_that_take_tensors_are_entries(tmp_path):
    path = write(tmp_path / "mylib", "solver.py", SOLVER)
    findings, errors = check([path])
    assert not errors
    # _check (private) through odeint; Solver.integrate. Not describe (no tensor data), not
    # `if flag:` in scale (flag is no tensor: nothing says so), not Solver._private.
    assert lines(findings) == [("TCL201", 5), ("TCL201", 30)]
    by_line = {f.line: f for f in findings}
    assert by_line[5].reached_from == ("odeint (public API)",)
    assert "in _check, reached from odeint (public API)" in by_line[5].context
    assert by_line[30].context == "in Solver.integrate, public API that takes tensor data (users may compile it)"
    assert check([path], api_entries="off")[0] == []


def test_the_compiler_breaks_where_the_public_api_is_reported():
    pytest.importorskip("torch")
    from tcl.oracle import probe_source

    result = probe_source(SOLVER, "odeint", "(lambda t, y: -y, torch.randn(3), torch.linspace(0, 1, 4))")
    assert result.exception is None, result.exception
    assert 5 in {b.line for b in result.breaks}
    clean = probe_source(SOLVER, "scale", "(torch.randn(3), True)")
    assert clean.exception is None and not clean.breaks  # `if flag:` on a Python bool traces


def test_scripts_tests_and_examples_are_not_library_code(tmp_path):
    script = write(tmp_path / "proj", "train.py", SOLVER + '\n\nif __name__ == "__main__":\n    describe("x")\n')
    test = write(tmp_path / "proj" / "tests", "helpers.py", SOLVER)
    example = write(tmp_path / "proj" / "examples", "demo.py", SOLVER)
    assert check([script, test, example]) == ([], [])
    findings, _ = check([script, test, example], api_entries="on")
    assert len(findings) == 6


def test_a_helper_compiled_code_reaches_is_not_called_public_api(tmp_path):
    """rms_norm is public in its own file and reached from a forward in another: the finding
    names the forward only."""
    norms = write(tmp_path / "pkg", "norms.py", """
        import torch

        def rms_norm(x):
            if x.abs().max() > 10:
                print("large")
            return x
    """)
    model = write(tmp_path / "pkg", "model.py", """
        from torch import nn
        from .norms import rms_norm

        class Model(nn.Module):
            def forward(self, x):
                return rms_norm(x)
    """)
    write(tmp_path / "pkg", "__init__.py", "")
    findings, errors = check([norms, model])
    assert not errors and findings
    assert all(f.reached_from == ("Model.forward",) for f in findings), [f.reached_from for f in findings]


def test_a_forward_keeps_its_own_parameter_kinds(tmp_path):
    """A module's forward is an entry already: the public API pass never walks it again."""
    path = write(tmp_path / "pkg", "m.py", """
        from torch import nn

        class M(nn.Module):
            def forward(self, x, n):
                if x.sum() > n:
                    return x
                return -x
    """)
    findings, _ = check([path])
    assert lines(findings) == [("TCL201", 6)] and findings[0].reached_from == ()


def test_configuration(tmp_path):
    pyproject = tmp_path / "pyproject.toml"
    for value, expected in (("false", "off"), ("true", "on"), ('"auto"', "auto"), ('"off"', "off")):
        pyproject.write_text(f"[tool.tcl]\napi-entries = {value}\n")
        assert load(pyproject).api_entries == expected
    pyproject.write_text('[tool.tcl]\napi-entries = "all"\n')
    with pytest.raises(ConfigError, match="api-entries: expected one of auto, on, off"):
        load(pyproject)


def test_command_line_option(tmp_path, capsys):
    path = write(tmp_path / "mylib", "solver.py", SOLVER)
    assert main(["check", "--no-config", "--no-cache", "--api-entries", "off", str(path)]) == 0
    capsys.readouterr()
    assert main(["check", "--no-config", "--no-cache", str(path)]) == 1
    assert "public API" in capsys.readouterr().out


def test_what_compiled_callers_pass_decides_over_the_public_api_reading(tmp_path):
    """normalize is public API in its own file, where `check` may be anything; the forward of
    another file calls it with the default check=False, so the branch never runs compiled."""
    norms = write(tmp_path / "pkg", "norms.py", """
        import torch

        def normalize(x, check=False):
            if check and torch.isnan(x).any():
                raise ValueError("NaN")
            return torch.tanh(x)
    """)
    model = write(tmp_path / "pkg", "model.py", """
        from torch import nn
        from .norms import normalize

        class Model(nn.Module):
            def forward(self, x):
                return normalize(x)
    """)
    write(tmp_path / "pkg", "__init__.py", "")
    alone, _ = check([norms])
    assert lines(alone) == [("TCL201", 5)] and alone[0].reached_from == ("public API",)
    findings, errors = check([norms, model])
    assert not errors and findings == []


def test_a_function_written_as_a_method_is_not_public_api(tmp_path):
    """`def experts_forward(self, x)` at module level is attached to a class at run time: its
    `self.has_bias` is no tensor data tcl can judge."""
    path = write(tmp_path / "pkg", "moe.py", """
        import torch

        def experts_forward(self: torch.nn.Module, x: torch.Tensor):
            bias = self.bias[x.argmax(-1)] if self.has_bias else None
            return torch.relu(x), bias
    """)
    assert check([path]) == ([], [])


def test_folders_above_the_checked_tree_do_not_make_it_a_test(tmp_path, monkeypatch):
    """Only the folders below where tcl runs say test/example: a project kept in ~/tools/ or
    ~/tests/ is library code."""
    from tcl.api_entries import is_library_file

    project = tmp_path / "tests" / "proj"
    path = write(project / "mylib", "solver.py", SOLVER)
    monkeypatch.chdir(project)
    assert is_library_file("mylib/solver.py") and is_library_file(str(path))
    assert not is_library_file("tests/test_solver.py") and not is_library_file("examples/demo.py")
    assert is_library_file("/venv/lib/python3.11/site-packages/pkg/ode.py")
    assert not is_library_file("/venv/lib/python3.11/site-packages/pkg/tests/helpers.py")


def test_a_public_function_that_draws_is_not_an_entry(tmp_path):
    """ultralytics' Results.plot / plot_images: they take and return tensors, but draw through
    an image library, directly or in a helper they call. A forward that reaches the same
    helper still reports it: only the public-API assumption is dropped."""
    path = write(tmp_path / "vis", "plotting.py", """
        import cv2
        import torch


        def _label(img, box):
            if box.sum() > 0:
                cv2.rectangle(img, (0, 0), (1, 1), (255, 0, 0))
            return img


        def plot(boxes: torch.Tensor, img):
            for box in boxes:
                if box.max() > 1:
                    box = box / box.max()
                img = _label(img, box)
            return torch.as_tensor(img)


        def normalise(boxes: torch.Tensor):
            if boxes.max() > 1:
                return boxes / boxes.max()
            return boxes


        class Head(torch.nn.Module):
            def forward(self, x, img):
                return _label(img, x)
    """)
    findings, errors = check([path])
    assert not errors
    # normalise (public API, draws nothing) and _label through Head.forward; not plot.
    assert lines(findings) == [("TCL201", 7), ("TCL201", 21)]
    assert findings[0].reached_from == ("Head.forward",)


def test_an_int_argument_of_a_guessed_entry_is_a_setting(tmp_path):
    """A loop over an int argument recompiles only when callers pass a new value each call. Of a
    public function tcl guesses users compile (demucs' svd_penalty(niters=2), apply_model's
    shifts) that rests on a second guess: TCL502 is not reported there. A break there is, so is
    a size loop (sizes follow the data), and a forward keeps its own TCL502."""
    path = write(tmp_path / "lib", "power.py", """
        import torch


        def _power(m, niters):
            for _ in range(niters):
                m = m @ m
            return m


        def power_iteration(m: torch.Tensor, niters: int = 2):
            for _ in range(niters):
                m = m @ m
            if m.max() > 1:
                m = m / m.max()
            return _power(m, len(m))


        class Model(torch.nn.Module):
            def forward(self, x, steps: int):
                for _ in range(steps):
                    x = x * 2
                return x
    """)
    findings, errors = check([path])
    assert not errors
    # TCL505 in _power (len(m) from power_iteration), TCL201 in power_iteration, TCL502 in
    # Model.forward; not power_iteration's TCL502 on niters.
    assert lines(findings) == [("TCL505", 6), ("TCL201", 14), ("TCL502", 21)], lines(findings)
    assert findings[0].reached_from == ("power_iteration (public API)",)


UPDATER = """\
import torch
from torch import nn


class Ema(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model
        self.register_buffer("step", torch.tensor(0))
        self.register_buffer("average", torch.zeros(4))

    def update(self):
        step = self.step.item()
        self.step += 1
        decay = min(0.99, (1 + step) / (10 + step))
        self.average.lerp_(self.model.weight.detach().sum(0), 1 - decay)

    def describe(self):
        return self.step.item()


class Plain(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def touch(self):
        print(self.calls)


class Accuracy(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("correct", torch.zeros(()))
        self.register_buffer("total", torch.zeros(()))

    def update(self, preds, target):
        if (target < 0).any():
            raise ValueError("negative class index")
        self.correct += (preds.argmax(-1) == target).sum()
        self.total += target.numel()


def ema_update(ema):
    ema.update()


def accuracy_update(metric, preds, target):
    metric.update(preds, target)
"""


def test_a_method_that_updates_its_modules_tensors_is_an_entry(tmp_path):
    """An EMA's `update()` takes no tensor and returns nothing, yet a compiled training step
    calls it: it writes the module's buffers in place (`self.step += 1`, `lerp_`). A metric's
    `update(preds, target)` takes tensors and returns nothing: it counts for the same reason.
    `describe()` only reads the buffers and `Plain.touch()` has no tensors: neither is an entry."""
    path = write(tmp_path / "mylib", "ema.py", UPDATER)
    findings, errors = check([path])
    assert not errors
    assert lines(findings) == [("TCL203", 13), ("TCL201", 38)]
    assert findings[0].context == "in Ema.update, public API that updates its module's tensors (users may compile it)"
    assert findings[1].context == "in Accuracy.update, public API that updates its module's tensors (users may compile it)"


def test_the_compiler_breaks_in_a_state_updater_where_reported():
    pytest.importorskip("torch")
    from tcl.oracle import probe_source

    result = probe_source(UPDATER, "ema_update", "(Ema(torch.nn.Linear(4, 4)),)")
    assert result.exception is None, result.exception
    assert 13 in {b.line for b in result.breaks}
    result = probe_source(UPDATER, "accuracy_update",
                          "(Accuracy(), torch.randn(8, 3), torch.randint(0, 3, (8,)))")
    assert result.exception is None, result.exception
    assert 38 in {b.line for b in result.breaks}


GENERATOR = """\
import torch


class CandidateGenerator:
    def __init__(self):
        self.probs = []

    def get_candidates(self, input_ids: torch.Tensor) -> torch.Tensor:
        p = input_ids.float().softmax(-1)
        self.probs.append(p.max())
        return p
"""


def test_a_plain_objects_growing_list_is_not_reported_on_a_guessed_entry(tmp_path):
    # Whether the object outlives a compiled call is a second guess where tcl only guesses
    # that users compile the method (transformers' candidate generators are built inside each
    # generate() call); compiling the bound method of a kept object says it: TCL507.
    path = write(tmp_path / "mylib", "generator.py", GENERATOR)
    findings, errors = check([path])
    assert not errors and lines(findings) == []
    compiled = write(tmp_path / "mylib", "step.py",
                     GENERATOR + "\ngenerator = CandidateGenerator()\nstep = torch.compile(generator.get_candidates)\n")
    findings, errors = check([compiled])
    assert not errors and lines(findings) == [("TCL507", 10)]


ARRAYS = """\
def delete(arr, obj):
    # steps forward through the flattened array (the word lets the file past the prefilter)
    arr = arr.reshape(-1)
    if arr.sum() > 0:
        return arr.expand(2, -1)
    return arr
"""


def test_a_file_that_does_not_import_torch_has_no_public_tensor_api(tmp_path):
    # numpy's delete() and sympy's limitinf() call methods tensors have too (.reshape, .expand)
    # and were taken for tensor APIs, though neither file imports torch (session 40).
    plain = write(tmp_path / "arrays", "ops.py", ARRAYS)
    assert check([plain]) == ([], [])
    with_torch = write(tmp_path / "tensors", "ops.py", "import torch\n\n\n" + ARRAYS)
    findings, errors = check([with_torch])
    assert not errors and lines(findings) == [("TCL201", 7)]
