"""bench/ws_timeline_summary.py on timelines recorded on the H200 (bench/results/)."""

from __future__ import annotations

import json
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


def test_buffer_wait_fields_only_where_the_producer_waits_for_a_buffer() -> None:
    # synthetic lines of the timeline's format: the copy path (no buffer wait) and a build whose
    # producer waits for a free buffer (the 8-byte path, -DDSPARKCTL_WS_LDG_RAW)
    keys = ("ids_issued", "pv", "s_mma", "epi_stage", "epi_wait2", "epi_wait", "epi_store")
    def line(wait: int) -> str:
        ph = {k: [100 + i, 0] for i, k in enumerate(keys)} | {"epi_wait": [wait, 0]}
        return json.dumps({"H": 128, "extra": 1024, "T": 64, "stream_us_per_call": 57.5, "phase_cycles": ph})
    tool = load("ws_timeline_summary")
    copy_path, waiting = tool.lines("a", line(0))[0], tool.lines("b", line(900))[0]
    assert copy_path == "a 128 1024 64 us 57.5 wg0 tile wait 100 landed 101 raw reads 102 convert 103 prep 104"
    assert waiting.endswith("prep 104 buffer wait 900 loads issue 106")


def test_usage_and_missing_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    tool = load("ws_timeline_summary")
    assert tool.main([]) == 2
    assert tool.main(["nolabel"]) == 2
    assert tool.main([f"x={tmp_path / 'none.jsonl'}"]) == 0
    assert "no timeline" in capsys.readouterr().err


def test_recorded_marks_lines(capsys: pytest.CaptureFixture[str]) -> None:
    """--marks prints what session 29's device script printed from the same timeline (its copy of
    this was inline): the marks of v46 at 1 and 2 splits."""
    run = BENCH / "results" / "kernel_h200_v49_rolled" / "run1" / "marks"
    want = [ln for ln in (run / "marks.txt").read_text().splitlines() if ln.startswith("v46 ")]
    assert len(want) == 5
    tool = load("ws_timeline_summary")
    assert tool.mark_lines("v46", (run / "timeline_v46.jsonl").read_text()) == want
    assert tool.main(["--marks", f"v46={run / 'timeline_v46.jsonl'}"]) == 0
    assert capsys.readouterr().out.splitlines() == want
    assert tool.main(["--marks"]) == 2


def test_tiles_mode_lays_the_three_roles_side_by_side(capsys: pytest.CaptureFixture[str]) -> None:
    """--tiles on session 32's v53 timeline: the three roles run one loop in lockstep, so each role's
    phases per tile must add up to about the same period, and warpgroup 0's loop must span the
    marks from Q in shared memory to the rows staged; a phase read from another role's slot breaks
    both. Only the 64-head (WS) lines are printed."""
    path = BENCH / "results" / "kernel_h200_v53_timeline" / "timeline_v53.jsonl"
    records = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    tool = load("ws_timeline_summary")
    got = tool.tile_lines("v53", path.read_text())
    assert len(got) == sum(r["heads_per_cta"] == 64 for r in records) == 5
    long = next(ln for ln in got if ln.startswith("v53 128 1024 64 "))
    words = long.split()
    f = {words[i]: int(words[i + 1]) for i in range(words.index("tiles"), len(words) - 1, 2)}
    assert f["tiles"] == 18
    period = {r: sum(v for k, v in f.items() if k.startswith(r + ".")) for r in ("wg0", "wg1", "prod")}
    assert max(period.values()) / min(period.values()) < 1.05, period
    assert abs((f["staged_at"] - f["q_smem_at"]) / (18 * period["wg0"]) - 1) < 0.05
    assert tool.main(["--tiles", f"v53={path}"]) == 0
    assert capsys.readouterr().out.splitlines() == got
    assert tool.main(["--tiles"]) == 2


def test_tiles_split_pv_mode_reads_warpgroup_1s_split_slots(capsys: pytest.CaptureFixture[str]) -> None:
    """--tiles-split-pv on a -DDSPARKCTL_TL_SPLIT_PV timeline (session 32, v53): warpgroup 1's issue,
    wgmma wait and hand-offs come from the two slots the producer gives up (its landing wait and first
    copies), so the two consumers still add up to one period each and the producer to less; read
    with --tiles, the same slots would be taken for producer phases and warpgroup 1 would lose
    ~4,000 cycles a tile."""
    path = BENCH / "results" / "kernel_h200_v57_split_copies" / "run1" / "timeline_v53.jsonl"
    tool = load("ws_timeline_summary")

    def fields(lines: list[str]) -> dict[str, int]:
        words = next(ln for ln in lines if " 128 1024 64 " in ln).split()
        return {words[i]: int(words[i + 1]) for i in range(words.index("tiles"), len(words) - 1, 2)}

    split = fields(tool.tile_lines("v53", path.read_text(), tool.ROLES_SPLIT_PV))
    period = {r: sum(v for k, v in split.items() if k.startswith(r + ".")) for r in ("wg0", "wg1", "prod")}
    assert abs(period["wg0"] / period["wg1"] - 1) < 0.05, period
    assert period["prod"] < min(period["wg0"], period["wg1"]), period
    assert split["wg1.issue"] > split["wg1.mma_wait"] > split["wg1.rest"]
    plain = fields(tool.tile_lines("v53", path.read_text()))
    assert plain["wg1.PV"] == split["wg1.rest"]  # the plain reading: warpgroup 1's "P.V" is only its hand-offs
    assert tool.main(["--tiles-split-pv", f"v53={path}"]) == 0
    assert " wg1.issue " in capsys.readouterr().out


def test_events_mode_prints_each_tiles_points_in_order(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """--events on a line of bench/kernel_timeline.cu's -DDSPARKCTL_TL_EVENTS format (synthetic: no
    device run of that build yet): one line per tile the CTA ran (not per recorded slot), points in
    the producer -> warpgroup 0 -> warpgroup 1 order, then the CTA's marks; a record without
    events says how to get them."""
    tool = load("ws_timeline_summary")
    ev = {k: [1000 * (i + 1) + j for j in range(4)] for i, k in enumerate(tool.EVENTS)}
    ev |= {"cta": 7, "tiles": 3, "q_ready_at": 8000, "staged_at": 23000, "written_at": 25000}
    rec = {"H": 64, "extra": 0, "T": 50, "stream_us_per_call": 15.2, "tile_events": ev}
    plain = {"H": 64, "extra": 0, "T": 50, "stream_us_per_call": 15.2}
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(rec) + "\n" + json.dumps(plain) + "\n")
    got = tool.event_lines("r3", path.read_text())
    assert len(got) == 3 + 1 + 1
    assert got[0].startswith("r3 64 0 50 us 15.2 tile 0 prod.landed 1000 prod.published 2000 wg0.ready 3000 ")
    assert got[2].endswith("wg1.PV 9002 wg1.copies 10002")
    assert got[3] == "r3 64 0 50 us 15.2 cta 7 tiles 3 q_ready_at 8000 staged_at 23000 written_at 25000"
    assert "DSPARKCTL_TL_EVENTS" in got[4]
    assert tool.main(["--events", f"r3={path}"]) == 0
    assert capsys.readouterr().out.splitlines() == got
    assert tool.main(["--events"]) == 2


def test_prologue_mode_names_the_points_in_time_order(capsys: pytest.CaptureFixture[str]) -> None:
    """--prologue on session 41's recorded v68 prologue build (bench/results/kernel_h200_ws_prologue/
    run1/timeline/): the ten points in cycle order under their names, then tile 0's landing; a CTA of
    4+ tiles (slot 3 is a real tile) and a record without events get a line saying why, no numbers."""
    tool = load("ws_timeline_summary")
    path = Path(__file__).resolve().parents[1] / "bench/results/kernel_h200_ws_prologue/run1/timeline/timeline_v68pro.jsonl"
    (line,) = tool.prologue_lines("v68", path.read_text())
    names = [n for _, n in tool.PROLOGUE]
    words = line.split()
    got = {w: int(words[i + 1]) for i, w in enumerate(words) if w in names}
    assert set(got) == set(names)
    order = [w for w in words if w in names]
    assert [got[n] for n in order] == sorted(got.values())  # printed by cycle
    assert order[0] == "past_griddep_wait" and got["q_landed"] > got["q_loads_issued"]
    assert got["tile0_copies_issued"] < int(words[words.index("tile0_landed") + 1]) < int(words[words.index("tile0_published") + 1])
    rec = json.loads(path.read_text().splitlines()[0])
    long_chain = rec | {"tile_events": rec["tile_events"] | {"tiles": 18}}
    plain = {k: v for k, v in rec.items() if k != "tile_events"}
    other = tool.prologue_lines("x", json.dumps(long_chain) + "\n" + json.dumps(plain) + "\n")
    assert "18 tiles" in other[0] and "q_landed" not in other[0]
    assert "DSPARKCTL_TL_PROLOGUE" in other[1]
    assert tool.main(["--prologue", f"v68={path}"]) == 0
    assert capsys.readouterr().out.strip() == line


def test_spans_print_what_session_50s_scripts_printed() -> None:
    # the plain timelines of bench/results/kernel_h200_s50_dh_half_bodies/run2/, whose script printed
    # these fields itself (halves.txt): the same values, in the same order
    run2 = BENCH / "results" / "kernel_h200_s50_dh_half_bodies" / "run2"
    tool = load("ws_timeline_summary")
    got = tool.span_lines("timeline_hb1", (run2 / "timeline_hb1.jsonl").read_text())
    want = [ln for ln in (run2 / "halves.txt").read_text().splitlines() if ln.startswith("timeline_hb1 ")]
    assert len(got) == len(want) == 2
    for g, w in zip(got, want, strict=True):
        # halves.txt has no main span / CTA median / max columns: compare the shared ones
        gs, ws = g.split(" ", 6), w.split(" ", 3)
        assert gs[:3] == ws[:3] and g.endswith(ws[3]), (g, w)
    assert "'end_ns': [16480, 14336]" in got[0]
