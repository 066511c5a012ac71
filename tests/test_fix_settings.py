"""Dynamo settings: read from the checked program (tcl/dynamo_settings.py) and inserted by `tcl
fix` at the user's compile call for breaks in installed code (tcl/fixes/settings.py).

The installed package is a fake site-packages directory, as in tests/test_reach.py."""

from __future__ import annotations

import textwrap

import pytest

from tcl import installed
from tcl.cli import main
from tcl.config import Config
from tcl.runner import run

LIBRARY = """
    import torch
    import torch.nn as nn

    class ScaledLoss(nn.Module):
        def forward(self, x):
            return x * x.abs().max().item()

    class PositiveMean(nn.Module):
        def forward(self, x):
            return x[x > 0].sum() / x.numel()

    class Gate(nn.Module):
        def forward(self, x):
            if x.sum().item() > 0:
                return x + 1
            return x - 1
"""


def write(root, name, text):
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture
def site_packages(tmp_path, monkeypatch):
    site = tmp_path / "site-packages"
    write(site, "scalelib/__init__.py", "from .losses import ScaledLoss, PositiveMean, Gate\n")
    write(site, "scalelib/losses.py", LIBRARY)
    monkeypatch.setattr(installed, "site_directories", lambda: [str(site)])
    monkeypatch.syspath_prepend(str(site))
    return site


def check(paths, **options):
    result = run([str(p) for p in paths], Config(torch_version="2.13", follow_imports=True, **options), jobs=1)
    return sorted(result.findings, key=lambda f: f.sort_key()), result.all_errors


USER = """
    import torch
    import scalelib

    loss_fn = scalelib.ScaledLoss()
    # the compiled loss
    compiled = torch.compile(loss_fn)
"""


def test_a_library_break_a_setting_removes_gets_the_setting_at_the_compile_call(tmp_path, site_packages, capsys):
    user = write(tmp_path / "proj", "train.py", USER)
    findings, errors = check([user])
    assert not errors and [(f.code, f.line) for f in findings] == [("TCL203", 7)]
    assert main(["fix", str(user), "--follow-imports", "--no-config"]) == 1  # a diff, nothing written
    out = capsys.readouterr()
    assert "+torch._dynamo.config.capture_scalar_outputs = True" in out.err
    assert "UNSAFE: a process-wide Dynamo setting" in out.err
    assert user.read_text() == textwrap.dedent(USER)

    main(["fix", str(user), "--follow-imports", "--no-config", "--apply", "--unsafe-fixes"])
    capsys.readouterr()
    assert user.read_text() == textwrap.dedent("""
        import torch
        import scalelib

        loss_fn = scalelib.ScaledLoss()
        # the compiled loss
        torch._dynamo.config.capture_scalar_outputs = True
        compiled = torch.compile(loss_fn)
    """)
    assert check([user]) == ([], [])  # the file now sets it: the finding is gone
    before = user.read_text()
    main(["fix", str(user), "--follow-imports", "--no-config", "--apply", "--unsafe-fixes"])
    assert user.read_text() == before  # applied once


def test_a_branch_on_the_captured_scalar_still_breaks(tmp_path, site_packages):
    user = write(tmp_path / "proj", "train.py", """
        import torch
        import scalelib

        torch._dynamo.config.capture_scalar_outputs = True
        compiled = torch.compile(scalelib.Gate())
    """)
    findings, errors = check([user])
    assert not errors
    assert [(f.code, f.library) for f in findings] == [("TCL208", "scalelib/losses.py:15:12")]


def test_settings_from_the_configuration_apply_to_every_file(tmp_path, site_packages):
    user = write(tmp_path / "proj", "train.py", """
        import torch
        import scalelib

        compiled = torch.compile(scalelib.PositiveMean())
    """)
    assert [f.code for f in check([user])[0]] == ["TCL301"]
    assert check([user], dynamo_config=["capture_dynamic_output_shape_ops"]) == ([], [])
    assert [f.code for f in check([user], dynamo_config=["capture_scalar_outputs"])[0]] == ["TCL301"]


OWN = """
    import torch


    def scale(x):
        return x * x.abs().max().item()


    @torch.compile
    def step(x):
        return scale(x) + 1
"""


def test_own_code_without_a_rewrite_gets_the_setting_before_its_compiled_function(tmp_path, capsys):
    user = write(tmp_path, "step.py", OWN)
    main(["fix", str(user), "--no-config", "--apply", "--unsafe-fixes"])
    capsys.readouterr()
    assert "torch._dynamo.config.capture_scalar_outputs = True\n\n\n@torch.compile\ndef step" in user.read_text() \
        or "torch._dynamo.config.capture_scalar_outputs = True\n@torch.compile\ndef step" in user.read_text()
    assert check([user]) == ([], [])


RNN_MODEL = """
    import torch
    from torch import nn


    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(4, 4)
            self.rnn = nn.LSTM(4, 8, batch_first=True)

        def forward(self, x):
            out, _ = self.rnn(self.proj(x))
            return out


    model = torch.compile(Tagger())
"""


def test_an_rnn_module_gets_allow_rnn_at_the_compile_call(tmp_path, capsys):
    user = write(tmp_path, "tagger.py", RNN_MODEL)
    assert [f.code for f in check([user])[0]] == ["TCL408"]
    main(["fix", str(user), "--no-config", "--apply"])
    assert user.read_text() == textwrap.dedent(RNN_MODEL)  # a process-wide setting is an UNSAFE fix
    main(["fix", str(user), "--no-config", "--apply", "--unsafe-fixes"])
    capsys.readouterr()
    assert "torch._dynamo.config.allow_rnn = True\nmodel = torch.compile(Tagger())" in user.read_text()
    assert check([user]) == ([], [])  # tcl check reads the setting back


def test_a_module_that_compiles_nothing_gets_no_setting(tmp_path, capsys):
    user = write(tmp_path, "model.py", """
        import torch.nn as nn

        class Net(nn.Module):
            def forward(self, x):
                return x * x.abs().max().item()
    """)
    before = user.read_text()
    main(["fix", str(user), "--no-config", "--apply", "--unsafe-fixes"])
    assert user.read_text() == before  # setting process-wide state on import is not a library's call
    assert "turn on torch._dynamo.config" not in capsys.readouterr().err


def test_fullgraph_mode_captures_scalars_itself(tmp_path):
    """fullgraph=True traces .item() (no TCL203) and raises at a Python branch on it (TCL208)."""
    from tcl.rules import BY_CODE

    example = BY_CODE["TCL208"].INVALID[0]
    user = write(tmp_path, "m.py", example.code)
    assert [f.code for f in check([user])[0]] == ["TCL203"]
    assert [(f.code, f.line) for f in check([user], mode="fullgraph")[0]] == [("TCL208", example.expected_lines()[0])]


def test_unknown_settings_are_one_line_errors(tmp_path, capsys):
    user = write(tmp_path, "m.py", "import torch\n")
    assert main(["check", str(user), "--no-config", "--dynamo-config", "capture_everything"]) == 2
    err = capsys.readouterr().err
    assert "unknown Dynamo setting 'capture_everything'" in err and "Traceback" not in err
    write(tmp_path, "pyproject.toml", '[tool.tcl]\ndynamo-config = ["nope"]\n')
    assert main(["check", str(user)]) == 2
    assert "dynamo-config: unknown Dynamo setting 'nope'" in capsys.readouterr().err


def test_aliases_of_the_config_module_count():
    from tcl.dynamo_settings import settings_in_tree
    import ast

    tree = ast.parse(textwrap.dedent("""
        import torch._dynamo as dynamo
        from torch._dynamo import config as dconf
        import torch
        dynamo.config.capture_scalar_outputs = True
        dconf.capture_dynamic_output_shape_ops = True
        torch._dynamo.config.verbose = True
        torch._dynamo.config.capture_scalar_outputs = False
    """))
    assert settings_in_tree(tree) == {"capture_scalar_outputs", "capture_dynamic_output_shape_ops"}


def test_print_and_warnings_registered_for_reordering_count_only_together():
    from tcl.dynamo_settings import settings_in_tree
    import ast

    def read(code):
        return settings_in_tree(ast.parse(textwrap.dedent(code)))

    assert read("""
        import warnings, torch
        torch._dynamo.config.reorderable_logging_functions.update({print, warnings.warn})
    """) == {"reorderable_logging_functions"}
    assert read("""
        from warnings import warn
        import torch._dynamo as dynamo
        dynamo.config.reorderable_logging_functions.add(print)
        dynamo.config.reorderable_logging_functions |= {warn}
    """) == {"reorderable_logging_functions"}
    # one of the two: print would still break, so tcl does not count the setting as on
    assert read("""
        import warnings, torch
        torch._dynamo.config.reorderable_logging_functions.add(warnings.warn)
    """) == frozenset()


WARNING_LIBRARY = """
    import warnings
    import torch.nn as nn

    class Legacy(nn.Module):
        def forward(self, x):
            warnings.warn("Legacy is deprecated")
            return x * 2

    class Categorised(nn.Module):
        def forward(self, x):
            warnings.warn("Categorised is deprecated", FutureWarning)
            return x * 2
"""


def test_a_library_warning_gets_registered_for_reordering_at_the_compile_call(tmp_path, site_packages, capsys):
    write(site_packages, "warnlib/__init__.py", WARNING_LIBRARY)
    user = write(tmp_path / "proj", "run.py", """
        import torch
        import warnlib

        compiled = torch.compile(warnlib.Legacy())
        other = torch.compile(warnlib.Categorised())
    """)
    findings, errors = check([user])
    assert not errors and [(f.code, f.line) for f in findings] == [("TCL105", 5), ("TCL105", 6)]
    legacy, categorised = findings
    assert "reorderable_logging_functions" in legacy.fix
    assert "reorderable_logging_functions" not in categorised.fix  # a category: Dynamo cannot reorder it
    main(["fix", str(user), "--follow-imports", "--no-config", "--apply", "--unsafe-fixes"])
    capsys.readouterr()
    assert user.read_text() == textwrap.dedent("""
        import torch
        import warnlib
        import warnings

        torch._dynamo.config.reorderable_logging_functions.update({print, warnings.warn})
        compiled = torch.compile(warnlib.Legacy())
        other = torch.compile(warnlib.Categorised())
    """)
    findings, errors = check([user])  # the registration holds: only the categorised warning is left
    assert not errors and [(f.code, f.line) for f in findings] == [("TCL105", 8)]


LOGGING_LIBRARY = """
    import logging
    import torch.nn as nn

    logger = logging.getLogger(__name__)

    class Noisy(nn.Module):
        def forward(self, x):
            logger.warning("Noisy is slow")
            logger.info("called")
            return x * 2
"""


def test_a_library_logging_call_gets_its_logger_method_ignored_at_the_compile_call(tmp_path, site_packages, capsys):
    write(site_packages, "loglib/__init__.py", LOGGING_LIBRARY)
    user = write(tmp_path / "proj", "run.py", """
        import torch
        import loglib

        compiled = torch.compile(loglib.Noisy())
    """)
    findings, errors = check([user])
    assert not errors and [f.code for f in findings] == ["TCL104", "TCL104"]
    assert all("ignore_logger_methods" in f.fix for f in findings)
    main(["fix", str(user), "--follow-imports", "--no-config", "--apply", "--unsafe-fixes"])
    capsys.readouterr()
    assert user.read_text() == textwrap.dedent("""
        import torch
        import loglib
        import logging

        torch._dynamo.config.ignore_logger_methods.update({logging.Logger.info, logging.Logger.warning})
        compiled = torch.compile(loglib.Noisy())
    """)
    assert check([user]) == ([], [])


MIXED_LIBRARY = """
    import logging
    import warnings
    import torch.nn as nn

    logger = logging.getLogger(__name__)

    class Mixed(nn.Module):
        def forward(self, x):
            print("forward")
            logger.warning("Mixed is slow")
            warnings.warn("deprecated")
            s = x.sum().item()
            return x * s
"""


def test_every_setting_a_library_needs_lands_in_one_fix_run(tmp_path, site_packages, capsys):
    # Three settings before one compile call: each round applies one (they touch the same
    # statement), and the later rounds check the file again with the same analyzer. Those rounds
    # once lost the user line of the library's findings (a result settled in the first round
    # named the first round's FunctionInfo of the compiled class), so one run applied only the
    # first setting and said "0 remaining" with two left.
    write(site_packages, "mixlib/__init__.py", MIXED_LIBRARY)
    user = write(tmp_path / "proj", "run.py", """
        import torch
        import mixlib

        compiled = torch.compile(mixlib.Mixed())
    """)
    findings, errors = check([user])
    assert not errors and [f.code for f in findings] == ["TCL101", "TCL104", "TCL105", "TCL203"]
    main(["fix", str(user), "--follow-imports", "--no-config", "--apply", "--unsafe-fixes"])
    err = capsys.readouterr().err
    assert user.read_text() == textwrap.dedent("""
        import torch
        import mixlib
        import warnings
        import logging

        torch._dynamo.config.reorderable_logging_functions.update({print, warnings.warn})
        torch._dynamo.config.ignore_logger_methods.add(logging.Logger.warning)
        torch._dynamo.config.capture_scalar_outputs = True
        compiled = torch.compile(mixlib.Mixed())
    """)
    assert "tcl fix: fixed 4 findings in 1 file; 0 remaining" in err  # findings gone, not fixes
    assert check([user]) == ([], [])


def test_two_scripts_compiling_one_installed_class_each_get_its_findings(tmp_path, site_packages):
    # One process checks both (-j 1): the second reuses what the first settled for the
    # library's forward, and once found no user line for it, so run2.py had no findings.
    write(site_packages, "mixlib/__init__.py", MIXED_LIBRARY)
    script = """
        import torch
        import mixlib

        compiled = torch.compile(mixlib.Mixed())
    """
    first = write(tmp_path / "proj", "run.py", script)
    second = write(tmp_path / "proj", "run2.py", script)
    findings, errors = check([first, second])
    assert not errors
    assert [(f.path, f.code) for f in findings if f.code == "TCL203"] == [(str(first), "TCL203"), (str(second), "TCL203")]
    assert len(findings) == 8


def test_only_the_listed_logging_functions_count_as_ignored():
    from tcl.dynamo_settings import check_names, settings_in_tree
    import ast

    assert settings_in_tree(ast.parse(textwrap.dedent("""
        import logging, torch
        torch._dynamo.config.ignore_logging_functions.update({logging.Logger.debug, logging.info})
    """))) == {"ignore_logger_methods:logging.Logger.debug", "ignore_logger_methods:logging.info"}
    expanded = check_names(["ignore_logger_methods"], "--dynamo-config")  # every logging call a rule reports
    assert "ignore_logger_methods:logging.Logger.warning_once" in expanded and "ignore_logger_methods:logging.info" in expanded


def test_a_logging_break_seen_at_run_time_names_its_logger_method(tmp_path):
    from tcl.fixes.settings import settings_for_breaks

    source = write(tmp_path, "lib.py", """
        import logging
        logger = logging.getLogger(__name__)

        def f(x):
            logger.warning_once("slow path")
            logging.info("called")
            return x
    """)
    sites = [("GB0291", str(source), 6), ("GB4841", str(source), 7), ("GB0124", str(source), 8)]
    found = settings_for_breaks(["GB0291", "GB4841", "GB0124"], (2, 13), sites)
    assert found["ignore_logger_methods:logging.Logger.warning_once,logging.info"] == ["GB0291", "GB4841"]
    # without the lines, the id alone names no logging function: nothing to list
    assert not any(k.startswith("ignore_logger_methods") for k in settings_for_breaks(["GB0291"], (2, 13)))


torch = pytest.importorskip("torch")


def test_verify_keeps_the_setting_when_the_compiler_confirms_it(tmp_path, site_packages, capsys, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(site_packages))  # the verifier's child processes import scalelib
    user = write(tmp_path / "proj", "train.py", USER + """

    def tcl_examples():
        return [(scalelib.ScaledLoss(), (torch.randn(4, 4),), {})]
    """)
    assert main(["fix", str(user), "--follow-imports", "--no-config", "--apply", "--verify"]) in (0, 1)
    out = capsys.readouterr()
    assert "torch._dynamo.config.capture_scalar_outputs = True\ncompiled = torch.compile(loss_fn)" in user.read_text()
    assert "TCL203 fixed (verified on 1 example: breaks 1 -> 0)" in out.out + out.err


def test_verify_keeps_allow_rnn_when_the_lstm_traces(tmp_path, capsys):
    user = write(tmp_path, "tagger.py", RNN_MODEL + """

    def tcl_examples():
        return [(Tagger(), (torch.randn(2, 3, 4),), {})]
    """)
    assert main(["fix", str(user), "--no-config", "--apply", "--verify"]) in (0, 1)
    out = capsys.readouterr()
    assert "torch._dynamo.config.allow_rnn = True\nmodel = torch.compile(Tagger())" in user.read_text()
    assert "TCL408 fixed (verified on 1 example: breaks 1 -> 0)" in out.out + out.err


COUNTER_MODEL = """
    import torch
    from torch import nn


    class EveryFourth(nn.Module):
        def __init__(self):
            super().__init__()
            self.calls = 0
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            if self.calls % 4 == 0:
                x = x * 2
            self.calls += 1
            return self.lin(x)


    model = torch.compile(EveryFourth())
"""


def test_a_module_counter_gets_allow_unspec_int_at_the_compile_call(tmp_path, capsys):
    """The recompile fix of TCL501 for a module attribute: the setting that traces it as a
    symbolic int (measured by the rule examples' test: compilations stop growing with calls)."""
    user = write(tmp_path, "counter.py", COUNTER_MODEL)
    assert [(f.code, f.line) for f in check([user])[0]] == [("TCL501", 13)]
    main(["fix", str(user), "--no-config", "--unsafe-fixes"])
    out = capsys.readouterr()
    assert "It removes the recompiles at line 13" in out.out + out.err
    main(["fix", str(user), "--no-config", "--apply", "--unsafe-fixes"])
    assert ("torch._dynamo.config.allow_unspec_int_on_nn_module = True\nmodel = torch.compile(EveryFourth())"
            in user.read_text())
    assert check([user]) == ([], [])  # tcl check reads the setting back


def test_verify_keeps_allow_unspec_int_when_the_recompiles_go_down(tmp_path, capsys):
    """A stateful example: eager and compiled runs each start from a copy of the module as built."""
    user = write(tmp_path, "counter.py", COUNTER_MODEL + """

    def tcl_examples():
        return [(EveryFourth(), (torch.randn(3, 4),), {})]
    """)
    assert main(["fix", str(user), "--no-config", "--apply", "--verify"]) in (0, 1)
    out = capsys.readouterr()
    assert "torch._dynamo.config.allow_unspec_int_on_nn_module = True" in user.read_text()
    assert "TCL501 fixed (verified on 1 example: breaks 0 -> 0, recompiles 4 -> 1)" in out.out + out.err


@pytest.mark.skipif(__import__("tcl.torch_version", fromlist=["installed"]).installed() != (2, 13),
                    reason="the wrong result was measured on torch 2.13")
def test_verify_rejects_the_setting_where_compiled_results_go_wrong(tmp_path, capsys):
    """The setting is process-wide: it removes `scaled`'s break, and on torch 2.13 it also makes
    the compiled `decode_lengths` (`eos in row.tolist()` over captured scalars) return [4, 4]
    instead of [2, 4]. --verify runs every example under the variant and must not keep it."""
    user = write(tmp_path, "decode.py", """
        import torch


        @torch.compile
        def scaled(x):
            return x * x.abs().max().item()


        @torch.compile
        def decode_lengths(token_ids, eos_id: int):
            lengths = []
            for row in token_ids:
                ids = row.tolist()
                lengths.append(ids.index(eos_id) if eos_id in ids else len(ids))
            return torch.tensor(lengths)


        def tcl_examples():
            return [(scaled, (torch.randn(4, 4),), {}),
                    (decode_lengths, (torch.tensor([[5, 2, 1, 0], [7, 7, 7, 7]]), 1), {})]
    """)
    before = user.read_text()
    main(["fix", str(user), "--no-config", "--apply", "--verify"])
    out = capsys.readouterr()
    assert user.read_text() == before
    assert "TCL203 not fixed: example 1 (decode_lengths): compiled outputs differ from eager" in out.err
