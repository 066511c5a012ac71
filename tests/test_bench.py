"""`tcl bench` end to end on CPU: the fixed copy loses its breaks and keeps the outputs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
ROOT = Path(__file__).resolve().parent.parent


def test_bench_times_written_and_fixed_versions(tmp_path):
    out = tmp_path / "bench.json"
    result = subprocess.run(
        [sys.executable, "-m", "tcl", "bench", str(ROOT / "fixtures" / "loops.py"), "--device", "cpu",
         "--modes", "default", "--backend", "eager", "--iters", "2", "--warmup", "1", "--json", str(out)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    rows = json.loads(out.read_text())
    assert [r["example"] for r in rows] == ["loops[0] StackedBlocks"]
    row = rows[0]
    assert (row["breaks_written"], row["breaks_fixed"], row["outputs_match"]) == (1, 0, True)
    assert row["eager_ms"] > 0 and row["written_ms"] > 0 and row["fixed_ms"] > 0
    assert "StackedBlocks" in result.stdout  # the table
