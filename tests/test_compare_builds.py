"""bench/compare_builds.py decides whether a kernel candidate changed any output bit: its compare
step on saved runs (CPU), including the cases a tolerance check would let through."""

from __future__ import annotations

from pathlib import Path

import torch
from benchscripts import load


def _tool():
    return load("compare_builds")


def _run(out: torch.Tensor, lse: torch.Tensor) -> dict:
    return {"case a": (out, lse), "case b": (out.clone() * 2, lse.clone())}


def test_equal_runs_pass_and_any_changed_bit_fails(tmp_path: Path, capsys) -> None:
    tool = _tool()
    out = torch.randn(3, 4, 512).to(torch.bfloat16)
    lse = torch.randn(3, 4)
    lse[0, 0] = float("inf")  # an empty row
    out[1, 1, 7] = float("nan")
    a, b = tmp_path / "a.pt", tmp_path / "b.pt"
    torch.save(_run(out, lse), a)
    torch.save(_run(out.clone(), lse.clone()), b)
    assert tool.compare(a, b) == 0  # NaN and +inf in the same places compare equal, bit for bit
    assert "2 of 2 cases bit for bit equal" in capsys.readouterr().out

    # one ulp in one output element, or -0.0 for +0.0 in the lse: within any tolerance, still a change
    out2 = out.clone()
    out2.view(torch.int16)[2, 3, 100] += 1
    lse2 = lse.clone()
    lse2[1, 2] = 0.0
    lse[1, 2] = -0.0
    torch.save(_run(out, lse), a)
    torch.save({"case a": (out2, lse.clone()), "case b": (out.clone() * 2, lse2)}, b)
    assert tool.compare(a, b) == 1
    report = capsys.readouterr().out
    assert "0 of 2 cases bit for bit equal" in report
    assert "case a: out differs" in report and "lse equal" in report
    assert "case b: out equal, lse differs" in report


def test_different_case_sets_are_a_failure(tmp_path: Path, capsys) -> None:
    tool = _tool()
    one = (torch.zeros(1, 1, 512, dtype=torch.bfloat16), torch.zeros(1, 1))
    a, b = tmp_path / "a.pt", tmp_path / "b.pt"
    torch.save({"x": one}, a)
    torch.save({"x": one, "y": one}, b)
    assert tool.compare(a, b) == 1
    assert "different case sets" in capsys.readouterr().out
