"""bench/ws_timeline_summary.py on timelines recorded on the H200 (bench/results/)."""

from __future__ import annotations

from pathlib import Path

import pytest
from benchscripts import BENCH, load

RUN2 = BENCH / "results" / "kernel_h200_v43_l2_prefetch" / "run2"


def test_recorded_timeline_lines() -> None:
    text = (RUN2 / "timeline_pfl.jsonl").read_text()
    got = load("ws_timeline_summary").lines("pfl", text)
    # the same numbers the run printed (run2/summary.txt), whose script had its own copy of this
    want = [ln for ln in (RUN2 / "summary.txt").read_text().splitlines() if ln.startswith("pfl ")]
    assert len(want) == 2
    assert got == want


def test_usage_and_missing_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    tool = load("ws_timeline_summary")
    assert tool.main([]) == 2
    assert tool.main(["nolabel"]) == 2
    assert tool.main([f"x={tmp_path / 'none.jsonl'}"]) == 0
    assert "no timeline" in capsys.readouterr().err
