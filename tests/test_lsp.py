"""`tcl lsp` end to end: `python -m tcl lsp` in a subprocess, driven by pytest-lsp's LSP client.

Each answer is compared with what `tcl check` and `tcl fix --apply` print for the same text.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("pygls")
pytest_lsp = pytest.importorskip("pytest_lsp")
from lsprotocol import types  # noqa: E402  (after the skip: pytest-lsp brings lsprotocol)
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities  # noqa: E402

on_one_server = pytest.mark.asyncio(loop_scope="module")  # the tests share one server process

HAZARD = textwrap.dedent('''
    import torch

    @torch.compile
    def step(x):
        print(x.shape)
        if x.sum() > 0:
            x = x * 2
        return x
''')
CLEAN = HAZARD.replace("    print(x.shape)\n", "").replace("x.sum() > 0", "x.shape[0] > 2")
NOQA = HAZARD.replace("print(x.shape)", "print(x.shape)  # noqa: TCL101")
BROKEN = "import torch\n\n@torch.compile\ndef step(x:\n    return x\n"
DEBUGGER = "import torch\n\n@torch.compile\ndef step(x):\n    breakpoint()\n    return x\n"


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("lsp")
    (root / "pyproject.toml").write_text('[tool.tcl]\ntorch-version = "2.13"\n')
    (root / "quiet").mkdir()
    (root / "quiet" / "pyproject.toml").write_text('[tool.tcl]\nignore = ["TCL201"]\n')
    return root


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "tcl", "lsp"]), scope="module")
async def client(lsp_client: LanguageClient, project):
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"),
        workspace_folders=[types.WorkspaceFolder(uri=project.as_uri(), name="lsp")],
    ))
    yield
    await lsp_client.shutdown_session()


async def published(client: LanguageClient, uri: str) -> list[types.Diagnostic]:
    while True:
        params = await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        if params.uri == uri:
            return list(params.diagnostics)


async def open_document(client: LanguageClient, path, text: str) -> tuple[str, list[types.Diagnostic]]:
    path.write_text(text)  # on disk too, so that `tcl check`/`tcl fix` can be run on the same text
    uri = path.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
    return uri, await published(client, uri)


async def code_actions(client: LanguageClient, uri: str, range_: types.Range, diagnostics=(), only=None):
    """The actions at `range_`, each with its edit: resolved (codeAction/resolve) as VS Code
    does when the user picks one, since the server leaves edits to resolve for such clients."""
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=range_,
        context=types.CodeActionContext(diagnostics=list(diagnostics), only=only)))
    return [await client.code_action_resolve_async(a) if a.edit is None else a for a in actions or []]


def apply_edit(text: str, edit: types.WorkspaceEdit) -> str:
    """What an editor does with the edit (ASCII text: LSP characters are str indices)."""
    (change,) = edit.document_changes
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))

    def offset(position: types.Position) -> int:
        return offsets[position.line] + position.character if position.line < len(lines) else len(text)

    for text_edit in sorted(change.edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[:offset(text_edit.range.start)] + text_edit.new_text + text[offset(text_edit.range.end):]
    return text


def tcl(*args, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tcl", *args], capture_output=True, text=True, cwd=cwd, timeout=120)


def tcl_fix_apply(project, name: str, text: str, *options: str) -> str:
    path = project / name
    path.write_text(text)
    tcl("fix", "--apply", *options, name, cwd=project)
    return path.read_text()


def checked_codes(text: str) -> list[tuple[str, int]]:
    """(code, line) of each finding `tcl check` reports for this text; it must parse."""
    from tcl.config import Config
    from tcl.engine import Analyzer

    report = Analyzer(Config(torch_version="2.13")).check_source(text, "fixed.py")
    assert not report.errors, report.errors
    return [(f.code, f.line) for f in sorted(report.findings, key=lambda f: f.sort_key())]


@on_one_server
async def test_diagnostics_match_tcl_check(client: LanguageClient, project):
    uri, diagnostics = await open_document(client, project / "model.py", HAZARD)
    cli = tcl("check", "--no-cache", "--format", "flake8", "model.py", cwd=project).stdout.splitlines()
    # LSP lines and characters are 0-based; tcl's lines and columns 1-based.
    assert [f"model.py:{d.range.start.line + 1}:{d.range.start.character + 1}: {d.code} {d.message}"
            for d in diagnostics] == cli
    assert [(d.code, d.range.start.line) for d in diagnostics] == [("TCL101", 5), ("TCL201", 6)]
    print_call = diagnostics[0]
    assert print_call.range == types.Range(types.Position(line=5, character=4), types.Position(line=5, character=18))
    assert print_call.source == "tcl"
    assert print_call.severity == types.DiagnosticSeverity.Warning
    assert print_call.code_description.href.endswith("/gb/gb0059.html")


@on_one_server
async def test_quick_fix_is_what_tcl_fix_writes(client: LanguageClient, project):
    uri, diagnostics = await open_document(client, project / "quick.py", HAZARD)
    print_call, branch = diagnostics
    cursor = types.Range(print_call.range.start, print_call.range.start)  # the cursor on `print`
    actions = await code_actions(client, uri, cursor, [print_call])
    quick = [a for a in actions if a.kind == types.CodeActionKind.QuickFix]
    assert [a.title for a in quick] == ["tcl: guard with `if not torch.compiler.is_compiling():` (TCL101)"]
    assert list(quick[0].diagnostics) == [print_call]
    fixed = apply_edit(HAZARD, quick[0].edit)
    ast.parse(fixed)
    assert fixed == tcl_fix_apply(project, "quick_cli.py", HAZARD, "--select", "TCL101")
    assert checked_codes(fixed) == [("TCL201", 8)]

    actions = await code_actions(client, uri, branch.range, [branch])
    (where,) = [a for a in actions if a.kind == types.CodeActionKind.QuickFix]
    assert "torch.where" in where.title and "TCL201" in where.title
    fixed = apply_edit(HAZARD, where.edit)
    ast.parse(fixed)
    assert fixed == tcl_fix_apply(project, "branch_cli.py", HAZARD, "--select", "TCL201")
    assert checked_codes(fixed) == [("TCL101", 6)]


@on_one_server
async def test_fix_all_is_what_tcl_fix_apply_writes(client: LanguageClient, project):
    uri, _ = await open_document(client, project / "fixall.py", HAZARD)
    whole = types.Range(types.Position(line=0, character=0), types.Position(line=0, character=0))
    (action,) = await code_actions(client, uri, whole, only=[types.CodeActionKind.SourceFixAll])
    assert (action.kind, action.title) == ("source.fixAll.tcl", "tcl: fix all safe findings in file")
    fixed = apply_edit(HAZARD, action.edit)
    assert fixed == tcl_fix_apply(project, "fixall_cli.py", HAZARD)
    assert checked_codes(fixed) == []


@on_one_server
async def test_change_that_removes_the_hazard_clears_diagnostics(client: LanguageClient, project):
    uri, diagnostics = await open_document(client, project / "edited.py", HAZARD)
    assert len(diagnostics) == 2
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=CLEAN)]))
    assert await published(client, uri) == []
    whole = types.Range(types.Position(line=0, character=0), types.Position(line=9, character=0))
    assert not await code_actions(client, uri, whole)


@on_one_server
async def test_noqa_suppresses(client: LanguageClient, project):
    _, diagnostics = await open_document(client, project / "noqa.py", NOQA)
    assert [(d.code, d.range.start.line) for d in diagnostics] == [("TCL201", 6)]


@on_one_server
async def test_nearest_pyproject_settings_apply(client: LanguageClient, project):
    _, diagnostics = await open_document(client, project / "quiet" / "model.py", HAZARD)
    assert [d.code for d in diagnostics] == ["TCL101"]  # quiet/pyproject.toml ignores TCL201


@on_one_server
async def test_syntax_error_gives_one_note_and_the_server_goes_on(client: LanguageClient, project):
    uri, diagnostics = await open_document(client, project / "broken.py", BROKEN)
    assert len(diagnostics) == 1
    (note,) = diagnostics
    assert note.code == "TCL000" and note.severity == types.DiagnosticSeverity.Information
    assert note.message.startswith("tcl could not analyse this file: cannot parse")
    assert note.range.start.line == 3
    assert not await code_actions(client, uri, note.range, [note])
    _, diagnostics = await open_document(client, project / "after_broken.py", HAZARD)
    assert [d.code for d in diagnostics] == ["TCL101", "TCL201"]


@on_one_server
async def test_unsafe_fix_is_not_offered(client: LanguageClient, project):
    uri, diagnostics = await open_document(client, project / "debugger.py", DEBUGGER)
    assert [d.code for d in diagnostics] == ["TCL102"]
    # Removing breakpoint() is an unsafe fix: `tcl fix --apply` leaves it, so does the editor.
    assert not await code_actions(client, uri, diagnostics[0].range, diagnostics)


async def published_version(client: LanguageClient, uri: str, version: int) -> list[types.Diagnostic]:
    while True:
        params = await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        if params.uri == uri and params.version == version:
            return list(params.diagnostics)


def cli_lines(diagnostics, name: str) -> list[str]:
    return [f"{name}:{d.range.start.line + 1}:{d.range.start.character + 1}: {d.code} {d.message}" for d in diagnostics]


@on_one_server
async def test_after_edits_of_a_large_file_diagnostics_are_what_tcl_check_reports(client: LanguageClient, project):
    """The incremental re-check (memoized parse, walks, positions) against `tcl check` of the
    same text, after edits of each kind; with a loose bound on the time a re-check takes."""
    import importlib.util
    import time
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("lsp_bench", Path(__file__).resolve().parent.parent / "bench" / "lsp_bench.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    path = project / "large.py"
    text = bench.model_text()
    uri, diagnostics = await open_document(client, path, text)
    assert cli_lines(diagnostics, "large.py") == tcl("check", "--no-cache", "--format", "flake8", "large.py", cwd=project).stdout.splitlines()
    waits = []
    for number in range(6):
        text = bench.edited(text, number)
        started = time.perf_counter()
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=number + 2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))
        diagnostics = await published_version(client, uri, number + 2)
        waits.append(time.perf_counter() - started)
        path.write_text(text)
        assert cli_lines(diagnostics, "large.py") == tcl("check", "--no-cache", "--format", "flake8", "large.py", cwd=project).stdout.splitlines()
    # About 0.4 s on a quiet 2-core machine, debounce included; the bound only catches a
    # re-check that analyses the whole file from scratch many times over.
    assert sorted(waits)[len(waits) // 2] < 3.0, waits


def test_without_pygls_one_line_and_exit_2():
    code = "import sys; sys.modules['pygls'] = None; from tcl.cli import main; sys.exit(main(['lsp']))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and 'pip install "pygls>=2.1,<3"' in result.stderr
    assert "Traceback" not in result.stderr


def test_server_side_never_imports_torch():
    code = textwrap.dedent('''
        import sys
        from tcl.lsp import create_server
        from tcl.config import Config
        from tcl.engine import Analyzer
        from tcl.fixing.apply import fix_source
        create_server()
        fixed = fix_source(SOURCE, "model.py", Analyzer(Config()))
        assert fixed.applied and fixed.remaining == [], fixed
        print(sorted(m for m in sys.modules if m == "torch" or m.startswith("torch.")))
    ''').replace("SOURCE", repr(HAZARD))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


# -- robustness: raw bytes on the server's stdin ---------------------------------------------------


def raw_client(cwd):
    """The benchmark's hand-rolled client (bench/lsp_bench.py): raw frames, no pygls between."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("lsp_bench", Path(__file__).resolve().parent.parent / "bench" / "lsp_bench.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench.Client([sys.executable, "-m", "tcl", "lsp"], None, cwd)


def test_a_frame_without_content_length_does_not_make_the_server_deaf(tmp_path):
    client = raw_client(tmp_path)
    try:
        # No Content-Length: the body shares a line with the next frame's header.
        client.process.stdin.write(b'\r\n{"jsonrpc": "2.0", "id": 99, "method": "initialize", "params": {}}')
        client.process.stdin.flush()
        seconds, result = client.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}},
                                         timeout=30)
        assert result["serverInfo"]["name"] == "tcl"
        client.notify("initialized", {})
        # And after stray header lines and a body that is not JSON, the next request is answered.
        client.process.stdin.write(b"Content-Type: application/vscode-jsonrpc\r\nnot a header at all\r\n")
        client.process.stdin.write(b"Content-Length: 9\r\n\r\nnot json!")
        client.process.stdin.flush()
        _, answer = client.request("textDocument/codeAction", {
            "textDocument": {"uri": (tmp_path / "none.py").as_uri()},
            "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
            "context": {"diagnostics": []}}, timeout=30)
        assert answer == []
    finally:
        client.close()


def test_a_huge_document_does_not_block_the_next_request(tmp_path):
    import time

    client = raw_client(tmp_path)
    try:
        client.request("initialize", {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}}, timeout=30)
        client.notify("initialized", {})
        huge = tmp_path / "huge.py"
        text = "import torch\n\n@torch.compile\ndef step(x):\n" + "    x = x + 1\n" * 100_000 + "    return x\n"
        client.notify("textDocument/didOpen", {"textDocument": {
            "uri": huge.as_uri(), "languageId": "python", "version": 1, "text": text}})
        small = tmp_path / "small.py"
        client.notify("textDocument/didOpen", {"textDocument": {
            "uri": small.as_uri(), "languageId": "python", "version": 1, "text": HAZARD}})
        started = time.perf_counter()
        published: dict[str, tuple[float, list]] = {}
        while len(published) < 2:
            arrived, message = client.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics", 60)
            published[message["params"]["uri"]] = (arrived - started, message["params"]["diagnostics"])
        seconds, diagnostics = published[small.as_uri()]
        assert seconds < 5, "the huge document held up the next one"
        assert [d["code"] for d in diagnostics] == ["TCL101", "TCL201"]
        _, notes = published[huge.as_uri()]
        assert [d["code"] for d in notes] == ["TCL000"] and "tcl check" in notes[0]["message"]
    finally:
        client.close()


def test_an_edit_interrupts_the_analysis_of_the_older_text(tmp_path):
    """A 15k-line document (under the size limit: a cold analysis takes seconds) is replaced
    by a short text a second after it was opened: the stale analysis is dropped, not finished."""
    import time

    client = raw_client(tmp_path)
    try:
        client.request("initialize", {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}}, timeout=30)
        client.notify("initialized", {})
        uri = (tmp_path / "big.py").as_uri()
        big = "import torch\n\n" + "".join(
            f"@torch.compile\ndef step_{n}(x):\n    y = x * 2\n    if y.sum() > 0:\n        y = y + 1\n    return y.item()\n\n\n"
            for n in range(1_800))
        assert big.count("\n") < 20_000
        client.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": big}})
        time.sleep(1.0)
        changed = client.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": HAZARD}]})
        arrived, message = client.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics", 60)
        assert message["params"]["version"] == 2, "the analysis of the old text was finished and published"
        assert [d["code"] for d in message["params"]["diagnostics"]] == ["TCL101", "TCL201"]
        assert arrived - changed < 5
    finally:
        client.close()


def test_an_analysis_over_budget_is_tried_once_more_then_noted(monkeypatch):
    """A stopped analysis keeps what it read (installed files parsed): the second try of a cold
    `--follow-imports` analysis finishes; one stopped twice gives the note."""
    import asyncio

    from tcl import lsp
    from tcl.lsp_worker import OverBudget

    class Worker:
        def __init__(self, failures):
            self.failures, self.calls = failures, 0

        async def run(self, key, work):
            self.calls += 1
            if self.calls <= self.failures:
                raise OverBudget()
            return work()

    server = lsp.TclServer()
    monkeypatch.setattr(server, "analyse", lambda uri, version, text: f"analysed {version}")
    monkeypatch.setattr(server, "_note_only", lambda uri, version, text, message: message)
    monkeypatch.setattr(server, "_after_analysis", lambda: None)
    for failures, expected in [(0, "analysed 1"), (lsp.OVER_BUDGET_RETRIES, "analysed 1"),
                               (lsp.OVER_BUDGET_RETRIES + 1, "tcl stopped analysing")]:
        server.worker = Worker(failures)
        done = asyncio.run(server._run_analysis("file:///x.py", 1, "x = 1\n"))
        assert done.startswith(expected), (failures, done)
        assert server.worker.calls == min(failures + 1, lsp.OVER_BUDGET_RETRIES + 1)
