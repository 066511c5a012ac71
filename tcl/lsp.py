"""`tcl lsp`: a language server (pygls) over the one engine `tcl check` and `tcl fix` use.

Diagnostics are `tcl check`'s findings for the open text: same codes, messages (fix hint
included), `[tool.tcl]` settings of the document's nearest pyproject.toml, `# noqa` and
per-file-ignores. Quick fixes are `tcl fix`'s rewrites.

Reach across files: the document is analysed as one file of its project (the directory of
the nearest pyproject.toml, else the workspace folder holding it, else its own directory). The
project's class headers are scanned once, so a module whose nn.Module base lives in another
file is recognised, and helpers in other files that the open code calls are read from disk.
What the editor cannot be shown cheaply is the reverse direction: a helper in this file that
only another file's compiled code calls is reported by `tcl check`, not here. Saving a file
rescans its project and re-checks every open document.

Only pygls (and libcst, through the engine) is imported; torch never is.
"""

from __future__ import annotations

import asyncio
import difflib
import logging
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from . import __version__
from .config import Config, ConfigError, find_pyproject, load
from .engine import Analyzer
from .files import DEFAULT_EXCLUDES, Excluder, package_of
from .findings import ERROR, Finding
from .fixes.apply import apply_fixes, collect_fixes, fix_source, syntax_problem, torch_bound
from .fixes.base import SAFE, UNSAFE, Fix
from .project import ProjectScan, scan
from .report import finding_text, gb_url
from .runner import AnalysisTimeout, _per_file_ignores, analyze_text, collect_files, time_limit

SOURCE = "tcl"
FIX_ALL = f"{types.CodeActionKind.SourceFixAll.value}.tcl"
CHANGE_DELAY_S = 0.3  # typing pauses this long before a changed document is re-analysed
FILE_TIMEOUT_S = 20.0  # wall-clock seconds, as `tcl check --file-timeout`
UNANALYSABLE = "TCL000"  # the code flake8 shows for a file tcl could not analyse

log = logging.getLogger(__name__)


@dataclass
class _Project:
    """The settings and analyzer shared by every document under one root."""

    root: str
    pyproject: Path | None
    stamp: float | None  # pyproject.toml's mtime when it was read
    config: Config | None = None
    analyzer: Analyzer | None = None
    error: str | None = None  # a [tool.tcl] problem, shown on each document instead of findings

    def excluded(self, path: str) -> bool:
        """Whether `tcl check` run in the root would skip this file while walking the tree."""
        relative = os.path.relpath(path, self.root)
        if relative.startswith(os.pardir) or self.config is None:
            return False
        excluder = Excluder(list(self.config.exclude) + list(DEFAULT_EXCLUDES), self.root)
        parts = relative.split(os.sep)
        parents = (os.path.join(self.root, *parts[:depth]) for depth in range(1, len(parts)))
        return any(excluder.excluded(p, True) for p in parents) or excluder.excluded(path, False)

    def ignored(self, path: str) -> tuple[str, ...]:
        # Patterns like "tests/*" are written relative to pyproject.toml, as `tcl check` run there sees paths.
        return tuple(_per_file_ignores(os.path.relpath(path, self.root), self.config)) if self.config else ()


@dataclass
class _Fixes:
    """What `tcl fix` does to one version of a document; per-fix texts are made on demand."""

    version: int | None
    text: str
    findings: dict[tuple[str, int, int], Finding] = field(default_factory=dict)
    fixes: list[Fix] = field(default_factory=list)  # those at or above the safety threshold
    module: object = None
    torch_is_bound: bool = False
    single: dict[int, str | None] = field(default_factory=dict)  # id(fix) -> fixed text
    fixed_all: str | None = None


class TclServer(LanguageServer):
    def __init__(self) -> None:
        # Full sync: pygls splits incremental edits with str.splitlines, which also breaks at
        # form feeds and U+2028 where LSP clients do not, so edits would land on the wrong line.
        super().__init__("tcl", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Full)
        self.unsafe_fixes = False
        self.projects: dict[str, _Project] = {}
        self.fix_cache: dict[str, _Fixes] = {}

    # -- where a document belongs ------------------------------------------------------------
    def project_for(self, path: str) -> _Project:
        pyproject = find_pyproject(Path(path))
        root = str(pyproject.parent) if pyproject else self._folder_of(path)
        stamp = _mtime(pyproject)
        cached = self.projects.get(root)
        if cached is not None and cached.pyproject == pyproject and cached.stamp == stamp:
            return cached
        project = _Project(root, pyproject, stamp)
        try:
            project.config = load(pyproject)
            files, _ = collect_files([root], project.config, root)
            project.analyzer = Analyzer(project.config, scan(files) if len(files) > 1 else ProjectScan())
        except ConfigError as exc:
            project.error = str(exc)
        self.projects[root] = project
        return project

    def _folder_of(self, path: str) -> str:
        folders = [to_fs_path(f.uri) for f in self.workspace.folders.values()] + [self.workspace.root_path]
        return next((f for f in folders if f and _inside(path, f)), os.path.dirname(path))

    def forget(self, path: str) -> None:
        """A file was saved: helpers, base classes and settings read from disk may have changed."""
        for root in [r for r in self.projects if _inside(path, r)]:
            del self.projects[root]
        self.fix_cache.clear()

    # -- diagnostics ---------------------------------------------------------------------------
    def diagnostics(self, uri: str, text: str) -> list[types.Diagnostic]:
        path = _document_path(uri)
        project = self.project_for(path)
        lines = _lines(text)
        codec = self.workspace.position_codec
        if project.error is not None:
            return [_note(codec, lines, 0, f"tcl configuration error: {project.error}", types.DiagnosticSeverity.Error)]
        if project.excluded(path):
            return []
        report = analyze_text(text, path, project.analyzer, FILE_TIMEOUT_S)
        ignored = project.ignored(path)
        found = [f for f in report.findings if f.path == path and not f.code.startswith(ignored)]
        out = [self._diagnostic(lines, f) for f in sorted(found, key=lambda f: f.sort_key())]
        # A stale finding at a moved position would mislead; one line says why there are none.
        out += [_note(codec, lines, max(e.line - 1, 0), f"tcl could not analyse this file: {e.message}",
                      types.DiagnosticSeverity.Information) for e in report.errors[:1]]
        return out

    def _diagnostic(self, lines: list[str], finding: Finding) -> types.Diagnostic:
        codec = self.workspace.position_codec
        return types.Diagnostic(
            range=types.Range(
                _position(codec, lines, finding.line - 1, finding.col - 1),
                _position(codec, lines, finding.end_line - 1, finding.end_col - 1),
            ),
            message=finding_text(finding).removeprefix(f"{finding.code} "),
            severity=types.DiagnosticSeverity.Error if finding.severity == ERROR else types.DiagnosticSeverity.Warning,
            code=finding.code,
            code_description=types.CodeDescription(href=gb_url(finding.gb)) if finding.gb else None,
            source=SOURCE,
        )

    def publish(self, uri: str) -> None:
        document = self.workspace.text_documents.get(uri)
        if document is None:
            return
        try:
            diagnostics = self.diagnostics(uri, document.source)
        except Exception:  # a tcl bug: keep serving the other documents
            log.exception("tcl: analysing %s failed", uri)
            diagnostics = []
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=document.version)
        )

    # -- fixes ---------------------------------------------------------------------------------
    def fixes_for(self, uri: str) -> _Fixes | None:
        document = self.workspace.get_text_document(uri)
        text = document.source
        cached = self.fix_cache.get(uri)
        if cached is not None and cached.version == document.version and cached.text == text:
            return cached
        path = _document_path(uri)
        project = self.project_for(path)
        if project.analyzer is None or project.excluded(path):
            return None
        result = _Fixes(document.version, text)
        threshold = UNSAFE if self.unsafe_fixes else SAFE
        with time_limit(FILE_TIMEOUT_S):
            report = project.analyzer.check_source_with_nodes(text, path, _package(path))
            if report.module is None or report.report.errors:
                return None
            ignored = project.ignored(path)
            pairs = [(f, c) for f, c in report.pairs if not any(f.code.startswith(i) for i in ignored)]
            result.findings = {(f.code, f.line, f.col): f for f, _ in pairs}
            fixes = collect_fixes(report, pairs, project.analyzer.version, [])
        result.fixes = [fix for fix in fixes if fix.safety >= threshold]
        result.module, result.torch_is_bound = report.module, torch_bound(report)
        self.fix_cache[uri] = result
        return result

    def single_fix_text(self, fixes: _Fixes, fix: Fix) -> str | None:
        """The text `tcl fix --apply` writes when this is the only fix applied (None: no change)."""
        if id(fix) not in fixes.single:
            new = apply_fixes(fixes.module, [fix], fixes.torch_is_bound)
            fixes.single[id(fix)] = new if new != fixes.text and syntax_problem(new, "<lsp>") is None else None
        return fixes.single[id(fix)]

    def fix_all_text(self, uri: str, fixes: _Fixes) -> str | None:
        if fixes.fixed_all is None:
            path = _document_path(uri)
            project = self.project_for(path)
            with time_limit(FILE_TIMEOUT_S):
                result = fix_source(fixes.text, path, project.analyzer, unsafe=self.unsafe_fixes,
                                    package=_package(path), ignored=project.ignored(path))
            fixes.fixed_all = result.fixed if not result.errors else fixes.text
        return fixes.fixed_all if fixes.fixed_all != fixes.text else None

    def edit(self, uri: str, version: int | None, old: str, new: str) -> types.WorkspaceEdit:
        edits = _text_edits(self.workspace.position_codec, old, new)
        capabilities = self.client_capabilities.workspace
        if capabilities and capabilities.workspace_edit and capabilities.workspace_edit.document_changes:
            # Versioned: a client whose buffer moved on since rejects the edit instead of garbling it.
            document = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version)
            return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(text_document=document, edits=edits)])
        return types.WorkspaceEdit(changes={uri: edits})

    def code_actions(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        only = params.context.only
        fixes = self.fixes_for(uri)
        if fixes is None or not fixes.fixes:
            return []
        actions = []
        lines = _lines(fixes.text)
        codec = self.workspace.position_codec
        if _wanted(types.CodeActionKind.QuickFix.value, only):
            for fix in fixes.fixes:
                finding = fixes.findings.get((fix.code, fix.line, fix.col))
                if finding is None or not _overlaps(codec, lines, finding, params.range):
                    continue
                new = self.single_fix_text(fixes, fix)
                if new is None:
                    continue
                unsafe = " (unsafe)" if fix.safety < SAFE else ""
                actions.append(types.CodeAction(
                    title=f"tcl: {fix.title} ({fix.code}){unsafe}",
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=[d for d in params.context.diagnostics if _same(d, self._diagnostic(lines, finding))] or None,
                    edit=self.edit(uri, fixes.version, fixes.text, new),
                    is_preferred=fix.safety >= SAFE,
                ))
        if _wanted(FIX_ALL, only):
            new = self.fix_all_text(uri, fixes)
            if new is not None:
                what = "findings (unsafe fixes included)" if self.unsafe_fixes else "safe findings"
                actions.append(types.CodeAction(
                    title=f"tcl: fix all {what} in file", kind=FIX_ALL,
                    edit=self.edit(uri, fixes.version, fixes.text, new),
                ))
        return actions


def create_server() -> TclServer:
    server = TclServer()

    @server.feature(types.INITIALIZE)
    def initialize(ls: TclServer, params: types.InitializeParams) -> None:
        options = params.initialization_options
        ls.unsafe_fixes = bool(isinstance(options, dict) and options.get("unsafeFixes"))

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: TclServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    async def did_change(ls: TclServer, params: types.DidChangeTextDocumentParams) -> None:
        uri, version = params.text_document.uri, params.text_document.version
        await asyncio.sleep(CHANGE_DELAY_S)
        document = ls.workspace.text_documents.get(uri)
        if document is not None and document.version == version:  # else a later change supersedes this one
            ls.publish(uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    def did_save(ls: TclServer, params: types.DidSaveTextDocumentParams) -> None:
        ls.forget(_document_path(params.text_document.uri))
        for uri in list(ls.workspace.text_documents):
            ls.publish(uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: TclServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.fix_cache.pop(params.text_document.uri, None)
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[]))

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL]),
    )
    def code_action(ls: TclServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        try:
            return ls.code_actions(params)
        except (Exception, AnalysisTimeout):  # no quick fix is better than a failed request
            log.exception("tcl: code actions for %s failed", params.text_document.uri)
            return []

    return server


def serve() -> int:
    stdout = sys.stdout.buffer
    sys.stdout = sys.stderr  # the protocol owns stdout: a stray print must not corrupt it
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    create_server().start_io(sys.stdin.buffer, stdout)
    return 0


# -- positions: tcl counts 1-based lines and code points; LSP 0-based lines and client units ------

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def _lines(text: str) -> list[str]:
    """The lines as LSP counts them: only \\n, \\r\\n and \\r end a line (str.splitlines also
    breaks at form feeds and U+2028, Python's tokenizer and the client do not)."""
    return _LINE.findall(text)


def _position(codec, lines: list[str], line: int, column: int) -> types.Position:
    if line >= len(lines):
        return _end(codec, lines)
    return types.Position(line=line, character=codec.client_num_units(lines[line].rstrip("\r\n")[:column]))


def _end(codec, lines: list[str]) -> types.Position:
    if not lines:
        return types.Position(line=0, character=0)
    if lines[-1].endswith(("\n", "\r")):
        return types.Position(line=len(lines), character=0)
    return types.Position(line=len(lines) - 1, character=codec.client_num_units(lines[-1]))


def _text_edits(codec, old: str, new: str) -> list[types.TextEdit]:
    """Line-granular edits turning `old` into `new` (the cursor and folds elsewhere stay put)."""
    a, b = _lines(old), _lines(new)
    edits = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            start = types.Position(line=i1, character=0) if i1 < len(a) else _end(codec, a)
            end = types.Position(line=i2, character=0) if i2 < len(a) else _end(codec, a)
            edits.append(types.TextEdit(range=types.Range(start, end), new_text="".join(b[j1:j2])))
    return edits


def _overlaps(codec, lines: list[str], finding: Finding, wanted: types.Range) -> bool:
    start = _position(codec, lines, finding.line - 1, finding.col - 1)
    end = _position(codec, lines, finding.end_line - 1, finding.end_col - 1)
    key = lambda p: (p.line, p.character)  # noqa: E731
    return key(start) <= key(wanted.end) and key(wanted.start) <= key(end)


def _same(a: types.Diagnostic, b: types.Diagnostic) -> bool:
    return a.source == b.source and a.code == b.code and a.range == b.range


def _wanted(kind: str, only: list[str] | None) -> bool:
    """CodeActionContext.only is hierarchical: "source" asks for "source.fixAll.tcl" too."""
    return only is None or any(kind == k or kind.startswith(f"{k}.") for k in only)


def _note(codec, lines: list[str], line: int, message: str, severity: types.DiagnosticSeverity) -> types.Diagnostic:
    """A diagnostic about the whole file, on the line it names."""
    line = min(line, max(len(lines) - 1, 0))
    return types.Diagnostic(
        range=types.Range(types.Position(line=line, character=0), _position(codec, lines, line, sys.maxsize)),
        message=message, severity=severity, code=UNANALYSABLE, source=SOURCE,
    )


def _inside(path: str, directory: str) -> bool:
    return (path + os.sep).startswith(directory.rstrip(os.sep) + os.sep)


def _document_path(uri: str) -> str:
    """The file's absolute path; for an unsaved buffer (untitled:...), a name in the cwd."""
    path = to_fs_path(uri) if uri.startswith("file:") else None
    return os.path.abspath(path or re.sub(r"[^\w.-]", "_", uri.rpartition("/")[2] or "untitled"))


def _package(path: str) -> str:
    return package_of(path) if os.path.exists(path) else ""


def _mtime(path: Path | None) -> float | None:
    try:
        return path.stat().st_mtime if path is not None else None
    except OSError:
        return None
