"""`tcl lsp`: a language server (pygls) over the one engine `tcl check` and `tcl fix` use.

Diagnostics are `tcl check`'s findings for the open text: same codes, messages (fix hint
included), `[tool.tcl]` settings of the document's nearest pyproject.toml, `# noqa` and
per-file-ignores. Quick fixes are `tcl fix`'s rewrites.

Reach across files: the document is analysed as one file of its project (tcl.project_root:
the nearest directory above it with a pyproject.toml, setup.cfg or .git; else its own
directory), with the same facts
as `tcl check` run on the whole project: its nn.Module classes, helpers in other files that
the open code calls (read from disk), and the reverse direction: helpers in this file that
another file's compiled code calls are analysed as that code calls them (the calling files are
analysed once, when the project is first needed). Saving a file rescans its project and
re-checks every open document.

Fast re-checks: each document version is analysed once, on a worker thread (tcl.lsp_worker),
and diagnostics and code actions share that analysis. The project's Analyzer carries an
incremental.EditMemo, so a re-check after an edit re-parses and re-walks only what changed.
Code actions are computed for the requested range only, and their edits when the client
resolves them (codeAction/resolve), if it can. Work is bounded: a document over
MAX_DOCUMENT_LINES or MAX_DOCUMENT_BYTES gets one note instead of an analysis, an analysis
over BUDGET_S of wall time is tried once more (what it read is kept) and then stopped with a note, and a newer edit interrupts an analysis
of an older version. Malformed frames are skipped (tcl.lsp_io).

Only pygls (and libcst, through the engine) is imported; torch never is.
"""

from __future__ import annotations

import asyncio
import difflib
import gc
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
from .engine import Analyzer, NodeReport, parse_source
from .files import DEFAULT_EXCLUDES, Excluder, package_of
from .findings import ERROR, Finding
from .fixing.apply import apply_fixes, collect_fixes, fix_source, torch_bound
from .fixes.base import SAFE, UNSAFE, Fix
from .incremental import EditMemo
from .incremental_parse import StatementMemo
from .lsp_io import serve_stdio
from .lsp_worker import AnalysisWorker, OverBudget, Superseded
from .project import ProjectScan, scan
from .project_root import forget_roots, note_reach_into, project_root
from .report import finding_text, gb_url
from .runner import _per_file_ignores, collect_files

SOURCE = "tcl"
FIX_ALL = f"{types.CodeActionKind.SourceFixAll.value}.tcl"
CHANGE_DELAY_S = 0.3  # typing pauses this long before a changed document is re-analysed
BUDGET_S = 10.0  # wall-clock seconds one analysis (or one fix) of a document may take
# A stopped analysis keeps the installed files it read and parsed: the first analysis of a
# script that compiles `generate` with follow-imports (about 17 s cold) finishes on its second
# try. Without it the note stayed until the next edit (session 32).
OVER_BUDGET_RETRIES = 1
MAX_DOCUMENT_LINES = 20_000  # larger documents get one note: `tcl check` them instead
MAX_DOCUMENT_BYTES = 2 * 2**20
GC_EVERY = 200  # analyses between full garbage collections (see TclServer._after_analysis)
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
    files: list[str] = field(default_factory=list)  # what `tcl check ROOT` checks
    noted: set[str] = field(default_factory=set)  # files whose reach into others is known
    reached: set[str] = field(default_factory=set)  # files whose callers have been noted

    def excluded(self, path: str) -> bool:
        """Whether `tcl check` run in the root would skip this file while walking the tree."""
        relative = os.path.relpath(path, self.root)
        if relative.startswith(os.pardir) or self.config is None:
            return False
        excluder = Excluder(list(self.config.exclude) + list(DEFAULT_EXCLUDES), self.root, self.config.respect_gitignore)
        parts = relative.split(os.sep)
        parents = (os.path.join(self.root, *parts[:depth]) for depth in range(1, len(parts)))
        return any(excluder.excluded(p, True) for p in parents) or excluder.excluded(path, False)

    def ignored(self, path: str) -> tuple[str, ...]:
        # Patterns like "tests/*" are written relative to pyproject.toml, as `tcl check` run there sees paths.
        base = str(self.pyproject.parent) if self.pyproject is not None else self.root
        return tuple(_per_file_ignores(os.path.relpath(path, base), self.config)) if self.config else ()

    def note_reach_into(self, path: str) -> None:
        """Once per file: helpers there that other files' compiled code reaches (project_root)."""
        if path not in self.reached:  # marked after: an interrupted pass resumes next time
            note_reach_into(self.analyzer, path, self.files, self.noted)
            self.reached.add(path)


@dataclass
class _Analysed:
    """One version of a document, analysed once: diagnostics now, fixes when asked."""

    version: int | None
    text: str
    path: str
    project: _Project
    diagnostics: list[types.Diagnostic]
    lines: list[str]
    nodes: NodeReport | None = None  # None: nothing to fix (not analysed, or not analysable)
    pairs: list = field(default_factory=list)  # (finding, candidate) after per-file ignores
    fixes: dict[tuple, Fix | None] = field(default_factory=dict)  # finding key -> its fix
    edits: dict[tuple, str | None] = field(default_factory=dict)  # finding key -> fixed text
    any_fix: bool | None = None
    fixed_all: str | None = None


def _key(finding: Finding) -> tuple[str, int, int]:
    return (finding.code, finding.line, finding.col)


class TclServer(LanguageServer):
    def __init__(self) -> None:
        # Full sync: pygls splits incremental edits with str.splitlines, which also breaks at
        # form feeds and U+2028 where LSP clients do not, so edits would land on the wrong line.
        super().__init__("tcl", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Full)
        self.unsafe_fixes = False
        self.projects: dict[str, _Project] = {}
        self.analysed: dict[str, _Analysed] = {}  # uri -> its latest analysed version
        self.pending: dict[str, tuple[int | None, str, asyncio.Future]] = {}  # uri -> analysis in flight
        self.worker = AnalysisWorker(BUDGET_S)
        self.parses = StatementMemo()  # parsed statements by text: valid across projects and saves
        self.analyses = 0

    def start_io(self, stdin=None, stdout=None) -> None:
        serve_stdio(self, stdin or sys.stdin.buffer, stdout or sys.stdout.buffer)

    def shutdown(self) -> None:
        self.worker.shutdown()
        super().shutdown()

    # -- where a document belongs (runs on the analysis thread) -------------------------------
    def project_for(self, path: str) -> _Project:
        pyproject = find_pyproject(Path(path))
        root = project_root(path) or os.path.dirname(path)
        stamp = _mtime(pyproject)
        cached = self.projects.get(root)
        if cached is not None and cached.pyproject == pyproject and cached.stamp == stamp:
            return cached
        project = _Project(root, pyproject, stamp)
        try:
            project.config = load(pyproject)
            project.files, _ = collect_files([root], project.config, root)
            project.analyzer = Analyzer(project.config, scan(project.files) if len(project.files) > 1 else ProjectScan())
            project.analyzer.memo = EditMemo(statements=self.parses)
        except ConfigError as exc:
            project.error = str(exc)
        self.projects[root] = project
        return project

    def forget(self, path: str) -> None:
        """A file was saved: helpers, base classes and settings read from disk may have changed."""
        forget_roots()
        for root in [r for r in list(self.projects) if _inside(path, r)]:  # list(): one step, under the GIL
            del self.projects[root]
        self.analysed.clear()

    # -- analysis --------------------------------------------------------------------------------
    async def analysis(self, uri: str) -> _Analysed | None:
        """The analysis of the document's current text (None: the document is not open, or its
        analysis was interrupted by a newer edit)."""
        document = self.workspace.text_documents.get(uri)
        if document is None:
            return None
        version, text = document.version, document.source
        done = self.analysed.get(uri)
        if done is not None and done.version == version and done.text == text:
            return done
        pending = self.pending.get(uri)
        if pending is None or pending[:2] != (version, text):
            self.worker.supersede(uri)  # an analysis of an older text is wasted work now
            future = asyncio.ensure_future(self._run_analysis(uri, version, text))
            pending = self.pending[uri] = (version, text, future)
        try:
            return await asyncio.shield(pending[2])
        except Superseded:
            return None

    async def _run_analysis(self, uri: str, version: int | None, text: str) -> _Analysed:
        try:
            for attempt in range(OVER_BUDGET_RETRIES + 1):
                try:
                    done = await self.worker.run(uri, lambda: self.analyse(uri, version, text))
                    break
                except OverBudget:
                    if attempt == OVER_BUDGET_RETRIES:
                        done = self._note_only(uri, version, text, f"tcl stopped analysing this file after "
                                               f"{BUDGET_S:g} s (the editor's limit); `tcl check` analyses it "
                                               "without one")
            self.analysed[uri] = done
            self._after_analysis()
            return done
        finally:
            if self.pending.get(uri, (None, None, None))[2] is asyncio.current_task():
                del self.pending[uri]

    def _after_analysis(self) -> None:
        # A full collection walks every object the memo keeps (hundreds of ms for a large
        # file); frozen objects are skipped, so collections see only what the last edits
        # made. Every GC_EVERY analyses everything is collected once, then frozen again.
        self.analyses += 1
        if self.analyses % GC_EVERY == 0:
            gc.unfreeze()
            gc.collect()
        gc.freeze()

    def analyse(self, uri: str, version: int | None, text: str) -> _Analysed:
        path = _document_path(uri)
        lines = _lines(text)
        project = self.project_for(path)
        done = _Analysed(version, text, path, project, [], lines)
        codec = self.workspace.position_codec
        if project.error is not None:
            done.diagnostics = [_note(codec, lines, 0, f"tcl configuration error: {project.error}",
                                      types.DiagnosticSeverity.Error)]
            return done
        if project.excluded(path):
            return done
        too_large = _too_large(text, lines)
        if too_large is not None:
            done.diagnostics = [_note(codec, lines, 0, too_large, types.DiagnosticSeverity.Information)]
            return done
        analyzer = project.analyzer
        project.note_reach_into(path)
        nodes = analyzer.check_source_with_nodes(text, path, _package(path))
        ignored = project.ignored(path)
        done.pairs = [(f, c) for f, c in nodes.pairs if not f.code.startswith(ignored)]
        report = nodes.report
        if nodes.module is not None and not report.errors:
            done.nodes = nodes
        found = [f for f, _ in done.pairs]
        done.diagnostics = [self._diagnostic(lines, f) for f in sorted(found, key=lambda f: f.sort_key())]
        # A stale finding at a moved position would mislead; one line says why there are none.
        done.diagnostics += [_note(codec, lines, max(e.line - 1, 0), f"tcl could not analyse this file: {e.message}",
                                   types.DiagnosticSeverity.Information) for e in report.errors[:1]]
        return done

    def _note_only(self, uri: str, version: int | None, text: str, message: str) -> _Analysed:
        lines = _lines(text)
        note = _note(self.workspace.position_codec, lines, 0, message, types.DiagnosticSeverity.Information)
        return _Analysed(version, text, _document_path(uri), None, [note], lines)  # type: ignore[arg-type]

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

    async def publish(self, uri: str) -> None:
        try:
            done = await self.analysis(uri)
        except Exception:  # a tcl bug: keep serving the other documents
            log.exception("tcl: analysing %s failed", uri)
            document = self.workspace.text_documents.get(uri)
            done = None
            if document is not None:
                self.text_document_publish_diagnostics(
                    types.PublishDiagnosticsParams(uri=uri, diagnostics=[], version=document.version))
        if done is None:
            return
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=done.diagnostics, version=done.version))

    # -- fixes (run on the analysis thread) ------------------------------------------------------
    @property
    def threshold(self):
        return UNSAFE if self.unsafe_fixes else SAFE

    def fix_of(self, done: _Analysed, finding: Finding, candidate) -> Fix | None:
        """The fix `tcl fix` makes for this finding, at or above the safety threshold."""
        key = _key(finding)
        if key not in done.fixes:
            fixes = collect_fixes(done.nodes, [(finding, candidate)], done.project.analyzer.version, [])
            done.fixes[key] = next((f for f in fixes if f.safety >= self.threshold), None)
        return done.fixes[key]

    def single_fix_text(self, done: _Analysed, finding: Finding, fix: Fix) -> str | None:
        """The text `tcl fix --apply` writes when this is the only fix applied (None: no change)."""
        key = _key(finding)
        if key not in done.edits:
            new = apply_fixes(done.nodes.module, [fix], torch_bound(done.nodes))
            done.edits[key] = new if new != done.text and self._parses(new, done.path) else None
        return done.edits[key]

    def _parses(self, text: str, path: str) -> bool:
        """syntax_problem(text) is None, re-parsing only the statements the fix changed."""
        module, problem, _ = parse_source(path, text, self.parses)
        return module is not None and problem is None

    def has_fix(self, done: _Analysed) -> bool:
        if done.any_fix is None:
            done.any_fix = any(self.fix_of(done, f, c) is not None for f, c in done.pairs
                               if getattr(c.rule, "fixer", None) is not None)
        return done.any_fix

    def fix_all_text(self, done: _Analysed) -> str | None:
        if done.fixed_all is None:
            project = done.project
            result = fix_source(done.text, done.path, project.analyzer, unsafe=self.unsafe_fixes,
                                package=_package(done.path), ignored=project.ignored(done.path))
            done.fixed_all = result.fixed if not result.errors else done.text
        return done.fixed_all if done.fixed_all != done.text else None

    def edit(self, uri: str, version: int | None, old: str, new: str) -> types.WorkspaceEdit:
        edits = _text_edits(self.workspace.position_codec, old, new)
        capabilities = self.client_capabilities.workspace
        if capabilities and capabilities.workspace_edit and capabilities.workspace_edit.document_changes:
            # Versioned: a client whose buffer moved on since rejects the edit instead of garbling it.
            document = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version)
            return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(text_document=document, edits=edits)])
        return types.WorkspaceEdit(changes={uri: edits})

    @property
    def resolves_edits(self) -> bool:
        """Whether the client asks for a code action's edit only when the user picks it."""
        text = self.client_capabilities.text_document
        action = text.code_action if text else None
        support = action.resolve_support if action else None
        return bool(support and "edit" in support.properties and action.data_support)

    def code_actions(self, uri: str, done: _Analysed, params: types.CodeActionParams) -> list[types.CodeAction]:
        if done.nodes is None:
            return []
        only = params.context.only
        lazy = self.resolves_edits
        codec = self.workspace.position_codec
        actions = []
        if _wanted(types.CodeActionKind.QuickFix.value, only):
            for finding, candidate in done.pairs:
                if getattr(candidate.rule, "fixer", None) is None or not _overlaps(codec, done.lines, finding, params.range):
                    continue
                fix = self.fix_of(done, finding, candidate)
                if fix is None:
                    continue
                action = types.CodeAction(
                    title=f"tcl: {fix.title} ({fix.code}){' (unsafe)' if fix.safety < SAFE else ''}",
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=[d for d in params.context.diagnostics
                                 if _same(d, self._diagnostic(done.lines, finding))] or None,
                    is_preferred=fix.safety >= SAFE,
                    data={"uri": uri, "version": done.version, "finding": list(_key(finding))},
                )
                if not lazy:
                    self.resolve(action, done)
                    if action.edit is None:
                        continue
                actions.append(action)
        if _wanted(FIX_ALL, only) and self.has_fix(done):
            what = "findings (unsafe fixes included)" if self.unsafe_fixes else "safe findings"
            action = types.CodeAction(title=f"tcl: fix all {what} in file", kind=FIX_ALL,
                                      data={"uri": uri, "version": done.version, "all": True})
            if not lazy:
                self.resolve(action, done)
            if lazy or action.edit is not None:
                actions.append(action)
        return actions

    def resolve(self, action: types.CodeAction, done: _Analysed) -> types.CodeAction:
        """Fill in the action's edit, if it was made for this version of the document."""
        data = action.data if isinstance(action.data, dict) else {}
        if done.nodes is None or data.get("version") != done.version:
            return action
        new = None
        if data.get("all"):
            new = self.fix_all_text(done)
        else:
            key = tuple(data.get("finding") or ())
            for finding, candidate in done.pairs:
                if _key(finding) == key:
                    fix = self.fix_of(done, finding, candidate)
                    new = self.single_fix_text(done, finding, fix) if fix is not None else None
                    break
        if new is not None:
            action.edit = self.edit(data["uri"], done.version, done.text, new)
        return action


def create_server() -> TclServer:
    server = TclServer()

    @server.feature(types.INITIALIZE)
    def initialize(ls: TclServer, params: types.InitializeParams) -> None:
        options = params.initialization_options
        ls.unsafe_fixes = bool(isinstance(options, dict) and options.get("unsafeFixes"))

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: TclServer, params: types.DidOpenTextDocumentParams) -> None:
        await ls.publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    async def did_change(ls: TclServer, params: types.DidChangeTextDocumentParams) -> None:
        uri, version = params.text_document.uri, params.text_document.version
        ls.worker.supersede(uri)  # the text being analysed is already out of date
        await asyncio.sleep(CHANGE_DELAY_S)
        document = ls.workspace.text_documents.get(uri)
        if document is not None and document.version == version:  # else a later change supersedes this one
            await ls.publish(uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    async def did_save(ls: TclServer, params: types.DidSaveTextDocumentParams) -> None:
        ls.forget(_document_path(params.text_document.uri))
        for uri in list(ls.workspace.text_documents):
            await ls.publish(uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: TclServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.worker.supersede(uri)
        ls.analysed.pop(uri, None)
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL], resolve_provider=True),
    )
    async def code_action(ls: TclServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        try:
            done = await ls.analysis(uri)
            if done is None or done.nodes is None:
                return []
            return await ls.worker.run(uri, lambda: ls.code_actions(uri, done, params))
        except (Exception, OverBudget, Superseded):  # no quick fix is better than a failed request
            log.exception("tcl: code actions for %s failed", uri)
            return []

    @server.feature(types.CODE_ACTION_RESOLVE)
    async def code_action_resolve(ls: TclServer, action: types.CodeAction) -> types.CodeAction:
        data = action.data if isinstance(action.data, dict) else {}
        uri = data.get("uri")
        try:
            done = await ls.analysis(uri) if uri else None
            if done is None:
                return action
            return await ls.worker.run(uri, lambda: ls.resolve(action, done))
        except (Exception, OverBudget, Superseded):
            log.exception("tcl: resolving a code action for %s failed", uri)
            return action

    return server


def serve() -> int:
    stdout = sys.stdout.buffer
    sys.stdout = sys.stderr  # the protocol owns stdout: a stray print must not corrupt it
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    create_server().start_io(sys.stdin.buffer, stdout)
    return 0


def _too_large(text: str, lines: list[str]) -> str | None:
    if len(lines) > MAX_DOCUMENT_LINES or len(text) > MAX_DOCUMENT_BYTES:
        return (f"tcl does not analyse this file in the editor: {len(lines):,} lines, {len(text):,} characters "
                f"(the limits are {MAX_DOCUMENT_LINES:,} lines and {MAX_DOCUMENT_BYTES:,} characters); "
                "`tcl check` analyses it")
    return None


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
