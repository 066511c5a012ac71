"""Which torch release the analysis targets, read without importing torch."""

from __future__ import annotations

import re
from importlib import metadata

# Releases whose graph-break behaviour was measured (shared/research/calibration.md and the
# rule examples run by the test suite). Other versions use the nearest measured release.
MEASURED = ((2, 11), (2, 13), (2, 14))
DEFAULT = (2, 13)


def parse(text: str) -> tuple[int, int]:
    match = re.match(r"\s*(\d+)\.(\d+)", text)
    if not match:
        raise ValueError(f"not a torch version: {text!r} (expected X.Y)")
    return int(match.group(1)), int(match.group(2))


def installed() -> tuple[int, int] | None:
    try:
        return parse(metadata.version("torch"))
    except (metadata.PackageNotFoundError, ValueError):
        return None


def resolve(requested: str | None) -> tuple[int, int]:
    if requested:
        return parse(requested)
    return installed() or DEFAULT


def format_version(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"
