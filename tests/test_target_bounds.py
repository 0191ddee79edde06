"""bench/target_bounds.py on the CPU: which issue-3 targets apply to a bench row, the contract's
issued work, the three classes, and the script run over the committed H200 table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from benchscripts import BENCH, load

from dsparkctl.kernel import layout

tb = load("target_bounds")


def _row(kind: str, h: int, extra: int, t: int, us: float, roofline_us: float = 1.0) -> dict:
    valid = 133 if kind == "dspark" else 128
    return {"kind": kind, "H": h, "topk": 192 if kind == "dspark" else 128, "valid": valid,
            "extra": extra, "T": t, "ours_us": us, "roofline_us": roofline_us, "plan": "p",
            "flops": 2.0 * h * (valid + extra) * 1024 * t}


def test_contract_work_is_one_s_pass_and_two_pv_passes_over_the_head_dims() -> None:
    # S and P.V each run over the full head dimension; the issue counts one pass of each.
    assert tb.S_DIMS == tb.PV_DIMS == layout.HEAD_DIM
    assert tb.ISSUE_DIMS == tb.SINGLE_PASS_DIMS
    assert tb.CONTRACT_DIMS == 3 * layout.HEAD_DIM
    row = _row("dspark", 64, 512, 50, 30.0)
    assert tb.issued_flops(row) == pytest.approx(row["flops"] * 1.5)
    assert tb.issued_flops(row, tb.SINGLE_PASS_DIMS) == pytest.approx(row["flops"])


def test_targets_per_row() -> None:
    names = lambda r: [t.name for t in tb.targets(r)]  # noqa: E731
    assert names(_row("dspark", 64, 0, 5, 9.0)) == ["dspark <= 15 us"]
    assert names(_row("decode", 64, 512, 1, 9.0)) == ["T = 1 decode <= 10 us"]
    assert names(_row("decode", 64, 512, 8, 9.0)) == []
    big = _row("decode", 128, 1024, 64, 60.0, roofline_us=24.0)
    assert [(t.name, t.budget_us) for t in tb.targets(big)] == [(">= 50% of roofline", 48.0)]
    # a DSpark row whose roofline is over 10 us carries both targets
    assert names(_row("dspark", 64, 512, 50, 30.0, roofline_us=11.0)) == ["dspark <= 15 us", ">= 50% of roofline"]


def test_classes_follow_the_floors() -> None:
    peak = 800.0
    # 8 GFLOP issued: 10 us at peak, 19.5 us at the published 410 TFLOP/s
    assert tb.classify(9.9, 8e9, peak) == "beyond-peak"
    assert tb.classify(10.1, 8e9, peak) == "beyond-published-rate"
    assert tb.classify(19.4, 8e9, peak) == "beyond-published-rate"
    assert tb.classify(19.6, 8e9, peak) == "within-bounds"


def test_verdicts_mark_met_rows_and_class_unmet_ones() -> None:
    bench = {"meta": {"bf16_matmul_tflops": 800.0},
             "rows": [_row("dspark", 64, 0, 5, 8.0), _row("dspark", 64, 512, 50, 31.0),
                      _row("dspark", 64, 0, 50, 17.0)]}
    vs = tb.verdicts(bench)
    assert [(v.met, v.cls) for v in vs] == [(True, "met"), (False, "beyond-published-rate"),
                                            (False, "within-bounds")]
    heavy = vs[1]
    assert heavy.floor_peak_us == pytest.approx(heavy.issued_gflop * 1e9 / 800e12 * 1e6)
    assert heavy.ours_issued_tflops == pytest.approx(heavy.issued_gflop * 1e3 / 31.0)


def test_script_on_the_committed_h200_table(tmp_path: Path) -> None:
    src = BENCH / "results" / "kernel_h200.json"
    out, md = tmp_path / "b.json", tmp_path / "b.md"
    assert tb.main([str(src), "--json", str(out), "--md", str(md)]) == 0
    doc = json.loads(out.read_text())
    bench = json.loads(src.read_text())
    assert doc["schema_version"] == 1 and doc["counted_dims"] == 1536
    # every verdict's "met" is the bench's own time against the budget
    n_targets = sum(len(tb.targets(r)) for r in bench["rows"])
    assert len(doc["verdicts"]) == n_targets > 0
    for v in doc["verdicts"]:
        assert v["met"] == (v["ours_us"] <= v["budget_us"])
        assert (v["cls"] == "met") == v["met"]
    assert md.read_text().count("\n| ") == n_targets + 1  # header + one line per target


def test_bad_input_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "x.json"
    bad.write_text('{"rows": []}')
    assert tb.main([str(bad)]) == 2
    assert "not a bench_kernel.py result" in capsys.readouterr().err
    assert tb.main([str(tmp_path / "missing.json")]) == 2


def test_single_pass_count_moves_only_the_arithmetic_classes(tmp_path: Path) -> None:
    src = str(BENCH / "results" / "kernel_h200.json")
    two, one = tmp_path / "two.json", tmp_path / "one.json"
    assert tb.main([src, "--json", str(two)]) == 0 and tb.main([src, "--single-pass", "--json", str(one)]) == 0
    a, b = json.loads(two.read_text()), json.loads(one.read_text())
    assert b["counted_dims"] == tb.ISSUE_DIMS
    rank = {"met": 0, "within-bounds": 1, "beyond-published-rate": 2, "beyond-peak": 3}
    for x, y in zip(a["verdicts"], b["verdicts"], strict=True):
        assert (x["shape"], x["target"], x["ours_us"]) == (y["shape"], y["target"], y["ours_us"])
        assert y["floor_peak_us"] == pytest.approx(x["floor_peak_us"] / 1.5)
        assert rank[y["cls"]] <= rank[x["cls"]]  # fewer FLOPs never make a target harder
