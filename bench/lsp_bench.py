#!/usr/bin/env python
"""How fast `tcl lsp` answers an editor: diagnostics after an edit, and code actions.

    python bench/lsp_bench.py                        # this checkout's server, 36 edits
    python bench/lsp_bench.py --baseline /work/main  # also a server run from another checkout
                                                     # (its tcl/ first on PYTHONPATH), interleaved

It drives the real server (`python -m tcl lsp`) over its stdin/stdout with a small JSON-RPC
client written here (no pygls on the client side, so the client costs nothing measurable),
in a temporary project: a pyproject.toml, the fixtures as the project's other files, and
`model.py`, a ~1.5k-line file made of fixture modules one after the other. Measured:

* cold: the server's first diagnostics for model.py after didOpen, then the first code action
  on it (the first request that needs fixes);
* warm: N edits of varied kinds (a statement added in a function body, a print() added in a
  function body, a parameter added to a signature), each sent as a full-text didChange; the
  time from the didChange to the publishDiagnostics of that version, minus the server's
  debounce (what the user waits once they pause), and the time of a code action on a finding
  of the edited text.

With --baseline, both servers get the same edits, one edit each in turn, so a noisy shared
machine slows both alike: compare the ratio as well as the figures.

    python bench/lsp_bench.py --script bench/user_scripts/compile_generate.py --follow-imports

edits a user's script instead (a project of that one file; with --follow-imports, its
pyproject.toml turns `follow-imports` on): issue 16's editor path, a script that compiles an
installed library's code, where the first diagnostics read the library and every edit after
should not.
"""

from __future__ import annotations

import argparse
import ast
import itertools
import json
import os
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
# check_truth.py holds `from __future__` (only legal at the top) and labelled test cases.
MODEL_PARTS_SKIPPED = ("check_truth.py", "clean_model.py")
TARGET_LINES = 1500
EDIT_KINDS = ("body", "print", "signature")
# What VS Code and Neovim announce about code actions: the edit of an action is asked for
# (codeAction/resolve) when the user picks it, not with the list shown at the cursor.
CLIENT_CAPABILITIES = {
    "textDocument": {"codeAction": {"dataSupport": True, "resolveSupport": {"properties": ["edit"]},
                                    "codeActionLiteralSupport": {"codeActionKind": {"valueSet": [
                                        "quickfix", "source", "source.fixAll"]}}}},
    "workspace": {"workspaceEdit": {"documentChanges": True}},
}


def model_text(target_lines: int = TARGET_LINES) -> str:
    """Fixture modules one after the other until the text has `target_lines` lines."""
    parts, lines = [], 0
    for path in itertools.cycle(sorted(FIXTURES.glob("*.py"))):
        if path.name in MODEL_PARTS_SKIPPED:
            continue
        text = path.read_text()
        parts.append(f"# ---- from fixtures/{path.name} ----\n{text}")
        lines += text.count("\n") + 1
        if lines >= target_lines:
            return "\n".join(parts)
    raise AssertionError("unreachable")


def make_project(directory: Path, script: Path | None = None, follow_imports: bool = False) -> Path:
    settings = '[tool.tcl]\ntorch-version = "2.13"\n' + ("follow-imports = true\n" if follow_imports else "")
    (directory / "pyproject.toml").write_text(settings)
    if script is not None:
        model = directory / script.name
        shutil.copy(script, model)
        return model
    for path in FIXTURES.glob("*.py"):
        shutil.copy(path, directory / path.name)
    model = directory / "model.py"
    model.write_text(model_text())
    return model


def edited(text: str, number: int) -> str:
    """The text after edit `number`: a kind and a function chosen in turn."""
    tree = ast.parse(text)
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.body and n.args.args]
    function = functions[(number * 7) % len(functions)]
    lines = text.splitlines(keepends=True)
    kind = EDIT_KINDS[number % len(EDIT_KINDS)]
    first = function.body[0]
    indent = " " * first.col_offset
    if kind == "body":
        lines.insert(first.lineno - 1, f"{indent}_edit_{number} = {number} + 1\n")
    elif kind == "print":
        lines.insert(first.lineno - 1, f'{indent}print("edit {number}")\n')
    else:
        args = function.args
        last = args.defaults[-1] if args.defaults else args.args[-1]
        row = last.end_lineno - 1
        line = lines[row]
        lines[row] = line[:last.end_col_offset] + f", _extra_{number}=None" + line[last.end_col_offset:]
    return "".join(lines)


class Client:
    """A minimal LSP client over a subprocess's pipes."""

    def __init__(self, command: list[str], env: dict[str, str], cwd: Path) -> None:
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, env=env, cwd=cwd)
        self.messages: queue.Queue = queue.Queue()
        self.ids = itertools.count(1)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        stream = self.process.stdout
        while True:
            length = None
            while True:
                header = stream.readline()
                if not header:
                    return
                if header in (b"\r\n", b"\n"):
                    break
                name, _, value = header.decode().partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            message = json.loads(stream.read(length))
            if "method" in message and "id" in message:  # a request from the server: accept it
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
                continue
            self.messages.put((time.perf_counter(), message))

    def send(self, message: dict) -> None:
        body = json.dumps(message).encode()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        self.process.stdin.flush()

    def notify(self, method: str, params: dict) -> float:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})
        return time.perf_counter()

    def request(self, method: str, params: dict, timeout: float = 300) -> tuple[float, object]:
        """(seconds to the answer, result)."""
        number = next(self.ids)
        started = time.perf_counter()
        self.send({"jsonrpc": "2.0", "id": number, "method": method, "params": params})
        arrived, message = self.wait(lambda m: m.get("id") == number, timeout)
        return arrived - started, message.get("result")

    def wait(self, wanted, timeout: float = 300) -> tuple[float, dict]:
        deadline = time.perf_counter() + timeout
        while True:
            arrived, message = self.messages.get(timeout=max(deadline - time.perf_counter(), 0.01))
            if wanted(message):
                return arrived, message

    def diagnostics(self, uri: str, version: int, timeout: float = 300) -> tuple[float, list]:
        arrived, message = self.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                                     and m["params"]["uri"] == uri and m["params"].get("version") == version,
                                     timeout)
        return arrived, message["params"]["diagnostics"]

    def close(self) -> None:
        try:
            self.request("shutdown", {}, timeout=30)
            self.notify("exit", {})
            self.process.wait(timeout=30)
        except Exception:
            self.process.kill()


def code_action(client: Client, uri: str, diagnostic: dict) -> tuple[float, list]:
    seconds, actions = client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": diagnostic["range"],
        "context": {"diagnostics": [diagnostic]},
    })
    return seconds, actions or []


class Run:
    """One server's session: open model.py cold, then the edits one by one."""

    def __init__(self, name: str, command: list[str], env: dict[str, str], project: Path, model: Path,
                 debounce: float) -> None:
        self.name, self.debounce = name, debounce
        self.client = Client(command, env, project)
        self.uri = model.as_uri()
        self.text = model.read_text()
        self.version = 1
        self.after_debounce: list[float] = []
        self.actions: list[float] = []
        self.resolves: list[float] = []
        self.client.request("initialize", {"processId": os.getpid(), "rootUri": project.as_uri(),
                                           "capabilities": CLIENT_CAPABILITIES, "workspaceFolders": [
                                               {"uri": project.as_uri(), "name": "bench"}]})
        self.client.notify("initialized", {})
        sent = self.client.notify("textDocument/didOpen", {"textDocument": {
            "uri": self.uri, "languageId": "python", "version": 1, "text": self.text}})
        arrived, self.last = self.client.diagnostics(self.uri, 1)
        self.cold_diagnostics = arrived - sent
        self.cold_action, _ = code_action(self.client, self.uri, self.last[0]) if self.last else (0.0, [])

    def edit(self, number: int, text: str) -> None:
        self.version += 1
        self.text = text
        sent = self.client.notify("textDocument/didChange", {
            "textDocument": {"uri": self.uri, "version": self.version}, "contentChanges": [{"text": text}]})
        arrived, self.last = self.client.diagnostics(self.uri, self.version)
        self.after_debounce.append(arrived - sent - self.debounce)
        if self.last:
            seconds, actions = code_action(self.client, self.uri, self.last[(number * 5) % len(self.last)])
            self.actions.append(seconds)
            quick = [a for a in actions if a.get("kind") == "quickfix"]
            if quick and "edit" not in quick[0]:  # the user picks the first quick fix: its edit is made now
                seconds, resolved = self.client.request("codeAction/resolve", quick[0])
                assert resolved.get("edit"), resolved
                self.resolves.append(seconds)

    def summary(self) -> dict:
        return {
            "server": self.name,
            "cold_diagnostics_s": self.cold_diagnostics,
            "cold_code_action_s": self.cold_action,
            "edits": len(self.after_debounce),
            "diagnostics_after_debounce_s": _stats(self.after_debounce),
            "code_action_s": _stats(self.actions),
            "quick_fix_resolve_s": _stats(self.resolves),
            "quick_fixes_resolved": len(self.resolves),
            "final_diagnostics": len(self.last),
        }


def _stats(values: list[float]) -> dict:
    ordered = sorted(values)
    if not ordered:
        return {}
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"p50": statistics.median(ordered), "p95": p95, "max": ordered[-1]}


def server_command(checkout: Path | None) -> tuple[list[str], dict[str, str]]:
    env = dict(os.environ)
    if checkout is not None:  # that checkout's tcl package shadows the installed one
        env["PYTHONPATH"] = os.pathsep.join([str(checkout), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return [sys.executable, "-m", "tcl", "lsp"], env


def debounce_of(checkout: Path | None) -> float:
    source = ((checkout or REPO) / "tcl" / "lsp.py").read_text()
    for line in source.splitlines():
        if line.startswith("CHANGE_DELAY_S"):
            return float(line.split("=")[1].split("#")[0])
    raise SystemExit("cannot find CHANGE_DELAY_S in tcl/lsp.py")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=36)
    parser.add_argument("--baseline", type=Path, help="a checkout whose server runs alongside, for a before/after")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--script", type=Path, help="edit this script (a project of one file) instead of model.py")
    parser.add_argument("--follow-imports", action="store_true", help="turn follow-imports on in the project")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="tcl-lsp-bench-") as tmp:
        project = Path(tmp)
        model = make_project(project, args.script, args.follow_imports)
        print(f"{model.name}: {model.read_text().count(chr(10))} lines; {args.edits} edits"
              f"{'; follow-imports' if args.follow_imports else ''}", file=sys.stderr)
        checkouts = [("this checkout", None)] + ([("baseline " + str(args.baseline), args.baseline)]
                                                  if args.baseline else [])
        runs = []
        for name, checkout in checkouts:
            command, env = server_command(checkout)
            runs.append(Run(name, command, env, project, model, debounce_of(checkout)))
        text = model.read_text()
        for number in range(args.edits):
            text = edited(text, number)
            for run in runs:
                run.edit(number, text)
        for run in runs:
            run.client.close()
    results = [run.summary() for run in runs]
    for result in results:
        print(_table(result))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


def _table(result: dict) -> str:
    d, a, r = result["diagnostics_after_debounce_s"], result["code_action_s"], result["quick_fix_resolve_s"]
    text = (f"{result['server']}: cold diagnostics {result['cold_diagnostics_s']:.3f} s, "
            f"cold code action {result['cold_code_action_s']:.3f} s; {result['edits']} edits: "
            f"diagnostics after debounce p50 {d['p50']:.3f} / p95 {d['p95']:.3f} / max {d['max']:.3f} s; ")
    if a:  # none without diagnostics to ask about
        text += f"code action p50 {a['p50']:.3f} / p95 {a['p95']:.3f} / max {a['max']:.3f} s; "
    if r:
        text += (f"quick-fix edit (resolve, {result['quick_fixes_resolved']}x) p50 {r['p50']:.3f} / "
                 f"p95 {r['p95']:.3f} / max {r['max']:.3f} s; ")
    return text + f"{result['final_diagnostics']} diagnostics at the end"


if __name__ == "__main__":
    sys.exit(main())
