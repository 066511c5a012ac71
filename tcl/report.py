"""Output formats for `tcl check`: text (flake8-style), JSON, SARIF 2.1.0 and GitHub annotations."""

from __future__ import annotations

import json
from typing import TextIO

from . import __version__
from .findings import FileError, Finding


def finding_text(finding: Finding) -> str:
    """`TCL101 message [GB0059] -> fix`: the text after `path:line:col: `, shared with flake8."""
    return f"{finding.code} {_message_text(finding)}"


def _message_text(finding: Finding) -> str:
    gb = f" [{finding.gb}]" if finding.gb else ""
    return f"{finding.message}{gb} -> {finding.fix}"


def text_line(finding: Finding) -> str:
    return f"{finding.path}:{finding.line}:{finding.col}: {finding_text(finding)}"


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


def write_json(findings: list[Finding], errors: list[FileError], out: TextIO, target: str, mode: str,
               assume: dict | None = None) -> None:
    payload = {
        "tool": {"name": "tcl", "version": __version__, "torch_version": target, "mode": mode,
                 "assume": dict(assume or {})},
        "findings": [f.to_json() for f in findings],
        "errors": [e.to_json() for e in errors],
    }
    json.dump(payload, out, indent=2)
    out.write("\n")


# -- SARIF 2.1.0 (GitHub code scanning, IDE SARIF viewers) -------------------------------------

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
GB_SITE = "https://meta-pytorch.github.io/compile-graph-break-site"
# Where SARIF viewers link the tool's name. pyproject.toml declares no [project.urls] yet; a
# Homepage/Repository/Documentation URL declared there is used instead.
DEFAULT_INFORMATION_URI = f"{GB_SITE}/"
FINGERPRINT_KEY = "tclLineHash/v1"
SARIF_LEVELS = {"warning": "warning", "error": "error"}


def gb_url(gb_id: str) -> str:
    """https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0059.html for GB0059."""
    return f"{GB_SITE}/gb/{gb_id.lower()}.html"


def write_sarif(findings: list[Finding], errors: list[FileError], out: TextIO, target: str, mode: str,
                root: str | None = None) -> None:
    json.dump(sarif_log(findings, errors, target, mode, root), out, indent=2)
    out.write("\n")


def sarif_log(findings: list[Finding], errors: list[FileError], target: str, mode: str, root: str | None = None) -> dict:
    """One run; artifact URIs relative to `root` (default: the working directory) as %SRCROOT%."""
    import os
    from pathlib import Path

    from .rules import ALL_RULES

    root = os.path.abspath(root or os.getcwd())
    rules = list(ALL_RULES)
    index = {rule.code: i for i, rule in enumerate(rules)}
    for finding in findings:  # a code missing from the registry still gets a descriptor
        if finding.code not in index:
            index[finding.code] = len(rules)
            rules.append(None)
    descriptors = [
        _rule_descriptor(rule) if rule is not None else {"id": code, "shortDescription": {"text": code}}
        for code, rule in zip(sorted(index, key=index.get), rules)
    ]
    fingerprints = _Fingerprints(root)
    results = []
    for finding in findings:
        uri, base = _artifact_uri(finding.path, root)
        location = {"artifactLocation": {"uri": uri, **({"uriBaseId": base} if base else {})},
                    "region": {"startLine": finding.line, "startColumn": finding.col,
                               "endLine": finding.end_line, "endColumn": finding.end_col}}
        result = {
            "ruleId": finding.code,
            "ruleIndex": index[finding.code],
            "level": SARIF_LEVELS.get(finding.severity, "warning"),
            "message": {"text": _message_text(finding)},
            "locations": [{"physicalLocation": location}],
            "partialFingerprints": {FINGERPRINT_KEY: fingerprints.of(finding)},
        }
        properties = {}
        if finding.gb:
            properties["gb"] = finding.gb
        if finding.reached_from:
            properties["reachedFrom"] = list(finding.reached_from)
        if properties:
            result["properties"] = properties
        results.append(result)
    notifications = []
    for error in errors:
        uri, base = _artifact_uri(error.path, root)
        physical: dict = {"artifactLocation": {"uri": uri, **({"uriBaseId": base} if base else {})}}
        if error.line:
            physical["region"] = {"startLine": error.line}
        notifications.append({"level": "error", "message": {"text": error.message},
                              "locations": [{"physicalLocation": physical}]})
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "tcl",
                "fullName": "tcl, the torch.compile linter",
                "version": __version__,
                "semanticVersion": __version__,
                "informationUri": information_uri(),
                "rules": descriptors,
            }},
            "invocations": [{"executionSuccessful": not errors, "toolExecutionNotifications": notifications}],
            "originalUriBaseIds": {"%SRCROOT%": {"uri": Path(root).as_uri().rstrip("/") + "/"}},
            "columnKind": "unicodeCodePoints",
            "results": results,
            "properties": {"torchVersion": target, "mode": mode},
        }],
    }


def information_uri() -> str:
    try:
        from importlib import metadata

        for entry in metadata.metadata("tcl").get_all("Project-URL") or []:
            label, _, url = entry.partition(",")
            if label.strip().lower() in ("homepage", "repository", "source", "documentation") and url.strip():
                return url.strip()
    except Exception:  # not installed, or no metadata: fall back
        pass
    return DEFAULT_INFORMATION_URI


def _rule_descriptor(rule) -> dict:
    gb_ids = rule.gb_ids()
    modes = "every mode" if len(rule.modes) > 1 else f"{next(iter(rule.modes))} mode only"
    versions = f"torch {rule.versions}" if rule.versions else "all torch versions"
    gb_links = ", ".join(f"[{g}]({gb_url(g)})" for g in gb_ids) or "-"
    help_text = f"{rule.rationale or rule.message}\n\nFix: {rule.fix}\n\nGraph-break ids: {', '.join(gb_ids) or '-'}"
    markdown = [
        f"**{rule.code} {rule.name}**: {rule.message}.",
        "",
        rule.rationale or "",
        "",
        f"**Fix:** {rule.fix}",
        "",
        f"Graph-break ids: {gb_links}. Applies to {modes}; {versions}.",
    ]
    if rule.INVALID and rule.VALID:
        markdown += [
            "", "Breaks:", "", "```python", rule.INVALID[0].code.strip("\n"), "```",
            "", "Does not break:", "", "```python", rule.VALID[0].code.strip("\n"), "```",
        ]
    descriptor = {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.message},
        "fullDescription": {"text": rule.rationale or rule.message},
        "help": {"text": help_text, "markdown": "\n".join(markdown)},
        "defaultConfiguration": {"level": "warning"},
        "properties": {"tags": ["torch.compile", getattr(rule, "category", "graph-break"), *gb_ids], "modes": sorted(rule.modes),
                       "torchVersions": rule.versions or "all"},
    }
    if gb_ids:
        descriptor["helpUri"] = gb_url(gb_ids[0])
    return descriptor


def _artifact_uri(path: str, root: str) -> tuple[str, str | None]:
    """(uri, uriBaseId): relative to %SRCROOT% when the file is under root, else a file: URI."""
    import os
    from pathlib import Path
    from urllib.parse import quote

    absolute = os.path.abspath(path)
    relative = os.path.relpath(absolute, root) if os.path.splitdrive(absolute)[0] == os.path.splitdrive(root)[0] else ".."
    if relative == ".." or relative.startswith(".." + os.sep):
        return Path(absolute).as_uri(), None
    return quote(relative.replace(os.sep, "/")), "%SRCROOT%"


class _Fingerprints:
    """Stable across edits elsewhere in the file: rule, file and the flagged line's text, not its number."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.lines: dict[str, list[str]] = {}
        self.seen: dict[tuple[str, str, str], int] = {}

    def _line(self, path: str, number: int) -> str:
        if path not in self.lines:
            try:
                from .files import read_source

                self.lines[path] = read_source(path).splitlines()
            except Exception:
                self.lines[path] = []
        lines = self.lines[path]
        return lines[number - 1].strip() if 0 < number <= len(lines) else f"#{number}"

    def of(self, finding: Finding) -> str:
        import hashlib
        import os

        where = os.path.relpath(os.path.abspath(finding.path), self.root).replace(os.sep, "/")
        key = (finding.code, where, self._line(finding.path, finding.line))
        occurrence = self.seen.get(key, 0)
        self.seen[key] = occurrence + 1
        digest = hashlib.sha256("\0".join([*key, str(occurrence)]).encode("utf-8")).hexdigest()[:32]
        return f"{digest}:{occurrence + 1}"


# -- GitHub Actions workflow commands: annotations on the pull request diff -------------------

def write_github(findings: list[Finding], errors: list[FileError], out: TextIO) -> None:
    for finding in findings:
        level = "error" if finding.severity == "error" else "warning"
        properties = ",".join([
            f"file={_gh_property(finding.path)}", f"line={finding.line}", f"col={finding.col}",
            f"endLine={finding.end_line}", f"endColumn={finding.end_col}", f"title={finding.code}",
        ])
        out.write(f"::{level} {properties}::{_gh_data(_message_text(finding))}\n")
    for error in errors:
        properties = f"file={_gh_property(error.path)}" + (f",line={error.line}" if error.line else "") + ",title=tcl"
        out.write(f"::error {properties}::{_gh_data(error.message)}\n")


def _gh_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_property(text: str) -> str:
    return _gh_data(text).replace(":", "%3A").replace(",", "%2C")
