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
    "per-file-ignores", "assume",
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
    config = Config()
    if pyproject is None:
        return config
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{pyproject}: cannot read [tool.tcl]: {exc}") from None
    section = data.get("tool", {}).get("tcl")
    if section is None:
        return config
    unknown = set(section) - KEYS
    if unknown:
        raise ConfigError(f"{pyproject}: unknown [tool.tcl] keys: {', '.join(sorted(unknown))}")
    config.source = pyproject
    config.select = _codes(section.get("select", config.select), pyproject) + _codes(section.get("extend-select", []), pyproject)
    config.ignore = _codes(section.get("ignore", []), pyproject)
    config.exclude = list(section.get("exclude", [])) + list(section.get("extend-exclude", []))
    config.torch_version = section.get("torch-version")
    config.mode = section.get("mode", "default")
    config.per_file_ignores = {k: _codes(v, pyproject) for k, v in section.get("per-file-ignores", {}).items()}
    config.assume = section.get("assume", {})
    validate(config, str(pyproject))
    return config


def _codes(value, where) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: expected a list of rule codes, got {value!r}")
    return [v.strip().upper() for v in value]


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
        raise ConfigError(f"{where}: mode must be one of {', '.join(MODES)}, not {config.mode!r}")
    if config.torch_version is not None:
        try:
            torch_version.parse(str(config.torch_version))
        except ValueError as exc:
            raise ConfigError(f"{where}: {exc}") from None
