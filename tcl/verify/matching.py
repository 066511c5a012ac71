"""Matching tcl's findings to what the compiler did: the runtime breaks, frame skips, executed lines
and recompiles the children reported.  Each finding gets a status:

* ``confirmed``      a runtime break at the finding's line (rules with ``runtime_line_offset``,
                     the lazily formatted f-string, break at the next code line that uses it);
                     for recompile rules (category "recompile"), a recompile whose failed guard
                     points at the line or tests a name used on it, in the same function.
* ``not-confirmed``  its line ran in an example and nothing broke (or recompiled) there.
* ``shadowed``       its line ran, nothing broke there, and Dynamo logged that it gave up on
                     that function's frame ("Skipping the function and falling back to eager",
                     "frame skipped: ...") at a break earlier in it: a break inside a for/while
                     loop, a ``try`` or a ``with`` it cannot re-enter, also one in a helper called
                     from there.  The rest of the frame ran eagerly, so the line never reached the
                     compiler: neither confirmed nor refuted.  Recompile findings are shadowed by
                     any skip of the frame that holds them (an eager frame sets up no guards).
* ``not-reached``    its line never ran (eager line coverage): the examples did not exercise it.

A runtime break in a checked file that no finding matches is ``missed``; breaks in other files are
listed with ``in_checked_file: false``.
"""

from __future__ import annotations

import ast
import re
import tokenize
from dataclasses import dataclass, field

from ..safe_files import read_regular
from .common import STATE_PHASE, _display, _norm
from .examples import ExampleRun
from .explain import explain


# --------------------------------------------------------------------------- file shapes


_LOOPS_AND_TRIES = (ast.For, ast.AsyncFor, ast.While, ast.Try) + ((ast.TryStar,) if hasattr(ast, "TryStar") else ())


def _resumable_names() -> frozenset:
    from ..frame_skips import RESUMABLE_CONTEXTS  # libcst, which it needs, is tcl's one dependency

    return RESUMABLE_CONTEXTS | {name.rsplit(".", 1)[-1] for name in RESUMABLE_CONTEXTS}


class FileShape:
    """Functions, amplifying statements (loop / try / non-resumable with) and code lines of a file."""

    def __init__(self, path: str) -> None:
        self.functions: list[tuple[int, int, str]] = []
        self.amplifiers: list[tuple[int, int, str]] = []  # (start, end, kind)
        self.code_lines: list[int] = []
        self.lines: list[str] = []
        try:
            data = read_regular(path)
            tree = ast.parse(data, path)
        except (OSError, SyntaxError, ValueError):
            return
        self.lines = data.decode("utf-8", "replace").splitlines()
        resumable = _resumable_names()
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions.append((node.lineno, node.end_lineno or node.lineno, node.name))
            elif isinstance(node, _LOOPS_AND_TRIES):
                kind = "try block" if "Try" in type(node).__name__ else (
                    "while loop" if isinstance(node, ast.While) else "for loop")
                self.amplifiers.append((node.lineno, node.end_lineno or node.lineno, kind))
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                if not all(isinstance(item.context_expr, ast.Call)
                           and _dotted(item.context_expr.func) in resumable for item in node.items):
                    self.amplifiers.append((node.lineno, node.end_lineno or node.lineno, "with block"))
        try:
            import io

            lines = set()
            for tok in tokenize.tokenize(io.BytesIO(data).readline):
                if tok.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                                    tokenize.DEDENT, tokenize.ENCODING, tokenize.ENDMARKER):
                    lines.update(range(tok.start[0], tok.end[0] + 1))
            self.code_lines = sorted(lines)
        except (tokenize.TokenError, SyntaxError):
            self.code_lines = []

    def function_at(self, line: int):
        inner = None
        for start, end, name in self.functions:
            if start <= line <= end and (inner is None or start >= inner[0]):
                inner = (start, end, name)
        return inner

    def amplifier_at(self, line: int, function) -> tuple[int, int, str] | None:
        """The innermost loop/try/with of `function` (not of a nested def) around `line`."""
        inner = None
        for start, end, kind in self.amplifiers:
            if start <= line <= end and function[0] < start <= function[1]:
                if self.function_at(start) == function and (inner is None or start >= inner[0]):
                    inner = (start, end, kind)
        return inner

    def def_line(self, line: int) -> int:
        """A decorator's line -> the `def` line it decorates (code objects and tcl's findings
        on decorators start there; the ast range of a function starts at `def`)."""
        while self.line_text(line).lstrip().startswith("@") and line < len(self.lines):
            line += 1
        return line

    def line_text(self, line: int) -> str:
        return self.lines[line - 1] if 0 < line <= len(self.lines) else ""

    def next_code_line(self, line: int) -> int:
        return next((n for n in self.code_lines if n >= line), line)


def _dotted(node) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.insert(0, node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.insert(0, node.id)
        return ".".join(parts)
    return ""


@dataclass
class Break:
    path: str  # normalized
    line: int
    gb: str | None
    reason: str
    examples: list[str] = field(default_factory=list)
    matched_by: list[str] = field(default_factory=list)


@dataclass
class Skip:
    """A frame Dynamo gave up on: `function` (a FileShape function) of `path` ran eagerly from
    `frame_line` on, because of the break at (break_path, break_line)."""

    path: str
    function: tuple
    frame_line: int
    kind: str  # "for loop", "try block", ... or "frame" when the reason is not structural
    break_path: str
    break_line: int
    gb: str | None
    named_start: int | None = None  # the skipped code's first line when Dynamo names it
    frame_start: int = 0  # first line of the skipped frame (a resume function starts after a break)


def _skips(run_skips: list[dict], shape) -> list[Skip]:
    """Which user function each frame-skip record took down.

    Dynamo names the frame for breaks in loops ("frame skipped: forward (m.py line 62)"); for the
    rest (try, with) it is the innermost user frame of the traceback that sits inside a loop, try
    or non-resumable with of its function, else the outermost user frame.
    """
    out = []
    for item in run_skips:
        stack = [(_norm(p), n) for p, n in item.get("stack") or []]
        if not stack:
            stack = [(_norm(item["path"]), item["line"])]
        chosen, named = None, None
        if item.get("skipped_path") and item.get("skipped_line"):
            path = _norm(item["skipped_path"])
            function = shape(path).function_at(item["skipped_line"])
            if function is not None:
                lines = [n for p, n in stack if p == path and shape(path).function_at(n) == function]
                frame_line = lines[-1] if lines else item["skipped_line"]
                amplifier = shape(path).amplifier_at(frame_line, function)
                chosen = (path, function, frame_line, amplifier[2] if amplifier else "for loop")
                named = item["skipped_line"]
        if chosen is None:
            for path, line in reversed(stack):
                function = shape(path).function_at(line)
                amplifier = shape(path).amplifier_at(line, function) if function else None
                if amplifier is not None:
                    chosen = (path, function, line, amplifier[2])
                    break
        if chosen is None:
            path, line = stack[0]
            function = shape(path).function_at(line)
            if function is not None:
                chosen = (path, function, line, "frame")
        if chosen is not None:
            out.append(Skip(*chosen, _norm(item["path"]), item["line"], item.get("gb"), named))
    return out


_GUARD_NAMES = re.compile(r"[A-Za-z_][\w.]*")
_REFERENCES = re.compile(r"([^\s#'\"]+\.py):(\d+)")


def _recompile_matches(finding_path: str, line: int, rec: dict, shape, persistent: bool = False,
                       end_line: int | None = None, state: bool = False) -> bool:
    """Whether a recompile is the one a recompile-hazard finding predicts.

    The compile trace saw a line of the finding (line..end_line) fix the size whose guard then
    failed, or its guard's source reference names the finding's line, or: it recompiled the
    function that holds the finding, and a name its guard tests (self.step, n) is on the
    finding's line. For a size the finding says Python specialises on (`persistent` rules,
    TCL505), when the trace names no specialising line: a size guard of that function that
    fails on a change after the first (automatic dynamic shapes made the size symbolic on the
    first, so a later size recompile is the specialisation).
    """
    reason = rec.get("reason") or ""
    last = max(end_line or line, line)
    specs = rec.get("specialised_by") or []
    if any(_norm(s["path"]) == finding_path and line <= s["line"] <= last for s in specs):
        return True
    for fragment, number in _REFERENCES.findall(reason):
        if int(number) == line and finding_path.endswith(fragment.lstrip(".")):
            return True
    if state and rec.get("phase") == STATE_PHASE:
        # A counter's finding (TCL501) predicts that its function recompiles on every call,
        # identical inputs included; the guard Dynamo reports may name another value the same
        # call moves (`self.sum`, read a line above the meter's `self.count += n`).
        file = shape(finding_path)
        function = file.function_at(file.def_line(line))
        if function is not None and any(
                finding_path.endswith(fragment.lstrip(".")) and file.function_at(file.def_line(int(number))) == function
                for fragment, number in _REFERENCES.findall(reason)):
            return True
    if not rec.get("path") or _norm(rec["path"]) != finding_path or not rec.get("line"):
        return False
    file = shape(finding_path)
    function = file.function_at(file.def_line(line))
    if function is None or file.function_at(file.def_line(rec["line"])) != function:
        return False
    if file.def_line(line) != line or line == function[0]:
        # A finding on the function's header (`@torch.compile(dynamic=False)`): the hazard is
        # the frame's static shapes, so any size guard of that frame is the predicted one.
        return "size mismatch" in reason or "stride mismatch" in reason
    if persistent and not specs and not rec.get("expected") and ("size mismatch" in reason or rec["line"] == line):
        return True
    if state and rec.get("phase") == STATE_PHASE:
        return True  # the frame holding the counter recompiled on every call
    guard = re.sub(r"'[^']*'|\"[^\"]*\"", "", reason.split(": ", 1)[-1].split(" # ", 1)[0])
    text = file.line_text(line)
    names = {n for n in _GUARD_NAMES.findall(guard) if n not in ("L", "G", "self", "tensor", "size",
                                                                "mismatch", "at", "index", "expected",
                                                                "actual", "and", "or", "not", "True",
                                                                "False", "None", "len", "type")}
    return any(re.search(rf"(?<![\w.]){re.escape(n)}(?![\w])", text) for n in names)


def _shadow_info(skip: Skip, by_line) -> dict:
    brk = next(iter(by_line.get((skip.break_path, skip.break_line), [])), None)
    return {"path": _display(skip.break_path), "line": skip.break_line, "gb": skip.gb,
            "reason": brk.reason if brk else None, "frame_line": skip.frame_line,
            "frame_start": skip.frame_start, "function": skip.function[2], "function_line": skip.function[0],
            "inside": skip.kind}


def analyse(findings, runs: list[ExampleRun], checked: set[str]) -> dict:
    """Statuses for findings, missed breaks, recompiles."""
    from ..rules import BY_CODE

    shapes: dict[str, FileShape] = {}

    def shape(path: str) -> FileShape:
        if path not in shapes:
            shapes[path] = FileShape(path)
        return shapes[path]

    breaks: dict[tuple, Break] = {}
    executed: dict[str, set[int]] = {}
    skips: list[Skip] = []
    recompiles = []
    crashes = []  # compiled calls that raised where the uncompiled target runs (recompiles.compiled_crash)
    for run in runs:
        for item in run.result.get("breaks") or []:
            key = (_norm(item["path"]), item["line"], item.get("gb"))
            brk = breaks.setdefault(key, Break(key[0], key[1], key[2], item.get("reason", "")))
            if run.label not in brk.examples:
                brk.examples.append(run.label)
        if run.status != "ok":
            # Its compiled run failed part-way: a line that ran eagerly and did not break proves
            # nothing, so its coverage does not count (its breaks, logged before the failure, do).
            continue
        for path, lines in (run.result.get("executed") or {}).items():
            executed.setdefault(_norm(path), set()).update(lines)
        skips.extend(_skips(run.result.get("frame_skips") or [], shape))
        notes = run.result.get("exploration") or {}
        for crash in notes.get("crashes") or []:
            crashes.append(dict(crash, path=_norm(crash["path"]), example=run.label, findings=[]))
        for item in run.result.get("recompiles") or []:
            recompiles.append(dict(item, example=run.label, findings=[], dynamic=notes.get("dynamic"),
                                   recompile_limit=notes.get("recompile_limit")))
    by_line: dict[tuple[str, int], list[Break]] = {}
    for brk in breaks.values():
        by_line.setdefault((brk.path, brk.line), []).append(brk)
    for skip in skips:
        # Without a name from Dynamo, the skipped frame is the function or, after an earlier break
        # in it, the resume function that starts at that break.
        earlier = [line for (path, line) in by_line if path == skip.path and line < skip.frame_line
                   and shape(path).function_at(line) == skip.function]
        skip.frame_start = skip.named_start or max(earlier, default=skip.function[0])

    out_findings = []
    for finding in findings:
        path = _norm(finding.path)
        rule = BY_CODE.get(finding.code)
        offset = getattr(rule, "runtime_line_offset", 0) if rule else 0
        is_recompile = getattr(rule, "category", "") == "recompile"
        if offset:
            lines = [shape(path).next_code_line(finding.end_line + offset)]
        else:
            lines = list(range(finding.line, min(finding.end_line, finding.line + 10) + 1))
        entry = {
            "code": finding.code, "path": _display(finding.path), "line": finding.line,
            "col": finding.col, "status": None, "gb": None, "runtime_reason": None,
            "static_gb": finding.gb, "runtime_line": lines[0] if offset else finding.line,
            "kind": "recompile" if is_recompile else "graph-break", "message": finding.full_message,
        }
        ran = any(line in executed.get(path, ()) for line in range(finding.line, finding.end_line + 1))
        if getattr(rule, "category", "") == "crash":
            entry["kind"] = "crash"
            hits = [c for c in crashes if c["path"] == path and finding.line <= c["line"] <= finding.end_line]
            for crash in hits:
                crash["findings"].append(f"{finding.code}@{finding.line}")
            if hits:
                entry.update(status="confirmed", runtime_reason=hits[0]["error"],
                             examples=sorted({c["example"] for c in hits}))
            else:
                entry["status"] = "not-confirmed" if ran else "not-reached"
            out_findings.append(entry)
            continue
        if is_recompile:
            persistent = getattr(rule, "persistent", False)
            hits = [r for r in recompiles
                    if _recompile_matches(path, finding.line, r, shape, persistent, finding.end_line,
                                          state=getattr(rule, "predicts_state", False))]
            for rec in hits:
                rec["findings"].append(f"{finding.code}@{finding.line}")
            function = shape(path).function_at(shape(path).def_line(finding.line))
            if function is not None and shape(path).def_line(finding.line) != finding.line:
                # On a decorator: the hazard "ran" when the function's body did.
                ran = any(function[0] <= n <= function[1] for n in executed.get(path, ()))
            # A recompile hazard anywhere in a frame that runs eagerly never sets up a guard.
            skip = next((k for k in skips if k.path == path and k.function == function
                         and k.frame_start <= shape(path).def_line(finding.line)), None)
            if hits:
                best = next((r for r in hits if not r.get("expected")), hits[0])
                entry.update(status="confirmed", runtime_reason=best["reason"],
                             recompile={"trigger": best["trigger"], "example": best["example"]},
                             examples=sorted({r["example"] for r in hits}))
            elif ran and skip is not None:
                entry.update(status="shadowed", shadowed_by=_shadow_info(skip, by_line))
            else:
                entry["status"] = "not-confirmed" if ran else "not-reached"
            out_findings.append(entry)
            continue
        hits = [b for line in lines for b in by_line.get((path, line), [])]
        if hits:
            expected = set(rule.gb_ids()) if rule else set()
            best = next((b for b in hits if b.gb in expected), hits[0])
            for b in hits:
                b.matched_by.append(f"{finding.code}@{finding.line}")
            entry.update(status="confirmed", gb=best.gb, runtime_reason=best.reason,
                         runtime_line=best.line, examples=best.examples)
        elif ran:
            function = shape(path).function_at(finding.line)
            skip = next((k for k in skips if k.path == path and k.function == function
                         and k.frame_line < finding.line), None)
            if skip is not None:
                entry.update(status="shadowed", shadowed_by=_shadow_info(skip, by_line))
            else:
                entry["status"] = "not-confirmed"
        else:
            entry["status"] = "not-reached"
        out_findings.append(entry)

    runtime = []
    for brk in sorted(breaks.values(), key=lambda b: (b.path, b.line, b.gb or "")):
        runtime.append({
            "path": _display(brk.path), "line": brk.line, "gb": brk.gb, "reason": brk.reason,
            "matched": bool(brk.matched_by), "in_checked_file": brk.path in checked,
            "findings": brk.matched_by, "examples": brk.examples,
        })
    persistent = explain(recompiles, findings, shape,
                         lambda code: getattr(BY_CODE.get(code), "category", "") == "recompile")
    for group in persistent:
        group["in_checked_file"] = bool(group["path"]) and _norm(group["path"]) in checked
    for rec in recompiles:
        if rec.get("path"):
            rec["path"] = _display(rec["path"])
        for spec in rec.get("specialised_by") or []:
            spec["path"] = _display(spec["path"])
    for crash in crashes:
        crash["path"] = _display(crash["path"])
    return {"findings": out_findings, "runtime_breaks": runtime, "recompiles": recompiles,
            "persistent_recompiles": persistent, "crashes": crashes}
