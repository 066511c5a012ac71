"""`tcl verify` end to end: real child processes, the installed torch, CPU and the eager backend.

Budget: the whole file should stay near 90 s on 2 cores.  Each `tcl verify` run starts one child
per example source (Dynamo warm-up, about 2-3 s each), so the fixture files are verified together
in one run (--jobs 2) and the other tests use tiny examples.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tcl import verify
from tcl.verify import matching

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
EXPECT = re.compile(r"#\s*expect:\s*(?P<codes>TCL\d+(?:\s*,\s*TCL\d+)*)(?P<rest>.*)$")
# Fixture files verified at runtime: a for-loop frame skip (loops.py), debuggers and input()
# (misc_hazards.py), a TCL402 f-string that breaks on the next line (compiled_functions.py).
VERIFIED = ("loops.py", "misc_hazards.py", "compiled_functions.py")

torch = pytest.importorskip("torch")


def run_verify(*args: str, cwd: Path = ROOT, backend: str = "eager", timeout: float = 240):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    command = [sys.executable, "-m", "tcl", "verify", *args, "--device", "cpu", "--backend", backend,
               "--format", "json", "--no-config"]
    proc = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    report = json.loads(proc.stdout) if proc.stdout.strip() else None
    return proc.returncode, report, proc.stderr


def marks(path: Path) -> dict[tuple[int, str], str]:
    """(line, code) -> the status the mark expects at runtime: "shadowed" or "not-confirmed" when
    it says so in parentheses, else "confirmed"."""
    found = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        match = EXPECT.search(line)
        if match:
            rest = match.group("rest")
            status = next((s for s in ("shadowed", "not-confirmed") if f"({s})" in rest), "confirmed")
            for code in match.group("codes").split(","):
                found[(number, code.strip())] = status
    return found


# ---------------------------------------------------------------- the bundled fixtures


@pytest.fixture(scope="module")
def fixture_run():
    paths = [f"fixtures/{name}" for name in VERIFIED if (FIXTURES / name).is_file()]
    if not paths:
        pytest.skip("fixture files not present")
    return run_verify(*paths, "--jobs", "2")


@pytest.mark.parametrize("name", VERIFIED)
def test_fixture_marks_are_confirmed_at_runtime(fixture_run, name):
    if not (FIXTURES / name).is_file():
        pytest.skip(f"fixtures/{name} not present")
    rc, report, stderr = fixture_run
    assert report is not None, stderr
    path = f"fixtures/{name}"
    findings = {(f["line"], f["code"]): f for f in report["findings"] if f["path"] == path}
    expected = marks(FIXTURES / name)
    assert expected, "fixture without marks"
    for (line, code), want in sorted(expected.items()):
        finding = findings.get((line, code))
        assert finding is not None, f"{path}:{line} {code}: no static finding"
        assert finding["status"] == want, f"{path}:{line} {code}: {finding}"
    missed = [b for b in report["runtime_breaks"] if b["path"] == path and not b["matched"]]
    assert missed == []
    examples = [e for e in report["examples"] if e["source"] == path]
    assert examples and all(e["status"] == "ok" for e in examples), examples
    assert all(e["seconds"] > 0 for e in examples)


def test_fixture_run_report_shape(fixture_run):
    rc, report, stderr = fixture_run
    assert report is not None, stderr
    # Exit 1 only for findings the fixtures mark not-confirmed (none today); nothing missed.
    marked = {(f"fixtures/{name}", line, code) for name in VERIFIED if (FIXTURES / name).is_file()
              for (line, code), want in marks(FIXTURES / name).items() if want == "not-confirmed"}
    unconfirmed = {(f["path"], f["line"], f["code"]) for f in report["findings"] if f["status"] == "not-confirmed"}
    assert unconfirmed == marked
    assert rc == (1 if marked else 0), stderr
    assert not [g for g in report["persistent_recompiles"] if g["in_checked_file"] and g["missed"]]
    assert set(report) >= {"findings", "runtime_breaks", "recompiles", "examples", "environment",
                           "persistent_recompiles"}
    env = report["environment"]
    assert env["device"] == "cpu" and env["backend"] == "eager" and env["mode"] == "default"
    assert env["torch"] == torch.__version__
    for finding in report["findings"]:
        assert set(finding) >= {"code", "path", "line", "status", "gb", "runtime_reason"}
    for brk in report["runtime_breaks"]:
        assert set(brk) >= {"path", "line", "gb", "reason", "matched"}
    for example in report["examples"]:
        assert set(example) >= {"name", "status", "seconds", "error"}
    # The TCL402 f-string is confirmed by the break on the line that uses it.
    fstrings = [f for f in report["findings"] if f["code"] == "TCL402"]
    assert fstrings and all(f["runtime_line"] > f["line"] for f in fstrings if f["status"] == "confirmed")
    # Recompiles carry the guard that failed, and the first batch change is by design.
    assert report["recompiles"]
    first = report["recompiles"][0]
    assert {"trigger", "reason", "path", "line", "example", "expected"} <= set(first)
    assert any(r["expected"] and "size mismatch" in r["reason"] for r in report["recompiles"])
    # Progress lines on stderr, one per example.
    assert stderr.count("tcl verify: [") == len(report["examples"])


# ---------------------------------------------------------------- isolation: crash and hang


CRASHY = """
import ctypes
import time

import torch


@torch.compile
def noisy(x):
    y = x + 1
    print("noisy")
    return y * 2


def segfault(x):
    ctypes.string_at(0)
    return x


def hang(x):
    time.sleep(60)
    return x


def tcl_examples():
    x = torch.ones(2, 3)
    return [(noisy, (x,), {}), (segfault, (x,), {}), (hang, (x,), {}), (noisy, (x * 2,), {})]
"""


def test_segfault_and_hang_are_that_examples_errors(tmp_path):
    (tmp_path / "crashy.py").write_text(CRASHY)
    rc, report, stderr = run_verify("crashy.py", "--timeout", "5", cwd=tmp_path)
    assert rc == 1, stderr
    statuses = [(e["index"], e["status"]) for e in report["examples"]]
    assert statuses == [(0, "ok"), (1, "crashed"), (2, "timeout"), (3, "ok")], report["examples"]
    crashed, hung = report["examples"][1], report["examples"][2]
    assert "SIGSEGV" in crashed["error"] and "crashy.py:16" in crashed["error"]
    assert "timed out after 5s" in hung["error"]
    (finding,) = report["findings"]
    assert (finding["code"], finding["line"], finding["status"], finding["gb"]) == ("TCL101", 11, "confirmed", "GB0059")


# ---------------------------------------------------------------- --shard and --example


MODULE_A = """
import torch


class A(torch.nn.Module):
    def forward(self, x):
        print("a")
        return x + 1


def tcl_examples():
    return [(A(), (torch.ones(n, 2),), {}) for n in (2, 3, 4)]
"""

MODULE_B = """
import torch


class B(torch.nn.Module):
    def forward(self, x):
        print("b")
        return x * 2


def tcl_examples():
    return [(B(), (torch.ones(n, 2),), {}) for n in (2, 3)]
"""


def test_shards_partition_the_examples(tmp_path):
    (tmp_path / "a.py").write_text(MODULE_A)
    (tmp_path / "b.py").write_text(MODULE_B)
    seen = {}
    for shard in ("1/2", "2/2"):
        rc, report, stderr = run_verify("a.py", "b.py", "--shard", shard, "--jobs", "2", cwd=tmp_path)
        assert rc == 0, stderr
        seen[shard] = sorted((e["source"], e["index"]) for e in report["examples"])
    # Stable index: a.py's 3 examples are 0..2, b.py's 2 are 3..4; shard I keeps index % 2 == I-1.
    assert seen["1/2"] == [("a.py", 0), ("a.py", 2), ("b.py", 1)]
    assert seen["2/2"] == [("a.py", 1), ("b.py", 0)]


def test_example_specs_file_and_module_forms(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "model.py").write_text(textwrap.dedent("""
        import torch


        class Net(torch.nn.Module):
            def forward(self, x):
                y = x * 2
                print("net")
                return y
    """))
    (package / "examples.py").write_text(textwrap.dedent("""
        import torch

        from pkg.model import Net


        def make():
            return [(Net(), (torch.ones(2, 3),), {})]
    """))
    (tmp_path / "more_examples.py").write_text(textwrap.dedent("""
        import torch

        from pkg.model import Net


        def more():
            return [(Net().eval(), (torch.ones(4, 3),), {})]
    """))
    rc, report, stderr = run_verify("pkg/model.py", "--example", "more_examples.py:more",
                                    "--example", "pkg.examples:make", cwd=tmp_path)
    assert rc == 0, stderr
    assert sorted(e["name"] for e in report["examples"]) == ["more_examples.py:more[0] Net",
                                                             "pkg.examples:make[0] Net"]
    (finding,) = report["findings"]
    assert (finding["path"], finding["line"], finding["status"]) == (os.path.join("pkg", "model.py"), 8, "confirmed")
    assert sorted(finding["examples"]) == ["more_examples.py:more[0] Net", "pkg.examples:make[0] Net"]


@pytest.mark.parametrize("args", [
    ("fixtures/mlp_debug.py", "--example", "no-colon"),
    ("fixtures/mlp_debug.py", "--example", "missing_file.py:make"),
    ("fixtures/mlp_debug.py", "--shard", "3/2"),
    ("fixtures/mlp_debug.py", "--mode", "max-autotune"),  # with --backend eager
    ("does/not/exist.py",),
])
def test_usage_errors_exit_2(args):
    rc, report, stderr = run_verify(*args)
    assert rc == 2 and report is None and "tcl verify:" in stderr


def test_help_says_verify_runs_code():
    proc = subprocess.run([sys.executable, "-m", "tcl", "verify", "--help"], cwd=ROOT,
                          capture_output=True, text=True)
    assert "IMPORTS AND EXECUTES" in " ".join(proc.stdout.split())


# ---------------------------------------------------------------- inductor (C++ on CPU)


@pytest.mark.skipif(not (shutil.which("c++") or shutil.which("g++")), reason="inductor on CPU needs a C++ compiler")
def test_inductor_backend_on_cpu(tmp_path):
    # About 15-25 s on 2 cores: inductor compiles C++ for the CPU kernels.
    (tmp_path / "m.py").write_text(textwrap.dedent("""
        import torch


        @torch.compile
        def f(x):
            y = torch.sin(x) * 2
            print("hi")
            return y + 1


        def tcl_examples():
            return [(f, (torch.randn(8),), {})]
    """))
    rc, report, stderr = run_verify("m.py", cwd=tmp_path, backend="inductor")
    assert rc == 0, stderr
    assert report["environment"]["backend"] == "inductor"
    assert [(f["line"], f["status"]) for f in report["findings"]] == [(8, "confirmed")]


# ---------------------------------------------------------------- pure parts (no child process)


def test_parse_spec_and_shard(tmp_path):
    assert verify.parse_shard("2/4") == (2, 4)
    for bad in ("0/4", "5/4", "x", "1/0"):
        with pytest.raises(verify.UsageError):
            verify.parse_shard(bad)
    source = verify.parse_spec("pkg.mod:make")
    assert (source.kind, source.module, source.function) == ("module", "pkg.mod", "make")
    example_file = tmp_path / "ex.py"
    example_file.write_text("")
    source = verify.parse_spec(f"{example_file}:build")
    assert (source.kind, source.path, source.function) == ("file", str(example_file.resolve()), "build")
    for bad in ("nocolon", "pkg.mod:", "a-b:make", f"{tmp_path}/missing.py:make"):
        with pytest.raises(verify.UsageError):
            verify.parse_spec(bad)


def test_file_shape_knows_functions_and_amplifiers(tmp_path):
    path = tmp_path / "shape.py"
    path.write_text(textwrap.dedent("""
        import torch

        def f(x):
            for i in range(2):
                x = x + 1
            with torch.no_grad():
                x = x * 2
            with open("p") as fh:
                pass
            try:
                x = x - 1
            except ValueError:
                pass
            s = f"{x}"

            return s
    """))
    shape = matching.FileShape(str(path))
    function = shape.function_at(6)
    assert function[2] == "f"
    assert shape.amplifier_at(6, function)[2] == "for loop"
    assert shape.amplifier_at(8, function) is None  # torch.no_grad() is resumable
    assert shape.amplifier_at(10, function)[2] == "with block"
    assert shape.amplifier_at(12, function)[2] == "try block"
    assert shape.next_code_line(16) == 17


def test_recompile_matching_by_reference_and_by_guard_name(tmp_path):
    path = tmp_path / "rec.py"
    path.write_text(textwrap.dedent("""
        import torch

        class M(torch.nn.Module):
            def forward(self, x):
                y = x * 2
                self.step += 1
                return y
    """))
    shape_cache = {}

    def shape(p):
        return shape_cache.setdefault(p, matching.FileShape(p))

    real = matching._norm(str(path))
    by_reference = {"reason": f"1/0: self.step == 0 # self.step += 1 # {real[-20:]}:7 in forward",
                    "path": str(path), "line": 5}
    assert matching._recompile_matches(real, 7, by_reference, shape)
    by_name = {"reason": "0/1: self.step == 1", "path": str(path), "line": 5}
    assert matching._recompile_matches(real, 7, by_name, shape)
    unrelated = {"reason": "0/1: tensor 'x' size mismatch at index 0. expected 2, actual 3",
                 "path": str(path), "line": 5}
    assert not matching._recompile_matches(real, 7, unrelated, shape)
