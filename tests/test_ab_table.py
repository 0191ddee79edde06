"""bench/ab_table.py and bench/kernel_full_ab.sh on the CPU: the table from bench rounds, and the
script's refusal of bad arguments before it touches anything (its GPU path runs on the device)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from benchscripts import BENCH, load

ab = load("ab_table")


def _round(folder: Path, side: str, r: int, rows: list[tuple[str, int, int, int, float, str]]) -> None:
    data = {"rows": [{"kind": k, "H": h, "extra": e, "T": t, "ours_us": us, "plan": plan} for k, h, e, t, us, plan in rows]}
    (folder / f"{side}_run{r}.json").write_text(json.dumps(data))


def test_table_orders_rounds_numerically_and_lists_one_sided_shapes(tmp_path: Path) -> None:
    _round(tmp_path, "old", 1, [("dspark", 64, 0, 5, 8.6, "small")])  # a shape only the old build ran
    _round(tmp_path, "new", 1, [("dspark", 64, 0, 50, 15.2, "ws")])
    _round(tmp_path, "new", 10, [("dspark", 64, 0, 50, 15.0, "ws"), ("decode", 128, 1024, 1, 12.9, "small")])
    _round(tmp_path, "new", 2, [("dspark", 64, 0, 50, 15.1, "ws")])
    (tmp_path / "new_run.json").write_text("{}")  # no round number: not a round
    (tmp_path / "new_run3.json").write_text('{"rows": [')  # cut off by a timeout: skipped
    old, new = ab.load_side(tmp_path, "old"), ab.load_side(tmp_path, "new")
    assert new[("dspark", 64, 0, 50)][0] == [15.2, 15.1, 15.0]  # numeric round order: 1, 2, 10
    lines = ab.table(old, new, ("v46", "cand"))
    assert lines[0].endswith("best cand - v46")
    assert lines[1] == "dspark H=64 +0 T=50 | ws | - | 15.20 / 15.10 / 15.00 | n/a (no v46 rows)"
    assert lines[2] == "decode H=128 +1024 T=1 | small | - | 12.90 | n/a (no v46 rows)"
    assert lines[3] == "dspark H=64 +0 T=5 | small | 8.60 | - | n/a (no cand rows)"


def test_table_matches_rows_by_shape_and_shows_plan_changes(tmp_path: Path) -> None:
    _round(tmp_path, "old", 1, [("dspark", 64, 0, 50, 16.0, "ws"), ("decode", 128, 1024, 1, 13.0, "large")])
    _round(tmp_path, "old", 2, [("decode", 128, 1024, 1, 12.5, "large"), ("dspark", 64, 0, 50, 15.9, "ws")])
    _round(tmp_path, "new", 1, [("dspark", 64, 0, 50, 15.2, "ws"), ("decode", 128, 1024, 1, 12.9, "small")])
    old, new = ab.load_side(tmp_path, "old"), ab.load_side(tmp_path, "new")
    assert old[("dspark", 64, 0, 50)][0] == [16.0, 15.9]  # round order, rows matched by shape
    lines = ab.table(old, new, ("v46", "cand"))
    assert lines[1] == "dspark H=64 +0 T=50 | ws | 16.00 / 15.90 | 15.20 | -0.70"
    assert lines[2] == "decode H=128 +1024 T=1 | large -> small | 13.00 / 12.50 | 12.90 | +0.40"


def test_table_cli_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert ab.main([]) == 2 and "ab_table.py DIR" in capsys.readouterr().err
    assert ab.main([str(tmp_path)]) == 1 and "no new_run" in capsys.readouterr().err
    _round(tmp_path, "new", 1, [("dspark", 64, 0, 5, 8.6, "small")])
    assert ab.main([str(tmp_path)]) == 0
    assert "n/a (no old rows)" in capsys.readouterr().out


def test_every_bench_shell_script_parses() -> None:
    """bash -n over bench/*.sh and the recorded device scripts: a syntax error would otherwise
    surface only on the device, at the cost of a call."""
    scripts = sorted(BENCH.glob("*.sh")) + sorted((BENCH / "results").glob("*/*.sh"))
    assert len(scripts) > 10
    for script in scripts:
        proc = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True, timeout=30)
        assert proc.returncode == 0, (script, proc.stderr)


def test_device_hold_results_moves_older_records_out_and_back(tmp_path: Path) -> None:
    """bench/device_hold_results.sh on a small git tree of its own: `out` keeps the named result
    dirs and gpu_suite_h200/ (a CPU test reads it), moves the rest to the hold dir and refuses a
    second `out`; `back` restores every tracked file, refuses to overwrite, and refuses when nothing
    is held."""
    repo, hold = tmp_path / "repo", tmp_path / "hold"
    (repo / "bench").mkdir(parents=True)
    shutil.copy(BENCH / "device_hold_results.sh", repo / "bench")
    for d in ("old_a", "old_b", "keep_me", "gpu_suite_h200"):
        (repo / "bench" / "results" / d).mkdir(parents=True)
        (repo / "bench" / "results" / d / "r.txt").write_text(d)
    (repo / "bench" / "results" / "table.md").write_text("top-level file")
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "x"], cwd=repo, check=True)
    env = {**os.environ, "DSPARKCTL_RESULTS_HOLD": str(hold)}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", str(repo / "bench" / "device_hold_results.sh"), *args], capture_output=True,
                              text=True, env=env, timeout=60)

    assert run("out", "keep_me").returncode == 0
    assert sorted(p.name for p in (repo / "bench" / "results").iterdir()) == ["gpu_suite_h200", "keep_me", "table.md"]
    assert sorted(p.name for p in hold.iterdir()) == ["old_a", "old_b"]
    second = run("out")
    assert second.returncode == 2 and "run" in second.stderr and (repo / "bench" / "results" / "keep_me").is_dir()
    (repo / "bench" / "results" / "old_a").mkdir()
    clash = run("back")
    assert clash.returncode == 1 and "not overwriting" in clash.stderr and (hold / "old_a" / "r.txt").exists()
    (repo / "bench" / "results" / "old_a").rmdir()
    assert run("back").returncode == 0 and not hold.exists()
    status = subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True, check=True)
    assert status.stdout == ""
    nothing = run("back")
    assert nothing.returncode == 2 and "nothing held" in nothing.stderr


@pytest.mark.parametrize("args", [[], ["/nonexistent-tree"]])
def test_full_ab_refuses_a_missing_old_tree(args: list[str], tmp_path: Path) -> None:
    env = {**os.environ, "OUT": str(tmp_path)}
    proc = subprocess.run(["bash", str(BENCH / "kernel_full_ab.sh"), *args], capture_output=True, text=True, env=env,
                          timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "usage: OUT=... bash bench/kernel_full_ab.sh OLD_TREE" in proc.stderr
    assert not (tmp_path / "r.tgz").exists()


def test_full_ab_refuses_a_missing_out(tmp_path: Path) -> None:
    tree = tmp_path / "old"
    (tree / "kernels").mkdir(parents=True)
    (tree / "kernels" / "sparse_mla_decode.cu").write_text("// an archived tree\n")
    env = {k: v for k, v in os.environ.items() if k != "OUT"}
    proc = subprocess.run(["bash", str(BENCH / "kernel_full_ab.sh"), str(tree)], capture_output=True, text=True, env=env,
                          timeout=60)
    assert proc.returncode == 2 and "set OUT" in proc.stderr


def test_full_ab_refuses_a_missing_peer(tmp_path: Path) -> None:
    tree = tmp_path / "old"
    (tree / "kernels").mkdir(parents=True)
    (tree / "kernels" / "sparse_mla_decode.cu").write_text("// an archived tree\n")
    out = tmp_path / "out"
    env = {**os.environ, "OUT": str(out), "PEER": str(tmp_path / "no_peer.py")}
    proc = subprocess.run(["bash", str(BENCH / "kernel_full_ab.sh"), str(tree)], capture_output=True, text=True, env=env,
                          timeout=60)
    assert proc.returncode == 2 and "no Triton peer" in proc.stderr
    assert not (out / "r.tgz").exists()


@pytest.mark.parametrize("unset", ["NAME", "FLAGS", "OUT"])
def test_candidate_check_needs_name_flags_and_out(unset: str, tmp_path: Path) -> None:
    """bench/kernel_candidate_check.sh (session 32's one-call check of a WS candidate) stops before
    building anything when its candidate or result folder is not named."""
    env = {**os.environ, "NAME": "x", "FLAGS": "-DX=1", "OUT": str(tmp_path)}
    del env[unset]
    proc = subprocess.run(["bash", str(BENCH / "kernel_candidate_check.sh")], capture_output=True, text=True, env=env,
                          timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "usage: OUT=... NAME=... FLAGS=" in proc.stderr
    assert not (tmp_path / "r.tgz").exists()


@pytest.mark.parametrize("shapes,args", [(None, ["v67="]), ("64 192 133 0 50", [])])
def test_timeline_ab_refuses_missing_shapes_or_variants(shapes: str | None, args: list[str], tmp_path: Path) -> None:
    """bench/kernel_timeline_ab.sh with no SHAPES or no NAME=FLAGS variant: usage and exit 2, before
    it builds anything."""
    env = {k: v for k, v in os.environ.items() if k != "SHAPES"}
    env["OUT"] = str(tmp_path)
    if shapes is not None:
        env["SHAPES"] = shapes
    proc = subprocess.run(["bash", str(BENCH / "kernel_timeline_ab.sh"), *args], capture_output=True, text=True,
                          env=env, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "usage: SHAPES=" in proc.stderr
    assert not list(tmp_path.glob("build_tl_*.log"))
