"""Each setting tcl/library_remedies.py offers for a break in code the user does not own is
proven on the installed compiler: the break happens without it and is gone with it."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from tcl.library_remedies import SETTINGS, remedy  # noqa: E402
from tcl.torch_version import installed  # noqa: E402

INSTALLED = installed() or (0, 0)


def _item(x):
    return x * x.sum().item()


def _float(x):
    return x * float(x.sum())


def _size(x):
    return torch.arange(int(x.sum().item())) + 1


def _nonzero(x):
    return torch.nonzero(x).float().sum()


def _print(x):
    print("step")
    return x + 1


_LOG = __import__("logging").getLogger("somelib")


def _log(x):
    _LOG.warning("step")
    return x + 1


def _warn(x):
    import warnings

    warnings.warn("step")
    return x + 1


class _Lstm(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = torch.nn.LSTM(4, 4)

    def forward(self, x):
        return self.rnn(x)[0]


CASES = {
    "TCL203": (_item, lambda: torch.ones(3), {"capture_scalar_outputs": True}),
    "TCL204": (_float, lambda: torch.ones(3), {"capture_scalar_outputs": True}),
    "TCL206": (_size, lambda: torch.ones(3), {"capture_scalar_outputs": True}),
    "TCL301": (_nonzero, lambda: torch.tensor([0.0, 1.0, 2.0]), {"capture_dynamic_output_shape_ops": True}),
    "TCL101": (_print, lambda: torch.ones(3), {"reorderable_logging_functions": {print}}),
    "TCL104": (_log, lambda: torch.ones(3), {"ignore_logger_methods": {__import__("logging").Logger.warning}}),
    "TCL105": (_warn, lambda: torch.ones(3), {"reorderable_logging_functions": {print, __import__("warnings").warn}}),
    "TCL408": (_Lstm(), lambda: torch.ones(2, 1, 4), {"allow_rnn": True}),
}


def _breaks(fn, x, settings) -> int:
    """Default-mode graph breaks of `fn(x)` on the installed torch (tcl.oracle, as the rule
    examples are checked), under the given Dynamo settings."""
    from tcl import oracle

    torch._dynamo.reset()
    with torch._dynamo.config.patch(**settings):
        result = oracle.probe(fn, (x,), user_files={__file__}, modes=("default",))
    assert result.exception is None
    return len(result.breaks)


class _Counter(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return x * 2


# Recompile rules: the setting stops the compilations growing with the number of calls.
RECOMPILE_CASES = {
    "TCL501": (_Counter, lambda: torch.ones(3), {"allow_unspec_int_on_nn_module": True}),
}


def _summary(x):
    return x * 2, f"total {x.sum().item():.3f} peak {x.max().item():.3f}"


# Crash rules: with the setting the compiled calls stop raising.
CRASH_CASES = {
    "TCL601": (_summary, lambda: torch.randn(4), {"capture_scalar_outputs": True}),
}


def test_every_setting_has_a_case():
    assert set(CASES) | set(RECOMPILE_CASES) | set(CRASH_CASES) == set(SETTINGS)


@pytest.mark.parametrize("code", sorted(CRASH_CASES))
def test_the_setting_stops_the_crash_on_the_installed_compiler(code):
    from tcl.rules import BY_CODE

    if not BY_CODE[code].applies(INSTALLED, "default"):
        pytest.skip(f"{code} is measured on torch {BY_CODE[code].versions}")
    fn, make, settings = CRASH_CASES[code]

    def raised(patch) -> int:
        torch._dynamo.reset()
        compiled = torch.compile(fn, backend="eager")
        count = 0
        with torch._dynamo.config.patch(**patch):
            for _ in range(3):
                try:
                    compiled(make())
                except Exception:  # noqa: BLE001 -- the crash is what is counted
                    count += 1
        torch._dynamo.reset()
        return count

    assert raised({}) == 2
    assert raised(settings) == 0
    for key in settings:
        assert key in SETTINGS[code]
    assert "torch.compiler.disable" in remedy(code, "somelib==1.0", "crash")


@pytest.mark.parametrize("code", sorted(RECOMPILE_CASES))
def test_the_setting_stops_the_recompiles_on_the_installed_compiler(code):
    from tcl.verify.recompiles import count_compiles

    build, make_input, settings = RECOMPILE_CASES[code]
    assert count_compiles(build(), [(make_input(),)] * 6) == 6
    with torch._dynamo.config.patch(**settings):
        assert count_compiles(build(), [(make_input(),)] * 6) <= 2
    assert "allow_unspec_int_on_nn_module" in remedy(code, "somelib==1.0", "recompile")


@pytest.mark.parametrize("code", sorted(CASES))
def test_the_setting_removes_the_break(code, capsys):
    fn, make, settings = CASES[code]
    assert _breaks(fn, make(), {}) >= 1
    assert _breaks(fn, make(), settings) == 0
    for key in settings:
        assert key in SETTINGS[code]


def test_remedy_names_the_package_and_the_ways_around():
    text = remedy("TCL201", "zuko==1.6.0")
    assert text.startswith("in zuko==1.6.0, which you do not edit: ")
    assert "torch.compiler.disable" in text and "capture_scalar_outputs" not in text
    assert "capture_scalar_outputs" in remedy("TCL203", "zuko==1.6.0")


def test_the_remedies_agree_with_the_rules_settings():
    """A rule whose breaks a setting removes (Rule.removed_by, which tcl check and tcl fix use)
    names that setting in its library remedy too."""
    from tcl.rules import ALL_RULES

    for rule in ALL_RULES:
        for setting in rule.removed_by:
            # `ignore_logger_methods:logging.Logger.info`: the setting, listing one function
            assert setting.partition(":")[0] in SETTINGS.get(rule.code, ""), rule.code
