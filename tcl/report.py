"""Output formats for `tcl check`: text (flake8-style), JSON, SARIF 2.1.0 and GitHub annotations."""

from __future__ import annotations

import json
from typing import TextIO

from . import __version__
from .findings import FileError, Finding


def finding_text(finding: Finding) -> str:
    """`TCL101 message (in helper, reached from M.forward) [GB0059] -> fix`: one line with
    everything, for the places that show one line per finding (flake8, the editor, annotations)."""
    return f"{finding.code} {_message_text(finding)}"


def _message_text(finding: Finding) -> str:
    through = f", through {finding.trail_text}" if finding.trail else ""
    context = f" ({finding.context}{through})" if finding.context else ""
    return f"{finding.message}{_evidence(finding)}{finding.note}{context}{_gb(finding)} -> {finding.fix}"


def _evidence(finding: Finding) -> str:
    return f" ({finding.evidence})" if finding.evidence else ""


def _gb(finding: Finding) -> str:
    return f" [{finding.gb}]" if finding.gb else ""


def text_line(finding: Finding) -> str:
    """The one-line form with its location: `path:line:col: ` + finding_text."""
    return f"{finding.path}:{finding.line}:{finding.col}: {finding_text(finding)}"


def concise_line(finding: Finding, evidence: bool = True) -> str:
    """`path:line:col: TCL201 message (scale: x.sum() at line 12) [GB0170]`: one line a finding;
    without `evidence`, the first line of a finding in `tcl check`'s text."""
    why = _evidence(finding) if evidence else ""
    return f"{finding.path}:{finding.line}:{finding.col}: {finding.code} {finding.message}{why}{_gb(finding)}"


def text_block(finding: Finding) -> str:
    """The finding's first line, then which value was judged tensor data and why, what it costs,
    the fix and, for a helper, where compiled code reaches it, each on an indented line of its
    own so the first line stays short for a terminal."""
    lines = [concise_line(finding, evidence=False)]
    if finding.evidence:
        lines.append(f"    judged tensor data: {finding.evidence}")
    if finding.note:
        lines.append(f"    {finding.note_text}")
    lines.append(f"    fix: {finding.fix}")
    if finding.context:
        lines.append(f"    {finding.context}")
    if finding.trail:
        lines.append(f"    through {finding.trail_text}")
    return "\n".join(lines)


def summary_line(findings: list[Finding], errors: list[FileError], checked: int) -> str:
    """`Found 3 findings in 2 files (checked 14 files); 1 file could not be analysed`, as mypy ends."""
    files = len({f.path for f in findings})
    head = (f"Found {_count(len(findings), 'finding')} in {_count(files, 'file')}" if findings
            else "No findings")
    text = f"{head} (checked {_count(checked, 'file')})"
    failed = len({e.path for e in errors})
    if failed:
        text += f"; {_count(failed, 'file')} could not be analysed"
    return text


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def write_text(findings: list[Finding], errors: list[FileError], out: TextIO, err: TextIO,
               statistics: bool = False, *, style: str = "text", quiet: int = 0,
               checked: int | None = None, notes: list | None = None) -> None:
    """Findings on stdout, one-line errors on stderr, then the statistics and a summary line.
    `style`: "text" (text_block), "concise" (concise_line) or "flake8" (text_line, no summary:
    byte for byte what flake8 prints). `quiet` as in flake8: 1 prints each file with findings
    once, 2 prints no findings at all."""
    show = {"text": text_block, "concise": concise_line, "flake8": text_line}[style]
    if quiet >= 2:
        pass
    elif quiet == 1:
        for path in dict.fromkeys(f.path for f in findings):
            out.write(path + "\n")
    else:
        for finding in findings:
            out.write(show(finding) + "\n")
    for error in errors:
        err.write(f"{error}\n")
    if not quiet:
        for note in notes or ():  # on stderr with the errors: stdout stays one finding a line
            err.write(f"{note}\n")
    if statistics and findings and quiet < 2:
        out.write(statistics_text(findings))
    if checked is not None and not quiet and style != "flake8":
        out.write(summary_line(findings, errors, checked) + "\n")


def statistics_text(findings: list[Finding]) -> str:
    """`COUNT  CODE  message` per rule (the first finding's message), counts right-aligned, like
    `flake8 --statistics`."""
    counts: dict[str, int] = {}
    messages: dict[str, str] = {}
    for finding in findings:
        counts[finding.code] = counts.get(finding.code, 0) + 1
        messages.setdefault(finding.code, finding.message)  # the first one's, as flake8 does
    width = len(str(max(counts.values())))
    return "".join(f"{counts[code]:>{width}}  {code}  {messages[code]}\n" for code in sorted(counts))


def write_json(findings: list[Finding], errors: list[FileError], out: TextIO, target: str, mode: str,
               assume: dict | None = None, notes: list | None = None) -> None:
    payload = {
        "tool": {"name": "tcl", "version": __version__, "torch_version": target, "mode": mode,
                 "assume": dict(assume or {})},
        "findings": [f.to_json() for f in findings],
        "errors": [e.to_json() for e in errors],
        "notes": [n.to_json() for n in notes or ()],
    }
    json.dump(payload, out, indent=2)
    out.write("\n")


# -- SARIF 2.1.0 (GitHub code scanning, IDE SARIF viewers) -------------------------------------

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
GB_SITE = "https://meta-pytorch.github.io/compile-graph-break-site"
# Where SARIF viewers link the tool's name. pyproject.toml declares no [project.urls] yet; a
# Homepage/Repository/Documentation URL declared there is used instead.
DEFAULT_INFORMATION_URI = f"{GB_SITE}/"
# The SARIF help's example headings, by rule category.
EXAMPLE_LABELS = {
    "graph-break": ("Breaks:", "Does not break:"),
    "recompile": ("Recompiles:", "Does not recompile:"),
    "crash": ("Raises (compiled, from the second call):", "Runs:"),
}
FINGERPRINT_KEY = "tclLineHash/v1"
SARIF_LEVELS = {"warning": "warning", "error": "error"}


def gb_url(gb_id: str) -> str:
    """https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0059.html for GB0059."""
    return f"{GB_SITE}/gb/{gb_id.lower()}.html"


def write_sarif(findings: list[Finding], errors: list[FileError], out: TextIO, target: str, mode: str,
                root: str | None = None, notes: list | None = None) -> None:
    json.dump(sarif_log(findings, errors, target, mode, root, notes), out, indent=2)
    out.write("\n")


def _code_flow(finding: Finding, location: dict, root: str) -> list[dict]:
    """The call path from the user's line through the library to the hazard, as the steps of
    a SARIF code flow (which code-scanning views step through)."""
    def step(physical: dict, text: str) -> dict:
        return {"location": {"message": {"text": text}, "physicalLocation": physical}}

    def at(path: str, line: int) -> dict:
        uri, base = _artifact_uri(path, root)
        return {"artifactLocation": {"uri": uri, **({"uriBaseId": base} if base else {})}, "region": {"startLine": line}}

    steps = [step(location, "the call in the checked code")]
    steps += [step(at(path, line), f"the call in {function}") for _, path, line, function in finding.trail]
    if finding.library_path:
        steps.append(step(at(finding.library_path, finding.library_line), f"the hazard, in {finding.function}"))
    return steps


def sarif_log(findings: list[Finding], errors: list[FileError], target: str, mode: str, root: str | None = None,
              notes: list | None = None) -> dict:
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
            properties["function"] = finding.function
        if finding.library:
            # The hazard's own place, in an installed package (--follow-imports)
            properties["library"] = finding.library
            lib_uri, lib_base = _artifact_uri(finding.library_path, root)
            lib_line = finding.library_line
            result["relatedLocations"] = [{"id": 0, "message": {"text": f"in {finding.function or 'the library'}"},
                                           "physicalLocation": {
                                               "artifactLocation": {"uri": lib_uri, **({"uriBaseId": lib_base} if lib_base else {})},
                                               "region": {"startLine": lib_line,
                                                          "endLine": lib_line + finding.library_end_line - finding.library_line}}}]
        if finding.trail:
            result["codeFlows"] = [{"threadFlows": [{"locations": _code_flow(finding, location, root)}]}]
        if properties:
            result["properties"] = properties
        results.append(result)
    def notification(level: str, path: str, message: str, region: dict | None) -> dict:
        uri, base = _artifact_uri(path, root)
        physical: dict = {"artifactLocation": {"uri": uri, **({"uriBaseId": base} if base else {})}}
        if region:
            physical["region"] = region
        return {"level": level, "message": {"text": message}, "locations": [{"physicalLocation": physical}]}

    notifications = [notification("error", e.path, e.message, {"startLine": e.line} if e.line else None)
                     for e in errors]
    notifications += [notification("note", n.path, n.message, {"startLine": n.line, "startColumn": n.col})
                      for n in notes or ()]
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
    bad, good = EXAMPLE_LABELS.get(getattr(rule, "category", "graph-break"), EXAMPLE_LABELS["graph-break"])
    if rule.INVALID and rule.VALID:
        markdown += [
            "", bad, "", "```python", rule.INVALID[0].code.strip("\n"), "```",
            "", good, "", "```python", rule.VALID[0].code.strip("\n"), "```",
        ]
    descriptor = {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.message},
        "fullDescription": {"text": rule.rationale or rule.message},
        "help": {"text": help_text, "markdown": "\n".join(markdown)},
        # A crash is an error wherever it is found (the engine's severity); the rest are warnings
        # that a loop, with or try around them makes errors.
        "defaultConfiguration": {"level": "error" if getattr(rule, "category", "") == "crash" else "warning"},
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

def write_github(findings: list[Finding], errors: list[FileError], out: TextIO, notes: list | None = None) -> None:
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
    for note in notes or ():
        properties = f"file={_gh_property(note.path)},line={note.line},col={note.col},title=tcl"
        out.write(f"::notice {properties}::{_gh_data(note.message)}\n")


def _gh_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_property(text: str) -> str:
    return _gh_data(text).replace(":", "%3A").replace(",", "%2C")
