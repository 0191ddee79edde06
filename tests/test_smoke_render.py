"""The smoke report's per-shape table, rendered from the real H200 run saved in bench/results."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console

from dsparkctl.commands import smoke

SAVED = Path(__file__).resolve().parents[1] / "bench/results/gpu_suite_h200/smoke_long.json"


def test_kernel_table_and_summaries(monkeypatch) -> None:
    doc = json.loads(SAVED.read_text())
    rows = doc["kernel"]["rows"]
    rows[1] = {**rows[1], "status": "mismatch", "max_err_over_tol": 3.5}
    con = Console(record=True, width=200)
    monkeypatch.setattr(smoke, "console", con)
    smoke._render_kernel(doc["kernel"])
    out = con.export_text()
    assert "Kernel checks (bundled)" in out
    assert out.count("bundled │") == len(rows)
    assert "mismatch" in out and "3.50" in out
    assert "verify-path consistency: 12/12 ok" in out
    assert "long simulation (bundled): 580 steps" in out and "tiny model (bundled)" in out
