"""Bad input never breaks `tcl check`: one stderr line per bad file, no traceback, the rest checked.

Each case runs the real command (`python -m tcl check`) on a temp tree that holds the bad file
next to a good file with one known finding. The cache, the per-file time limit, worker crashes
and internal errors in rules are tested in-process below.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

import pytest
from pathlib import Path

from tcl import runner
from tcl.cache import Cache, content_hash
from tcl.config import Config
from tcl.engine import Analyzer, FileReport
from tcl.findings import FileError
from tcl.rules.side_effects import PrintCall

GOOD = textwrap.dedent('''\
    import torch

    @torch.compile
    def step(x):
        print(x)
        return x
''')
GOOD_LINE = "good.py:5:5: TCL101 "
HAZARD_BLOCK = textwrap.dedent('''\
    class M{i}(torch.nn.Module):
        def forward(self, x):
            y = x * 2
            print(y)
            return y

''')


def tcl(*args, cwd, timeout=300):
    return subprocess.run(
        [sys.executable, "-m", "tcl", "check", "--no-config", *args],
        capture_output=True, text=True, cwd=cwd, timeout=timeout,
    )


def check_tree(tmp_path, bad_name: str, bad: bytes | str | None, *extra):
    """Write good.py and the bad file, run `tcl check --no-cache .`, check the common promises."""
    (tmp_path / "good.py").write_text(GOOD)
    if bad is not None:
        target = tmp_path / bad_name
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(bad, bytes):
            target.write_bytes(bad)
        else:
            target.write_text(bad)
    result = tcl("--no-cache", *extra, ".", cwd=tmp_path)
    assert "Traceback" not in result.stderr + result.stdout
    assert GOOD_LINE in result.stdout  # the other file is still checked
    return result


def one_error(result, name: str) -> str:
    lines = result.stderr.splitlines()
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert len(lines) == 1, lines
    assert lines[0].startswith(name + ":"), lines
    return lines[0]


# -- sizes and shapes -------------------------------------------------------------------------
def test_huge_file_50k_lines(tmp_path):
    blocks = 8334  # 6 lines each: 50,006 lines
    source = "import torch\n\n" + "".join(HAZARD_BLOCK.format(i=i) for i in range(blocks))
    assert source.count("\n") >= 50_000
    # the limit is raised so a slow machine does not turn this into a timeout error
    result = check_tree(tmp_path, "huge.py", source, "--file-timeout", "600")
    assert result.returncode == 1, result.stderr
    huge = [line for line in result.stdout.splitlines() if line.startswith("huge.py:")]
    assert len(huge) == blocks
    assert huge[0].startswith("huge.py:6:9: TCL101 ")
    assert huge[-1].startswith(f"huge.py:{6 + 6 * (blocks - 1)}:9: TCL101 ")


def test_parentheses_1000_deep(tmp_path):
    body = "(" * 1000 + "x" + ")" * 1000
    source = f"import torch\n\n@torch.compile\ndef f(x):\n    y = {body}\n    return y\n"
    line = one_error(check_tree(tmp_path, "deep.py", source), "deep.py")
    assert line == "deep.py:5: cannot parse: too many nested parentheses"


def test_sum_of_10k_terms(tmp_path):
    source = "import torch\n\n@torch.compile\ndef f(x):\n    y = " + "+".join(["1"] * 10_000) + "\n    return y\n"
    line = one_error(check_tree(tmp_path, "long.py", source), "long.py")
    assert "cannot parse: expressions nested too deeply" in line


def test_and_chain_10k_terms_is_no_segfault(tmp_path):
    # valid Python (CPython keeps it flat) that overflows libcst's parser on an 8 MB stack
    source = "import torch\n\n@torch.compile\ndef f(a):\n    y = " + " and ".join(["a"] * 10_000) + "\n    return y\n"
    result = check_tree(tmp_path, "chain.py", source)
    assert result.returncode in (1, 2)
    assert len(result.stderr.splitlines()) <= 1
    assert all(line.startswith("chain.py") for line in result.stderr.splitlines())


@pytest.mark.parametrize("count", [60_000])
def test_and_chain_beyond_the_stack_is_refused(tmp_path, count):
    source = "import torch\nx = (" + " and\n".join(["a"] * count) + ")\n"  # short lines: this guard, not the line's
    line = one_error(check_tree(tmp_path, "chain.py", source), "chain.py")
    assert "`and`/`or` operators" in line


# -- bytes and encodings ----------------------------------------------------------------------
def test_nul_byte(tmp_path):
    line = one_error(check_tree(tmp_path, "nul.py", b"import torch\nx = 1\x00\n"), "nul.py")
    assert line == "nul.py: cannot parse: source contains a NUL byte (line 2)"


SOURCE_CRLF = "import torch\r\n\r\n@torch.compile\ndef f(x):\r\n    y = x + 1\n    print(y)\r\n    return y\n"


@pytest.mark.parametrize("data", [
    pytest.param(SOURCE_CRLF.encode(), id="mixed-crlf-lf"),
    pytest.param(b"\xef\xbb\xbf" + SOURCE_CRLF.encode(), id="bom-and-mixed"),
    pytest.param(b"\xef\xbb\xbf" + SOURCE_CRLF.replace("\r\n", "\n").encode(), id="bom"),
    pytest.param(SOURCE_CRLF.replace("\r\n", "\r").encode(), id="old-mac-cr"),
])
def test_line_endings_and_bom_keep_positions(tmp_path, data):
    result = check_tree(tmp_path, "endings.py", data)
    assert result.returncode == 1, result.stderr
    assert result.stderr == ""
    lines = [line for line in result.stdout.splitlines() if line.startswith("endings.py")]
    assert len(lines) == 1 and lines[0].startswith("endings.py:6:5: TCL101 "), lines


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_python_warnings_about_the_checked_code_are_not_printed(tmp_path, jobs):
    odd = GOOD.replace("print(x)", "y = 1if x else 2\n    print(y)").replace("return x", 'return "\\d"')
    for i in range(runner.PARALLEL_THRESHOLD + 2):
        (tmp_path / f"odd{i:02}.py").write_text(odd)
    result = check_tree(tmp_path, "x.py", None, "-j", jobs)
    assert result.returncode == 1 and result.stderr == "", result.stderr


def test_python2_syntax(tmp_path):
    line = one_error(check_tree(tmp_path, "py2.py", 'import torch\nprint "x"\n'), "py2.py")
    assert line.startswith("py2.py:2: cannot parse: Missing parentheses in call to 'print'")


def test_syntax_newer_than_this_python(tmp_path):
    # PEP 695 (Python 3.12): libcst parses it whatever Python runs tcl, so it is analysed.
    source = "import torch\ntype Alias = int\n\n@torch.compile\ndef f[T](x: T) -> T:\n    print(x)\n    return x\n"
    result = check_tree(tmp_path, "new.py", source)
    assert result.returncode == 1, result.stderr
    assert result.stderr == ""
    assert "new.py:6:5: TCL101 " in result.stdout


def test_empty_and_comment_only_files(tmp_path):
    (tmp_path / "only_bom.py").write_bytes(b"\xef\xbb\xbf")
    (tmp_path / "comment.py").write_text("# torch.compile, forward: words, no code\n")
    result = check_tree(tmp_path, "empty.py", "")
    assert result.returncode == 1 and result.stderr == ""


# -- the file system --------------------------------------------------------------------------
@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="running as root: chmod 000 does not stop root from reading the file")
def test_unreadable_file(tmp_path):
    (tmp_path / "secret.py").write_text(GOOD)
    os.chmod(tmp_path / "secret.py", 0)
    try:
        line = one_error(check_tree(tmp_path, "secret.py", None), "secret.py")
    finally:
        os.chmod(tmp_path / "secret.py", 0o644)
    assert line == "secret.py: cannot read: Permission denied"


def test_symlink_loops(tmp_path):
    (tmp_path / "pkg").mkdir()
    os.symlink("..", tmp_path / "pkg" / "up")  # a directory loop
    os.symlink("self.py", tmp_path / "self.py")  # a file link to itself
    result = check_tree(tmp_path, "pkg/model.py", GOOD)
    assert result.returncode == 2
    errors = sorted(result.stderr.splitlines())
    assert len(errors) == 2, errors
    assert errors[0].startswith("./pkg/up: symlink loop") or errors[0].startswith("pkg/up: symlink loop")
    assert errors[1].startswith("self.py: cannot read: Too many levels of symbolic links")
    assert "pkg/model.py:5:5: TCL101" in result.stdout


def test_a_second_path_to_a_directory_is_not_an_error(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "model.py").write_text(GOOD)
    os.symlink("real", tmp_path / "alias")
    result = check_tree(tmp_path, "x.py", None)
    assert result.returncode == 1 and result.stderr == ""


def test_fifo_named_py_does_not_hang(tmp_path):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    os.mkfifo(tmp_path / "pipe.py")
    result = check_tree(tmp_path, "x.py", None)
    assert result.returncode == 1 and result.stderr == ""  # skipped in a walk
    named = tcl("--no-cache", "pipe.py", cwd=tmp_path, timeout=60)
    assert named.returncode == 2 and named.stderr == "pipe.py: not a regular file; skipped\n"


def test_spaces_and_unicode_in_paths(tmp_path):
    result = check_tree(tmp_path, "my models/módulo ü 模型.py", GOOD)
    assert result.returncode == 1 and result.stderr == ""
    assert "my models/módulo ü 模型.py:5:5: TCL101 " in result.stdout
    # and through the cache, twice
    first = tcl(".", cwd=tmp_path)
    second = tcl(".", cwd=tmp_path)
    assert first.stdout == second.stdout == result.stdout


def test_directory_named_like_a_python_file(tmp_path):
    (tmp_path / "x.py").mkdir()
    (tmp_path / "x.py" / "inner.py").write_text(GOOD)
    result = check_tree(tmp_path, "y.py", None)
    assert result.returncode == 1 and result.stderr == ""
    assert "x.py/inner.py:5:5: TCL101" in result.stdout
    direct = tcl("--no-cache", "x.py", cwd=tmp_path)
    assert direct.returncode == 1 and direct.stdout.startswith("x.py/inner.py:5:5: TCL101")


def test_many_bad_files_in_parallel(tmp_path):
    """More files than the parallel threshold: bad ones still give one line each."""
    for i in range(runner.PARALLEL_THRESHOLD + 6):
        (tmp_path / f"m{i:02}.py").write_text(GOOD.replace("print(x)", f"print(x, {i})"))
    (tmp_path / "nul.py").write_bytes(b"import torch\n\x00")
    (tmp_path / "py2.py").write_text('import torch\nprint "x"\n')
    (tmp_path / "long.py").write_text("import torch\nx = " + "+".join(["1"] * 10_000) + "\n")
    result = check_tree(tmp_path, "x.py", None, "-j", "2")
    assert result.returncode == 2
    errors = sorted(result.stderr.splitlines())
    assert [e.split(":")[0] for e in errors] == ["long.py", "nul.py", "py2.py"]
    assert sum(1 for line in result.stdout.splitlines() if ": TCL101 " in line) == runner.PARALLEL_THRESHOLD + 7


# -- internal errors, time limits, worker crashes (in-process) --------------------------------
def _broken_print_rule(monkeypatch, behaviour):
    original = PrintCall.visit_Call

    def visit_Call(self, node, walker):
        if "BOOM" in getattr(walker.index, "source", ""):
            behaviour()
        return original(self, node, walker)

    monkeypatch.setattr(PrintCall, "visit_Call", visit_Call)


BOOM = GOOD.replace("return x", "return x  # BOOM")


def test_internal_error_names_rule_and_line(monkeypatch):
    def fail():
        raise KeyError("no such\nkey")

    _broken_print_rule(monkeypatch, fail)
    report = Analyzer(Config()).check_source(BOOM, "boom.py")
    assert report.findings == []
    assert [str(e) for e in report.errors] == [
        "boom.py:5: internal error in TCL101 (print-in-compiled-region): KeyError: 'no such\\nkey'"
    ]


def test_internal_error_in_the_cli_is_one_line_and_the_run_goes_on(tmp_path):
    # the rule is broken in the subprocess through a sitecustomize module on PYTHONPATH
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(textwrap.dedent('''
        from tcl.rules.side_effects import PrintCall
        original = PrintCall.visit_Call
        def visit_Call(self, node, walker):
            if "BOOM" in getattr(walker.index, "source", ""):
                raise ValueError("rule exploded")
            return original(self, node, walker)
        PrintCall.visit_Call = visit_Call
    '''))
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "boom.py").write_text(BOOM)
    (tmp_path / "src" / "good.py").write_text(GOOD)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(hook), os.getcwd(), os.environ.get("PYTHONPATH", "")]))
    result = subprocess.run([sys.executable, "-m", "tcl", "check", "--no-cache", "--no-config", "src"],
                            capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert "Traceback" not in result.stderr
    assert result.returncode == 2
    assert result.stderr == "src/boom.py:5: internal error in TCL101 (print-in-compiled-region): ValueError: rule exploded\n"
    assert "src/good.py:5:5: TCL101" in result.stdout


def _write_tree(tmp_path, count, special=None):
    paths = []
    for i in range(count):
        path = tmp_path / f"m{i:02}.py"
        path.write_text(GOOD.replace("print(x)", f"print(x, {i})"))
        paths.append(str(path))
    if special:
        (tmp_path / "slow.py").write_text(special)
    return paths


@pytest.mark.parametrize("jobs", [1, 2])
def test_file_timeout_reports_one_line_and_goes_on(tmp_path, monkeypatch, jobs):
    def spin():
        end = time.process_time() + 30
        while time.process_time() < end:
            pass

    _broken_print_rule(monkeypatch, spin)
    count = runner.PARALLEL_THRESHOLD + 2 if jobs > 1 else 3
    _write_tree(tmp_path, count, special=BOOM)
    started = time.monotonic()
    result = runner.run([str(tmp_path)], Config(), jobs=jobs, file_timeout=0.5)
    assert time.monotonic() - started < 25
    assert [str(e) for e in result.all_errors] == [f"{tmp_path / 'slow.py'}: analysis timed out after 0.5 s (wall clock)"]
    assert len(result.findings) == count


def test_worker_crash_costs_only_the_file_that_crashed(tmp_path, monkeypatch):
    _broken_print_rule(monkeypatch, lambda: os._exit(3))  # a native crash, as seen from outside
    count = runner.PARALLEL_THRESHOLD + 10
    _write_tree(tmp_path, count, special=BOOM)
    result = runner.run([str(tmp_path)], Config(), jobs=2)
    assert [str(e) for e in result.all_errors] == [f"{tmp_path / 'slow.py'}: {runner.WORKER_CRASHED}"]
    assert len(result.findings) == count
    assert [r.path for r in result.reports] == sorted(r.path for r in result.reports)


# -- the cache --------------------------------------------------------------------------------
def _outputs(result):
    return result.returncode, result.stdout, result.stderr


def test_cache_warm_run_matches_cold_and_lives_beside_pyproject(tmp_path):
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "pyproject.toml").write_text("[tool.tcl]\nper-file-ignores = { 'src/ignored.py' = ['TCL101'] }\n")
    (project / "src" / "a.py").write_text(GOOD)
    (project / "src" / "ignored.py").write_text(GOOD)
    (project / "src" / "bad.py").write_text('import torch\nprint "x"\n')
    run = lambda: subprocess.run([sys.executable, "-m", "tcl", "check", "src"], capture_output=True,  # noqa: E731
                                 text=True, cwd=project, timeout=120)
    cold = run()
    assert cold.returncode == 2 and "src/a.py:5:5: TCL101" in cold.stdout and "ignored" not in cold.stdout
    entries = list((project / ".tcl_cache").rglob("*.json"))
    assert entries, "the cache is written beside pyproject.toml"
    assert (project / ".tcl_cache" / ".gitignore").read_text().strip().endswith("*")
    warm = run()
    assert _outputs(warm) == _outputs(cold)
    # an edited file is analysed again
    (project / "src" / "a.py").write_text(GOOD.replace("print(x)", "x = x + 1"))
    edited = run()
    assert edited.returncode == 2 and "src/a.py" not in edited.stdout


def test_no_cache_and_cache_dir(tmp_path):
    (tmp_path / "a.py").write_text(GOOD)
    assert tcl("--no-cache", "a.py", cwd=tmp_path).returncode == 1
    assert not (tmp_path / ".tcl_cache").exists()
    assert tcl("--cache-dir", "elsewhere", "a.py", cwd=tmp_path).returncode == 1
    assert not (tmp_path / ".tcl_cache").exists()
    assert list((tmp_path / "elsewhere").rglob("*.json"))


def test_corrupt_and_truncated_entries_are_ignored(tmp_path):
    (tmp_path / "a.py").write_text(GOOD)
    (tmp_path / "b.py").write_text(GOOD.replace("print(x)", "print(x, 2)"))
    cold = tcl(".", cwd=tmp_path)
    entries = [p for p in (tmp_path / ".tcl_cache").rglob("*.json")]
    assert len(entries) >= 2
    for i, entry in enumerate(entries):
        text = entry.read_text()
        entry.write_text(["", text[: len(text) // 2], "{}", "[1, 2]", '{"key": 1}', "\x00\xff"][i % 6])
    again = tcl(".", cwd=tmp_path)
    assert _outputs(again) == _outputs(cold)
    assert "Traceback" not in again.stderr
    assert _outputs(tcl(".", cwd=tmp_path)) == _outputs(cold)  # and the repaired entries are read


def test_cache_entry_is_checked_against_its_dependencies(tmp_path):
    dependency = tmp_path / "helpers.py"
    dependency.write_text("def helper(x):\n    return x\n")
    cache = Cache(tmp_path / "cache")
    cache.open_bucket("settings")
    report = FileReport("a.py")
    report.errors = [FileError("a.py", 3, "cannot parse: something")]
    report.dependencies = [str(dependency)]
    hashes = {str(dependency): content_hash(dependency.read_text())}
    key = cache.key("a.py", "", content_hash(GOOD), GOOD)
    cache.put("a.py", key, report, hashes.get)
    stored = cache.get("a.py", key, hashes.get)
    assert stored is not None and stored.errors == report.errors
    hashes[str(dependency)] = "changed"
    assert cache.get("a.py", key, hashes.get) is None


def test_dependency_fingerprint_hook_is_part_of_the_key(tmp_path):
    fingerprint = {"value": "one"}
    cache = Cache(tmp_path / "cache", dependency_fingerprint=lambda path, source, package: fingerprint["value"])
    cache.open_bucket("settings")
    first = cache.key("a.py", "", "hash", "source")
    fingerprint["value"] = "two"
    assert cache.key("a.py", "", "hash", "source") != first


def test_timeouts_and_internal_errors_are_not_cached(tmp_path):
    cache = Cache(tmp_path / "cache")
    cache.open_bucket("settings")
    for message in ("analysis timed out after 20 s", "internal error in TCL101 (x): KeyError: 1"):
        report = FileReport("a.py", errors=[FileError("a.py", 0, message)])
        key = cache.key("a.py", "", message, "")
        cache.put("a.py", key, report, lambda p: None)
        assert cache.get("a.py", key, lambda p: None) is None


def test_concurrent_runs_share_one_cache(tmp_path):
    for i in range(runner.PARALLEL_THRESHOLD + 6):
        (tmp_path / f"m{i:02}.py").write_text(GOOD.replace("print(x)", f"print(x, {i})"))
    command = [sys.executable, "-m", "tcl", "check", "--no-config", "-j", "2", "."]
    procs = [subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(3)]
    outputs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [1, 1, 1], outputs
    assert len({out for out, _ in outputs}) == 1 and all(err == "" for _, err in outputs), outputs
    assert not [p for p in (tmp_path / ".tcl_cache").rglob(".tmp-*")]  # no temporary file left over
    warm = tcl(".", cwd=tmp_path)
    assert (warm.returncode, warm.stdout, warm.stderr) == (1, outputs[0][0], "")


def test_cache_entries_are_plain_json(tmp_path):
    (tmp_path / "a.py").write_text(GOOD)
    result = tcl("a.py", cwd=tmp_path)
    assert result.returncode == 1 and result.stderr == "", result.stderr
    entries = [p for p in (tmp_path / ".tcl_cache").rglob("*.json") if "scans" not in p.parts]
    assert len(entries) == 1, entries
    (entry,) = entries
    data = json.loads(entry.read_text())
    assert data["path"] == "a.py"
    assert data["report"]["findings"][0]["code"] == "TCL101"


# -- issue 14: the same pre-parse guards in every entry point ---------------------------------
GUARDED = {
    "import_7000_parts.py": "import torch\nimport " + ".".join(["a"] * 7000) + "\n",  # libcst segfaulted
    "from_1000_parts.py": "import torch\nfrom " + ".".join(["a"] * 1000) + " import b\n",  # fix: RecursionError
    "line_250k.py": "import torch\ny = [" + "1, " * 84_000 + "]\n",  # minutes and gigabytes in fix
    "line_10mb.py": "import torch\ny = [" + "1, " * 3_500_000 + "]\n",  # 18.6 GB in fix; refused in < 1 s
}


def _one_line_naming(stderr: str, name: str, line: int) -> None:
    mine = [text for text in stderr.splitlines() if text.startswith(name + ":")]
    assert len(mine) == 1, stderr
    assert mine[0].startswith(f"{name}:{line}: cannot parse: "), mine


@pytest.mark.parametrize("name", sorted(GUARDED))
def test_guards_refuse_before_libcst_in_check_and_fix(tmp_path, name):
    (tmp_path / name).write_text(GUARDED[name])
    (tmp_path / "good.py").write_text(GOOD)
    for command in (["check", "--no-cache", "-j1"], ["fix"]):
        started = time.monotonic()
        result = subprocess.run([sys.executable, "-m", "tcl", *command, "--no-config", name, "good.py"],
                                capture_output=True, text=True, cwd=tmp_path, timeout=120)
        assert time.monotonic() - started < 30, command  # refused before any costly parse
        assert result.returncode == 2, (command, result.returncode, result.stderr)
        assert "Traceback" not in result.stderr
        _one_line_naming(result.stderr, name, 2)
        assert "good.py" in result.stdout  # the run went on: good.py's finding, or its diff
    assert (tmp_path / name).read_text() == GUARDED[name]


def test_guards_in_check_with_workers(tmp_path):
    _write_tree(tmp_path, runner.PARALLEL_THRESHOLD + 2)
    (tmp_path / "deep.py").write_text(GUARDED["import_7000_parts.py"])
    result = runner.run([str(tmp_path)], Config(), jobs=2)
    assert [str(e) for e in result.all_errors] == [
        f"{tmp_path / 'deep.py'}:2: cannot parse: a dotted name of more than 100 parts (too deep for libcst's parser)"]
    assert len(result.findings) == runner.PARALLEL_THRESHOLD + 2


@pytest.mark.parametrize("select", [["--select", "TCL"], []])  # flake8's default selection runs tcl too
def test_guards_in_flake8(tmp_path, select):
    (tmp_path / "deep.py").write_text(GUARDED["import_7000_parts.py"])
    (tmp_path / "good.py").write_text(GOOD)
    result = subprocess.run([sys.executable, "-m", "flake8", *select, "--no-show-source", "deep.py", "good.py"],
                            capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert "Traceback" not in result.stderr + result.stdout
    assert "deep.py:2:1: TCL000 tcl could not analyse this file: cannot parse: a dotted name" in result.stdout
    assert "good.py:5:5: TCL101" in result.stdout


def _lsp_message(payload: dict) -> bytes:
    body = json.dumps(payload).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _lsp_messages(stream):
    while True:
        headers = {}
        while True:
            line = stream.readline()
            if not line:
                return
            if line in (b"\r\n", b"\n"):
                break
            key, _, value = line.decode().partition(":")
            headers[key.strip().lower()] = value.strip()
        yield json.loads(stream.read(int(headers["content-length"])))


def test_guards_in_the_lsp(tmp_path):
    pytest.importorskip("pygls")
    document = tmp_path / "deep.py"
    document.write_text(GUARDED["import_7000_parts.py"])
    server = subprocess.Popen([sys.executable, "-m", "tcl", "lsp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, cwd=tmp_path)
    import threading

    watchdog = threading.Timer(120, server.kill)  # a server that never answers fails, not hangs
    watchdog.start()
    try:
        server.stdin.write(_lsp_message({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}}}))
        server.stdin.write(_lsp_message({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        server.stdin.write(_lsp_message({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
            "textDocument": {"uri": document.as_uri(), "languageId": "python", "version": 1,
                             "text": GUARDED["import_7000_parts.py"]}}}))
        server.stdin.flush()
        # The server analyses on a worker thread: wait for the diagnostics, then shut it down.
        diagnostics, shut_down = None, False
        for message in _lsp_messages(server.stdout):
            if message.get("method") == "textDocument/publishDiagnostics":
                diagnostics = message["params"]["diagnostics"]
                server.stdin.write(_lsp_message({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
                server.stdin.flush()
            if message.get("id") == 2:
                shut_down = True
                break
        assert shut_down, "the server died"
        assert [d["message"] for d in diagnostics] == [
            "tcl could not analyse this file: cannot parse: a dotted name of more than 100 parts (too deep for libcst's parser)"]
        assert diagnostics[0]["range"]["start"]["line"] == 1
    finally:
        watchdog.cancel()
        server.kill()
        server.wait()


def test_guards_cost_little_on_a_big_real_file():
    from tcl.guards import refusal

    source = Path(PrintCall.__module__.replace(".", "/") + ".py")
    text = (Path(__file__).resolve().parent.parent / source).read_text() * 40  # ~0.5 MB of real code
    started = time.process_time()
    assert refusal("big.py", text)[0] is None
    assert time.process_time() - started < 5


# -- issue 14: tcl fix bounded per file --------------------------------------------------------
def _fix(tmp_path, monkeypatch, behaviour, *options):
    """`tcl fix` in process over boom.py and good.py, PrintCall's fixer doing `behaviour` on
    boom.py (the fix's child process inherits the patch); (exit status, stdout, stderr)."""
    import io

    from tcl.cli import build_parser, resolve_config
    from tcl.fixing.command import run_fix
    from tcl.rules.side_effects import PrintCall as Rule

    original = Rule.fixer

    def fixer(finding, node, ctx):
        if finding.path.endswith("boom.py"):
            behaviour()
        return original(finding, node, ctx)

    monkeypatch.setattr(Rule, "fixer", staticmethod(fixer))
    (tmp_path / "boom.py").write_text(BOOM)
    (tmp_path / "good.py").write_text(GOOD)
    monkeypatch.chdir(tmp_path)
    args = build_parser().parse_args(["fix", "--no-config", *options, "boom.py", "good.py"])
    out, err = io.StringIO(), io.StringIO()
    status = run_fix(args, resolve_config(args, args.paths), out, err)
    return status, out.getvalue(), err.getvalue()


def _fix_error(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("boom.py")]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("stall", ["sleep", "spin"])
def test_fix_wall_clock_limit(tmp_path, monkeypatch, stall):
    def spin():
        while True:
            pass

    behaviour = (lambda: time.sleep(60)) if stall == "sleep" else spin
    started = time.monotonic()
    status, out, err = _fix(tmp_path, monkeypatch, behaviour, "--apply", "--file-timeout", "1")
    assert time.monotonic() - started < 20
    assert status == 2
    assert _fix_error(err) == "boom.py: fix timed out after 1 s (wall clock); file left unchanged"
    assert (tmp_path / "boom.py").read_text() == BOOM  # untouched
    assert "is_compiling" in (tmp_path / "good.py").read_text()  # the run went on


def test_fix_memory_limit(tmp_path, monkeypatch):
    def grow():
        hoard = []
        while True:
            hoard.append(bytearray(2**24))

    status, out, err = _fix(tmp_path, monkeypatch, grow, "--apply", "--file-memory", "256")
    assert status == 2
    assert _fix_error(err) == "boom.py: fix needed more than 256 MiB of memory; file left unchanged"
    assert (tmp_path / "boom.py").read_text() == BOOM
    assert "is_compiling" in (tmp_path / "good.py").read_text()


def test_fix_native_crash_costs_only_its_file(tmp_path, monkeypatch):
    status, out, err = _fix(tmp_path, monkeypatch, lambda: os.kill(os.getpid(), 11), "--apply")
    assert status == 2
    assert _fix_error(err) == "boom.py: internal error: the fix crashed its process (killed by SIGSEGV); file left unchanged"
    assert (tmp_path / "boom.py").read_text() == BOOM
    assert "is_compiling" in (tmp_path / "good.py").read_text()


def test_fix_of_deep_nesting_python_accepts(tmp_path):
    # 150 nested lists: CPython compiles it (limit 200); libcst's visitors need ~900 frames
    source = GOOD + "y = " + "[" * 150 + "]" * 150 + "\nz = x" + "[0]" * 500 + "\n"
    (tmp_path / "deep.py").write_text(source)
    result = subprocess.run([sys.executable, "-m", "tcl", "fix", "--no-config", "--apply", "deep.py"],
                            capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert result.returncode == 1, result.stderr  # a file changed
    assert result.stderr == "tcl fix: fixed 1 finding in 1 file; 0 remaining\n"


def test_fix_summary_counts_the_findings_of_a_file_it_could_not_fix(tmp_path, monkeypatch):
    import tcl.fixing.apply as apply

    monkeypatch.setattr(apply, "syntax_problem", lambda *a, **k: "invented problem")
    status, out, err = _fix(tmp_path, monkeypatch, lambda: None, "--apply")
    assert status == 2
    assert err.splitlines()[-1] == "tcl fix: fixed 0 findings in 0 files; 2 remaining"


PEP_695 = textwrap.dedent('''\
    import torch

    type Vector = list[float]

    @torch.compile
    def step[T](x: T):
        print(x)
        return x
''')


def test_fix_handles_pep_695_as_check_does(tmp_path):
    (tmp_path / "generic.py").write_text(PEP_695)
    check = tcl("--no-cache", "generic.py", cwd=tmp_path)
    assert check.returncode == 1 and "generic.py:7:5: TCL101" in check.stdout
    fix = subprocess.run([sys.executable, "-m", "tcl", "fix", "--no-config", "--apply", "generic.py"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert fix.returncode == 1, fix.stderr  # a file changed
    assert fix.stderr == "tcl fix: fixed 1 finding in 1 file; 0 remaining\n"
    assert "def step[T](x: T):\n    if not torch.compiler.is_compiling():\n        print(x)" in (tmp_path / "generic.py").read_text()


# -- issue 14: timeouts are wall-clock and reported as timeouts ---------------------------------
def test_file_timeout_counts_wall_clock_time(tmp_path, monkeypatch):
    _broken_print_rule(monkeypatch, lambda: time.sleep(60))  # no CPU time: ITIMER_PROF never fired
    _write_tree(tmp_path, 2, special=BOOM)
    started = time.monotonic()
    result = runner.run([str(tmp_path)], Config(), jobs=1, file_timeout=0.5)
    assert time.monotonic() - started < 10
    assert [str(e) for e in result.all_errors] == [f"{tmp_path / 'slow.py'}: analysis timed out after 0.5 s (wall clock)"]
    assert len(result.findings) == 2


def test_a_timeout_masked_by_the_code_it_interrupted_is_a_timeout(tmp_path, monkeypatch):
    def interrupted_cleanup():  # as libcst's position codegen: a KeyError from a context manager's exit
        try:
            time.sleep(60)
        finally:
            raise KeyError("IndentedBlock(...)")

    _broken_print_rule(monkeypatch, interrupted_cleanup)
    report = runner.analyze_text(BOOM, "boom.py", Analyzer(Config()), 0.5)
    assert [str(e) for e in report.errors] == ["boom.py: analysis timed out after 0.5 s (wall clock)"]


def test_blocked_read_times_out(tmp_path, monkeypatch):
    # a read that never returns (a file swapped for a FIFO mid-run, a hung network mount)
    monkeypatch.setattr(runner, "read_source", lambda path: time.sleep(60))
    started = time.monotonic()
    report, digest = runner._read_and_analyze(str(tmp_path / "m.py"), Analyzer(Config()), 0.5)
    assert time.monotonic() - started < 10
    assert [str(e) for e in report.errors] == [f"{tmp_path / 'm.py'}: reading timed out after 0.5 s (wall clock)"]
    assert digest is None


# -- issue 14: smaller items ------------------------------------------------------------------
def test_one_file_under_two_names_is_checked_once(tmp_path):
    (tmp_path / "good.py").write_text(GOOD)
    result = tcl("--no-cache", "good.py", "./good.py", str(tmp_path / "good.py"), cwd=tmp_path)
    assert result.stdout.count("TCL101") == 1, result.stdout


def test_python_m_tcl_never_imports_the_checked_directory(tmp_path):
    (tmp_path / "libcst.py").write_text("import sys\nsys.stderr.write('IMPORTED\\n')\nraise SystemExit(99)\n")
    (tmp_path / "good.py").write_text(GOOD)
    result = tcl("--no-cache", "good.py", cwd=tmp_path)
    assert "IMPORTED" not in result.stderr
    assert result.returncode == 1 and GOOD_LINE in result.stdout


# -- issue 14: broken configs are one line naming the key, exit 2, never a traceback -----------
BROKEN_CONFIGS = [  # (id, pyproject.toml content, what the one line must name)
    ("version-float", "[tool.tcl]\ntorch-version = 2.13\n", 'torch-version: expected a string "X.Y", got float 2.13'),
    ("version-int", "[tool.tcl]\ntorch-version = 2\n", "torch-version: expected a string"),
    ("version-word", '[tool.tcl]\ntorch-version = "abc"\n', "torch-version: not a torch version: 'abc'"),
    ("version-empty", '[tool.tcl]\ntorch-version = ""\n', "torch-version: not a torch version"),
    ("version-bool", "[tool.tcl]\ntorch-version = true\n", "torch-version: expected a string"),
    ("version-list", "[tool.tcl]\ntorch-version = [2, 13]\n", "torch-version: expected a string"),
    ("select-int", "[tool.tcl]\nselect = 5\n", "select: expected a list of rule codes, got int 5"),
    ("select-mixed", '[tool.tcl]\nselect = ["TCL1", 3]\n', "select: expected a list of rule codes"),
    ("select-unknown", '[tool.tcl]\nselect = ["ZZZ"]\n', "select: unknown rule code ZZZ"),
    ("ignore-table", "[tool.tcl]\nignore = { a = 1 }\n", "ignore: expected a list of rule codes"),
    ("ignore-unknown", '[tool.tcl]\nignore = ["TCL101", "TCL999"]\n', "ignore: unknown rule code TCL999"),
    ("extend-select-bool", "[tool.tcl]\nextend-select = true\n", "extend-select: expected a list of rule codes"),
    ("exclude-int", "[tool.tcl]\nexclude = 3\n", "exclude: expected a list of strings, got int 3"),
    ("exclude-mixed", '[tool.tcl]\nexclude = ["build", 1]\n', "exclude: expected a list of strings"),
    ("extend-exclude-table", "[tool.tcl]\nextend-exclude = { x = 1 }\n", "extend-exclude: expected a list of strings"),
    ("mode-word", '[tool.tcl]\nmode = "nonsense"\n', "mode: expected one of default, fullgraph, got 'nonsense'"),
    ("mode-int", "[tool.tcl]\nmode = 1\n", "mode: expected a string"),
    ("per-file-ignores-list", '[tool.tcl]\nper-file-ignores = ["x"]\n', "per-file-ignores: expected a table"),
    ("per-file-ignores-string", '[tool.tcl]\nper-file-ignores = "x"\n', "per-file-ignores: expected a table"),
    ("per-file-ignores-int-value", '[tool.tcl.per-file-ignores]\n"tests/*" = 1\n',
     "per-file-ignores.tests/*: expected a list of rule codes, got int 1"),
    ("per-file-ignores-table-value", '[tool.tcl.per-file-ignores]\n"tests/*" = { a = 1 }\n',
     "per-file-ignores.tests/*: expected a list of rule codes"),
    ("per-file-ignores-unknown", '[tool.tcl.per-file-ignores]\n"tests/*" = ["ZZZ"]\n',
     "per-file-ignores.tests/*: unknown rule code ZZZ"),
    ("assume-string", '[tool.tcl]\nassume = "inference"\n', "assume: expected a table"),
    ("assume-training-string", '[tool.tcl]\nassume = { training = "no" }\n', "assume.training must be true or false"),
    ("assume-training-int", "[tool.tcl]\nassume = { training = 0 }\n", "assume.training must be true or false"),
    ("assume-dtype", '[tool.tcl]\nassume = { dtype = "int8" }\n', "assume.dtype must be a floating dtype"),
    ("assume-dtype-int", "[tool.tcl]\nassume = { dtype = 3 }\n", "assume.dtype must be a floating dtype"),
    ("assume-device", '[tool.tcl]\nassume = { device = "tpu" }\n', "assume.device must be one of"),
    ("assume-unknown-key", "[tool.tcl]\nassume = { color = 1 }\n", "unknown assume keys: color"),
    ("unknown-key", '[tool.tcl]\nselct = ["TCL1"]\n', "unknown [tool.tcl] keys: selct"),
    ("tool-not-a-table", 'tool = "tcl"\n', "tool: expected a table"),
    ("tcl-not-a-table", "[tool]\ntcl = 1\n", "tool.tcl: expected a table"),
    ("toml-unclosed-list", "[tool.tcl]\nselect = [\n", "cannot read [tool.tcl]"),
    ("toml-duplicate-key", '[tool.tcl]\nmode = "default"\nmode = "fullgraph"\n', "cannot read [tool.tcl]"),
    ("toml-bare-word", "[tool.tcl]\nmode = fullgraph\n", "cannot read [tool.tcl]"),
    ("not-utf8", b'[tool.tcl]\nmode = "\xff"\n', "cannot read [tool.tcl]"),
]
FLAKE8_SAMPLE = {"version-float", "per-file-ignores-list", "select-unknown", "assume-device", "toml-unclosed-list",
                 "not-utf8", "exclude-int"}


def _write_config(tmp_path, content) -> None:
    target = tmp_path / "pyproject.toml"
    target.write_bytes(content if isinstance(content, bytes) else content.encode())


@pytest.mark.parametrize("content, named", [c[1:] for c in BROKEN_CONFIGS], ids=[c[0] for c in BROKEN_CONFIGS])
def test_broken_config_is_one_line_naming_the_key(tmp_path, content, named):
    _write_config(tmp_path, content)
    (tmp_path / "good.py").write_text(GOOD)
    result = subprocess.run([sys.executable, "-m", "tcl", "check", "--no-cache", "good.py"],
                            capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert "Traceback" not in result.stderr + result.stdout
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"tcl: {tmp_path / 'pyproject.toml'}: ") and named in lines[0], lines[0]


@pytest.mark.parametrize("content, named", [c[1:] for c in BROKEN_CONFIGS if c[0] in FLAKE8_SAMPLE],
                         ids=[c[0] for c in BROKEN_CONFIGS if c[0] in FLAKE8_SAMPLE])
def test_broken_config_in_flake8_is_one_line_and_the_run_goes_on(tmp_path, content, named):
    _write_config(tmp_path, content)
    (tmp_path / "good.py").write_text(GOOD)
    (tmp_path / "style.py").write_text("x=1\n")  # flake8's own checks still run
    result = subprocess.run([sys.executable, "-m", "flake8", "--select", "TCL,E225", "good.py", "style.py"],
                            capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert "Traceback" not in result.stderr + result.stdout
    tcl_lines = [line for line in result.stdout.splitlines() if " TCL" in line]
    assert len(tcl_lines) == 1, result.stdout
    assert tcl_lines[0].startswith("good.py:1:1: TCL000 tcl configuration error: ") and named in tcl_lines[0]
    assert "style.py:1:2: E225" in result.stdout


def test_a_string_where_a_list_is_natural(tmp_path):
    _write_config(tmp_path, '[tool.tcl]\nexclude = "build"\nignore = "TCL2"\n')
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "gen.py").write_text(GOOD)
    for name in ("b.py", "u.py", "good.py"):  # split into characters, "build" dropped these
        (tmp_path / name).write_text(GOOD)
    result = subprocess.run([sys.executable, "-m", "tcl", "check", "--no-cache", "."],
                            capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert sorted(line.split(":")[0] for line in result.stdout.splitlines() if "TCL101" in line) == [
        "b.py", "good.py", "u.py"]


@pytest.mark.parametrize("option", ["--select", "--ignore", "--extend-select"])
def test_unknown_code_on_the_command_line(tmp_path, option):
    (tmp_path / "good.py").write_text(GOOD)
    result = tcl("--no-cache", option, "TCL1,ZZZ", "good.py", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr == f"tcl: command line: {option}: unknown rule code ZZZ (`tcl rules` lists them)\n"
    known = tcl("--no-cache", option, "tcl1,TCL20", "good.py", cwd=tmp_path)  # prefixes, any case
    assert known.returncode in (0, 1) and known.stderr == ""


# -- issue 14: the fuzz harness drives `tcl fix` too (bench/fuzz.py --fix, a seeded slice) -------
def test_fuzzed_fixes_never_crash():
    import importlib.util

    spec = importlib.util.spec_from_file_location("tcl_bench_fuzz_fix", Path(__file__).resolve().parent.parent / "bench" / "fuzz.py")
    fuzz = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = fuzz
    spec.loader.exec_module(fuzz)
    fuzz.install_traceback_capture()
    analyzer = Analyzer(Config())
    kinds = []
    for source in fuzz.mutated_programs(40, seed=14, files=fuzz.real_files(limit_torch=8)):
        outcome = fuzz.classify_fix(analyzer, source)
        assert outcome.kind not in fuzz.CRASH_KINDS, (outcome.signature, outcome.detail, source)
        kinds.append(outcome.kind)
    assert "fix-changed" in kinds  # the slice reaches the fixers, not only the parser


def test_attributes_assigned_from_each_other_are_analysed(tmp_path):
    # `self.first = self.second`, `self.second = self.first`: asking which class self.first
    # holds asked it again, each time at the same depth, until Python's recursion limit (two
    # files of torch.fx were "internal error: expression nesting too deep to analyse")
    path = tmp_path / "holder.py"
    path.write_text(textwrap.dedent('''\
        import torch
        from torch import nn


        class Holder(nn.Module):
            def __init__(self):
                super().__init__()
                self.first = self.second
                self.second = self.first

            def swap(self):
                self.first, self.second = self.second, self.first

            def forward(self, x):
                print(x)
                return self.first.run(x)
    '''))
    result = runner.run([str(path)], Config(torch_version="2.13"), jobs=1)
    assert result.all_errors == []
    assert [(f.code, f.line) for f in result.findings] == [("TCL101", 15)]
