"""`tcl fix --verify` (tcl/fixing/verification.py): unsafe fixes are tried on the compiler with the
file's examples and kept only when eager outputs stay identical, compiled outputs match, breaks
go down and nothing recompiles more. These tests run the real children (torch, backend eager)."""

from __future__ import annotations

import textwrap

import pytest

torch = pytest.importorskip("torch")

from tcl.cli import main  # noqa: E402
from tcl.fixing.verification import compare, module_location  # noqa: E402

GATES = '''
import torch
from torch import nn


class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        h = self.proj(x)
        if int(h.sum()) > 0:
            h = h * 2
        else:
            h = h - 1
        return h


class Broadcasting(nn.Module):
    def forward(self, x, scale):
        if x.sum() > 0:
            y = x * scale
        else:
            y = x
        return y


def tcl_examples():
    torch.manual_seed(0)
    return [(Gate().eval(), (torch.randn(4, 8),), {}),
            (Broadcasting(), (torch.randn(4, 8), torch.randn(3, 4, 8)), {})]
'''


def _load(path, name):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_verify_keeps_the_unsafe_fix_the_compiler_confirms_and_rejects_the_other(tmp_path, capsys):
    path = tmp_path / "gates.py"
    path.write_text(GATES)
    before = [m(*a) for m, a, _ in _load(path, "gates_before").tcl_examples()]
    assert main(["fix", "--verify", "--apply", "--no-config", str(path)]) == 1
    err = capsys.readouterr().err
    assert "gates.py:13:12: TCL204 fixed (verified on 2 examples: breaks 2 -> 1)" in err
    assert "gates.py:22:12: TCL201 not fixed: example 1 (Broadcasting): eager outputs differ" in err
    assert "not applied (suggestion" not in err  # a rejected candidate is not a suggestion
    text = path.read_text()
    assert "torch.where(h.sum() > 0, h * 2, h - 1)" in text and "if x.sum() > 0:" in text
    after = [m(*a) for m, a, _ in _load(path, "gates_after").tcl_examples()]
    assert all(torch.equal(a, b) for a, b in zip(before, after))
    # Idempotent: the second run changes nothing and says the same about the rejected fix.
    assert main(["fix", "--verify", "--apply", "--no-config", str(path)]) == 1
    err = capsys.readouterr().err
    assert path.read_text() == text and "TCL201 not fixed" in err and "fixed 0 findings" in err


def test_without_examples_unsafe_fixes_stay_pending(tmp_path, capsys):
    path = tmp_path / "plain.py"
    path.write_text(GATES.split("def tcl_examples")[0])
    assert main(["fix", "--verify", "--no-config", str(path)]) == 1
    err = capsys.readouterr().err
    assert "TCL204 not fixed: unsafe, and the file has no tcl_examples() to verify it on" in err
    assert "would fix 0 findings" in err


def test_a_module_inside_a_package_runs_under_its_own_name(tmp_path, capsys):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "scales.py").write_text("FACTOR = 2\n")
    (package / "model.py").write_text(textwrap.dedent('''
        import torch
        from torch import nn

        from .scales import FACTOR


        class Gate(nn.Module):
            def forward(self, x):
                if int(x.sum()) > 0:
                    x = x * FACTOR
                else:
                    x = x - 1
                return x


        def tcl_examples():
            return [(Gate(), (torch.ones(2, 3),), {}), (Gate(), (-torch.ones(2, 3),), {})]
        '''))
    assert module_location(str(package / "model.py")) == (str(tmp_path), "pkg.model")
    main(["fix", "--verify", "--no-config", str(package / "model.py")])
    assert "TCL204 fixed (verified on 2 examples: breaks 2 -> 0)" in capsys.readouterr().err


def _run(eager, compiled=None, breaks=(), recompiles=0):
    return {"name": "f", "eager": eager, "compiled": eager if compiled is None else compiled,
            "breaks": list(breaks), "recompiles": recompiles}


def test_compare_states_why_a_variant_fails():
    one = torch.ones(2)
    before = {"examples": [_run(one, breaks=["GB0170", "GB0124"])]}
    assert compare(before, {"examples": [_run(one, breaks=["GB0170"])]}).ok
    assert "a new graph break (GB0036)" in compare(
        before, {"examples": [_run(one, breaks=["GB0036"])]}).why
    assert "compiles 2 graphs again on a second call with the same inputs, the original 0" in compare(
        before, {"examples": [_run(one, breaks=[], recompiles=2)]}).why
    assert "compiled outputs differ from eager" in compare(
        before, {"examples": [_run(one, compiled=one * 2)]}).why
    assert "did not go down (2 -> 2)" in compare(
        before, {"examples": [_run(one, breaks=["GB0170", "GB0124"])]}).why
    assert "eager outputs differ" in compare(before, {"examples": [_run(one * 3)]}).why
    nan = torch.tensor([float("nan"), 1.0])
    assert compare({"examples": [_run(nan, breaks=["GB0170"])]}, {"examples": [_run(nan.clone())]}).ok


def test_examples_that_raise_as_written_are_left_out():
    one = torch.ones(2)
    before = {"examples": [{"name": "f", "error": "ValueError: bad"}, _run(one, breaks=["GB0170"])]}
    verdict = compare(before, {"examples": [{"name": "f", "error": "ValueError: bad"}, _run(one)]})
    assert verdict.ok and verdict.examples == 1
    assert "raises after the rewrite" in compare(
        before, {"examples": [_run(one), {"name": "f", "error": "TypeError: x"}]}).why
    assert "nothing to verify on" in compare(
        {"examples": [{"name": "f", "error": "E"}]}, {"examples": [{"name": "f", "error": "E"}]}).why


PICKER = '''
import torch
from torch import nn


class Picker(nn.Module):
    def __init__(self, op):
        super().__init__()
        self.op = op

    def forward(self, x):
        kept = self.op(x)
        return kept.sum() * 2 + x.mean()


def main():
    model = torch.compile(Picker(torch.unique))
    return model(torch.tensor([3.0, 1.0, 3.0, 2.0]))


def tcl_examples():
    return [(Picker(torch.unique), (torch.tensor([3.0, 1.0, 3.0, 2.0]),), {})]
'''


def test_a_setting_the_examples_break_for_is_tried_where_no_finding_names_the_break(tmp_path, capsys):
    # torch.unique arrives as a constructor argument: tcl check cannot see which op runs, and
    # reports nothing; the example breaks with GB0036 at run time, whose registry hint names
    # capture_dynamic_output_shape_ops. The setting goes before the compile call inside main(),
    # and the verifier applies it to its compiled runs (settings_of reads the variant).
    path = tmp_path / "picker.py"
    path.write_text(PICKER)
    assert main(["check", "--no-config", str(path)]) == 0
    capsys.readouterr()
    assert main(["fix", "--verify", "--apply", "--no-config", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"{path}: GB0036 at run time: fixed (verified on 1 example: breaks 1 -> 0)" in err
    text = path.read_text()
    assert ("def main():\n    torch._dynamo.config.capture_dynamic_output_shape_ops = True\n"
            "    model = torch.compile(") in text
    # Idempotent: the file now sets it, so nothing more is tried.
    assert main(["fix", "--verify", "--apply", "--no-config", str(path)]) == 0
    assert path.read_text() == text


def test_a_setting_the_examples_call_for_is_not_kept_when_the_breaks_stay(tmp_path, capsys):
    # The unique's values steer a Python branch: under the setting the break moves to the
    # branch, the count does not go down, and the file is left as it was.
    path = tmp_path / "branchy.py"
    path.write_text(PICKER.replace("        return kept.sum() * 2 + x.mean()",
                                   "        if kept.numel() > 2:\n            return x * 2\n        return x"))
    before = path.read_text()
    main(["fix", "--verify", "--apply", "--no-config", str(path)])
    err = capsys.readouterr().err
    assert f"{path}: GB0036 at run time: not fixed:" in err
    assert path.read_text() == before


def test_settings_for_breaks_reads_the_registry_hints_and_the_rules():
    from tcl.fixes.settings import settings_for_breaks

    found = settings_for_breaks(["GB0036", "GB0124", "GB0033", "GB0170", None], (2, 13))
    assert found == {"capture_dynamic_output_shape_ops": ["GB0036"],
                     "capture_scalar_outputs": ["GB0033", "GB0124"]}
    assert settings_for_breaks(["GB0170"], (2, 13)) == {}
