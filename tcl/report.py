"""Output formats for `tcl check`: text (flake8-style) and JSON."""

from __future__ import annotations

import json
from typing import TextIO

from . import __version__
from .findings import FileError, Finding


def text_line(finding: Finding) -> str:
    gb = f" [{finding.gb}]" if finding.gb else ""
    return f"{finding.path}:{finding.line}:{finding.col}: {finding.code} {finding.message}{gb} -> {finding.fix}"


def write_text(findings: list[Finding], errors: list[FileError], out: TextIO, err: TextIO, statistics: bool = False) -> None:
    for finding in findings:
        out.write(text_line(finding) + "\n")
    for error in errors:
        err.write(f"{error}\n")
    if statistics and findings:
        counts: dict[str, int] = {}
        for finding in findings:
            counts[finding.code] = counts.get(finding.code, 0) + 1
        for code in sorted(counts):
            out.write(f"{counts[code]:<6} {code}\n")


def write_json(findings: list[Finding], errors: list[FileError], out: TextIO, target: str, mode: str) -> None:
    payload = {
        "tool": {"name": "tcl", "version": __version__, "torch_version": target, "mode": mode},
        "findings": [f.to_json() for f in findings],
        "errors": [e.to_json() for e in errors],
    }
    json.dump(payload, out, indent=2)
    out.write("\n")
