"""`[tool.tcl]` in pyproject.toml, overridden by command-line options."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from . import torch_version

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

MODES = ("default", "fullgraph")
API_MODES = ("auto", "on", "off")  # api-entries (tcl/api_entries.py)


class ConfigError(Exception):
    pass


@dataclass
class Config:
    select: list[str] = field(default_factory=lambda: ["TCL"])
    ignore: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    torch_version: str | None = None
    mode: str = "default"
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    # What the user compiles under, so branches on it are decided statically:
    # {"training": False} (inference), {"dtype": "bfloat16"} (floating tensors' dtype),
    # {"device": "cpu"} (where the tensors live: Dynamo reads 0-d CPU tensor inputs as numbers).
    assume: dict[str, object] = field(default_factory=dict)
    # Entries named where tcl cannot find them (tcl/entries.py): `entries`, `--entry`, and the
    # recording of `pytest --tcl-record` (None: `.tcl/recorded_entries.json` when present).
    entries: list = field(default_factory=list)  # tcl.entries.EntrySpec
    recorded_entries: str | None = None
    # Follow calls from compiled code into installed packages (tcl/installed.py).
    follow_imports: bool = False
    # Skip what the git repository ignores when walking directories (tcl.files.GitIgnore), as
    # ruff and black do: an ignored copy of a library must not pass for the project's own code.
    respect_gitignore: bool = True
    # Dynamo settings the program turns on wherever it compiles (tcl/dynamo_settings.py):
    # ["capture_scalar_outputs"] silences what that setting keeps in the graph, in every file.
    dynamo_config: list[str] = field(default_factory=list)
    # Also report the breaks an earlier break hides (Dynamo runs their frame eagerly before
    # reaching them): the whole list of what stands between a frame and one graph.
    show_hidden: bool = False
    # A library's public functions that take tensor data are entries too (tcl/api_entries.py):
    # "auto" in library files, "on" everywhere, "off" never.
    api_entries: str = "auto"
    source: Path | None = None  # the pyproject.toml it came from

    def target_version(self) -> tuple[int, int]:
        return torch_version.resolve(self.torch_version)

    def enabled(self, code: str) -> bool:
        selected = any(code.startswith(p) for p in self.select)
        ignored = any(code.startswith(p) for p in self.ignore)
        if selected and ignored:
            # The more specific prefix wins, as in ruff.
            best_select = max((p for p in self.select if code.startswith(p)), key=len)
            best_ignore = max((p for p in self.ignore if code.startswith(p)), key=len)
            return len(best_select) > len(best_ignore)
        return selected


KEYS = {
    "select", "ignore", "extend-select", "exclude", "extend-exclude", "torch-version", "mode",
    "per-file-ignores", "assume", "entries", "recorded-entries", "follow-imports", "respect-gitignore", "dynamo-config",
    "show-hidden", "api-entries",
}
DEVICES = ("cpu", "cuda", "xpu", "mps")
# torch's floating dtypes by every name they go by: `assume.dtype` and `x.dtype == torch.half`.
FLOAT_DTYPES = {
    "float16": "float16", "half": "float16", "bfloat16": "bfloat16", "float32": "float32",
    "float": "float32", "float64": "float64", "double": "float64",
}


def find_pyproject(start: Path) -> Path | None:
    start = start.resolve()
    for directory in [start, *start.parents] if start.is_dir() else [start.parent, *start.parent.parents]:
        candidate = directory / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def load(pyproject: Path | None) -> Config:
    """[tool.tcl] of `pyproject`, every key's type checked: a ConfigError names the file, the
    key and what was expected, in one line; a string stands for a one-item list."""
    config = Config()
    if pyproject is None:
        return config
    try:
        raw = pyproject.read_bytes()
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise ConfigError(f"{pyproject}: cannot read [tool.tcl]: not UTF-8 (byte {raw[exc.start]:#04x} on line {line})") from None
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{pyproject}: cannot read [tool.tcl]: {_one_line(exc)}") from None
    tool = data.get("tool", {})
    if not isinstance(tool, dict):
        raise ConfigError(f"{pyproject}: tool: expected a table ([tool.tcl]), got {_shown(tool)}")
    section = tool.get("tcl")
    if section is None:
        return config
    if not isinstance(section, dict):
        raise ConfigError(f"{pyproject}: tool.tcl: expected a table ([tool.tcl]), got {_shown(section)}")
    unknown = set(section) - KEYS
    if unknown:
        raise ConfigError(f"{pyproject}: unknown [tool.tcl] keys: {', '.join(sorted(unknown))}")
    where = str(pyproject)
    config.source = pyproject
    config.select = (_codes(section["select"], where, "select") if "select" in section else config.select) + \
        _codes(section.get("extend-select", []), where, "extend-select")
    config.ignore = _codes(section.get("ignore", []), where, "ignore")
    config.exclude = _strings(section.get("exclude", []), where, "exclude") + \
        _strings(section.get("extend-exclude", []), where, "extend-exclude")
    if "torch-version" in section:
        config.torch_version = _version(section["torch-version"], where)
    config.mode = _string(section.get("mode", "default"), where, "mode", f"one of {', '.join(MODES)}")
    config.per_file_ignores = _per_file_ignores(section.get("per-file-ignores", {}), where)
    assume = section.get("assume", {})
    if not isinstance(assume, dict):
        raise ConfigError(f"{where}: assume: expected a table, e.g. assume = {{ training = false }}, got {_shown(assume)}")
    config.assume = assume
    config.entries = _entries(section.get("entries", []), where)
    if "recorded-entries" in section:
        recorded = _string(section["recorded-entries"], where, "recorded-entries", "a path")
        config.recorded_entries = str(pyproject.parent / recorded)
    follow = section.get("follow-imports", False)
    if not isinstance(follow, bool):
        raise ConfigError(f"{where}: follow-imports: expected true or false, got {_shown(follow)}")
    config.follow_imports = follow
    respect = section.get("respect-gitignore", True)
    if not isinstance(respect, bool):
        raise ConfigError(f"{where}: respect-gitignore: expected true or false, got {_shown(respect)}")
    config.respect_gitignore = respect
    config.dynamo_config = _settings(section.get("dynamo-config", []), where)
    hidden = section.get("show-hidden", False)
    if not isinstance(hidden, bool):
        raise ConfigError(f"{where}: show-hidden: expected true or false, got {_shown(hidden)}")
    config.show_hidden = hidden
    api = section.get("api-entries", "auto")
    if isinstance(api, bool):
        api = "on" if api else "off"
    config.api_entries = _string(api, where, "api-entries", f"one of {', '.join(API_MODES)} (or true/false)")
    validate(config, where)
    return config


def _settings(value, where: str) -> list[str]:
    from .dynamo_settings import check_names

    try:
        return check_names(_strings(value, where, "dynamo-config"), f"{where}: dynamo-config")
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def _entries(value, where: str) -> list:
    from .entries import EntryError, parse

    try:
        return [parse(text, f"{where}: entries") for text in _strings(value, where, "entries")]
    except EntryError as exc:
        raise ConfigError(str(exc)) from None


def _shown(value) -> str:
    """`float 2.13`: the TOML type (as Python names it) and the value, short and on one line."""
    text = _one_line(repr(value))
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(value).__name__} {text}"


def _one_line(value) -> str:
    return " ".join(str(value).split())


def _strings(value, where: str, key: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: {key}: expected a list of strings, got {_shown(value)}")
    return list(value)


def _string(value, where: str, key: str, expected: str) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{where}: {key}: expected a string ({expected}), got {_shown(value)}")
    return value


def _version(value, where: str) -> str:
    if not isinstance(value, str):
        hint = f' (write it quoted: torch-version = "{value}")' if isinstance(value, (int, float)) and not isinstance(value, bool) else ""
        raise ConfigError(f'{where}: torch-version: expected a string "X.Y", got {_shown(value)}{hint}')
    return value


def _codes(value, where: str, key: str) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: {key}: expected a list of rule codes, got {_shown(value)}")
    codes = [v.strip().upper() for v in value]
    check_codes(codes, where, key)
    return codes


def _per_file_ignores(value, where: str) -> dict[str, list[str]]:
    if not isinstance(value, dict):
        raise ConfigError(f'{where}: per-file-ignores: expected a table of pattern = [codes], '
                          f'e.g. per-file-ignores = {{ "tests/*" = ["TCL101"] }}, got {_shown(value)}')
    return {pattern: _codes(codes, where, f"per-file-ignores.{pattern}") for pattern, codes in value.items()}


def check_codes(codes: list[str], where: str, key: str) -> None:
    """A code or prefix is known if some rule's code starts with it (`TCL`, `TCL1`, `TCL101`)."""
    unknown = [code for code in codes if not _known_code(code)]
    if unknown:
        raise ConfigError(f"{where}: {key}: unknown rule code{'s' * (len(unknown) > 1)} {', '.join(unknown)} "
                          "(`tcl rules` lists them)")


def _known_code(code: str) -> bool:
    if code and "TCL".startswith(code):
        return True  # every rule: no need to import the rules (flake8 imports nothing heavy)
    from .rules import ALL_RULES

    return bool(code) and any(rule.code.startswith(code) for rule in ALL_RULES)


def parse_assumption(text: str) -> tuple[str, object]:
    """`training=false` / `dtype=bfloat16` / `device=cuda` from the command line."""
    key, sep, value = text.partition("=")
    key, value = key.strip(), value.strip()
    if not sep or not key:
        raise ConfigError(f"--assume {text!r}: expected KEY=VALUE, e.g. training=false or dtype=bfloat16")
    if key == "training":
        if value.lower() not in ("true", "false"):
            raise ConfigError(f"--assume {text!r}: training is true or false")
        return key, value.lower() == "true"
    return key, value


def validate(config: Config, where: str) -> None:
    if not isinstance(config.assume, dict):
        raise ConfigError(f"{where}: assume must be a table, e.g. assume = {{ training = false }}")
    unknown = set(config.assume) - {"training", "dtype", "device"}
    if unknown:
        raise ConfigError(f"{where}: unknown assume keys: {', '.join(sorted(unknown))} (known: device, dtype, training)")
    if "device" in config.assume and config.assume["device"] not in DEVICES:
        raise ConfigError(f"{where}: assume.device must be one of {', '.join(DEVICES)}, not {config.assume['device']!r}")
    if "training" in config.assume and not isinstance(config.assume["training"], bool):
        raise ConfigError(f"{where}: assume.training must be true or false")
    if "dtype" in config.assume and str(config.assume["dtype"]).removeprefix("torch.") not in FLOAT_DTYPES:
        raise ConfigError(
            f"{where}: assume.dtype must be a floating dtype ({', '.join(sorted(FLOAT_DTYPES))}), "
            f"not {config.assume['dtype']!r}"
        )
    if config.mode not in MODES:
        raise ConfigError(f"{where}: mode: expected one of {', '.join(MODES)}, got {config.mode!r}")
    if config.api_entries not in API_MODES:
        raise ConfigError(f"{where}: api-entries: expected one of {', '.join(API_MODES)}, got {config.api_entries!r}")
    if config.torch_version is not None:
        try:
            torch_version.parse(str(config.torch_version))
        except ValueError as exc:
            raise ConfigError(f"{where}: torch-version: {exc}") from None
