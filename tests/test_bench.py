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
         "--modes", "default", "--backend", "eager", "--iters", "2", "--warmup", "1", "--repeats", "3", "--json", str(out)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    rows = json.loads(out.read_text())
    assert [r["example"] for r in rows] == ["loops[0] StackedBlocks"]
    row = rows[0]
    assert (row["breaks_written"], row["breaks_fixed"], row["outputs_match"]) == (1, 0, True)
    assert row["eager_ms"] > 0 and row["written_ms"] > 0 and row["fixed_ms"] > 0
    for label in ("eager", "written", "fixed"):  # the median of 3 repeats lies in their range
        low, high = row[f"{label}_ms_range"]
        assert low <= row[f"{label}_ms"] <= high
    assert row["repeats"] == 3 and row["fixed_vs_written"] in ("faster", "slower", "within noise")
    assert "StackedBlocks" in result.stdout  # the table


def test_within_noise_is_overlap_of_the_ranges():
    from tcl.bench import format_table, within_noise

    row = {"example": "m[0] M", "mode": "default", "eager_ms": 2.0, "eager_ms_range": [1.9, 2.1],
           "written_ms": 1.0, "written_ms_range": [0.9, 1.1], "fixed_ms": 1.05, "fixed_ms_range": [1.0, 1.2],
           "breaks_written": 1, "breaks_fixed": 0, "compile_fixed_s": 1.0, "outputs_match": True}
    assert within_noise(row, "written", "fixed")
    assert not within_noise(row, "eager", "fixed")
    table = format_table([row])
    assert "1.000±10%" in table and "~" in table and "within noise" in table
