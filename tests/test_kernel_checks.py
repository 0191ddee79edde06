"""bench/kernel_checks.sh (the device scripts' shared kernel checks) and bench/smoke_verdict.py on the
CPU: the checks run with stand-ins for compute-sanitizer and the interpreter, so what each one
launches, on which build, is checked without a GPU; the verdict line on recorded smoke reports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from benchscripts import BENCH, load

REPO = BENCH.parent
RESULTS = BENCH / "results"


def test_verdict_line_on_recorded_reports() -> None:
    tool = load("smoke_verdict")
    healthy = json.loads((RESULTS / "kernel_h200_v58_mask_early" / "run1" / "smoke_mke.json").read_text())
    assert tool.verdict_line(healthy) == "verdict healthy []"
    # v51's smoke: the calls beyond FlashMLA's tolerance (bench/results/smoke_h200_v51/)
    bad = json.loads((RESULTS / "kernel_h200_v52_hilo" / "run1" / "smoke_v51.json").read_text())
    errors = [f for f in bad["findings"] if f["severity"] == "error"]
    line = tool.verdict_line(bad)
    assert line.startswith(f"verdict {bad['verdict']} [") and bad["verdict"] != "healthy" and errors
    assert errors[0]["detail"][:40] in line and len(line) <= 1500


def test_verdict_usage_and_missing_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tool = load("smoke_verdict")
    assert tool.main([]) == 2
    assert tool.main([str(tmp_path / "none.json")]) == 2
    (tmp_path / "cut.json").write_text('{"verdict": ')
    assert tool.main([str(tmp_path / "cut.json")]) == 2
    assert "the smoke failed before writing one" in capsys.readouterr().err


def _stand_ins(tmp_path: Path) -> tuple[Path, Path, Path]:
    """compute-sanitizer and an interpreter that log what they were asked to run (and on which
    DSPARKCTL_KERNEL_SO) to calls.log; the interpreter runs bench/smoke_verdict.py for real."""
    bin_dir, calls = tmp_path / "bin", tmp_path / "calls.log"
    bin_dir.mkdir()
    san = bin_dir / "compute-sanitizer"
    san.write_text(f'#!/usr/bin/env bash\necho "sanitizer $DSPARKCTL_KERNEL_SO | $*" >> {calls}\n'
                   'case "$*" in *racecheck_ws_probe*) printf "ok\\nok\\nok\\n========= RACECHECK SUMMARY: 0 hazards\\n";; '
                   '*) echo "========= ERROR SUMMARY: 0 errors";; esac\n')
    py = bin_dir / "py"
    py.write_text(f'#!/usr/bin/env bash\nif [ "$1" = -m ] && [ "$2" = dsparkctl ]; then\n'
                  f'  echo "python $DSPARKCTL_KERNEL_SO | $*" >> {calls}\n'
                  '  echo \'{"schema_version": 1, "verdict": "healthy", "findings": []}\'\n'
                  f'else exec {sys.executable} "$@"; fi\n')
    for f in (san, py):
        f.chmod(0o755)
    return bin_dir, py, calls


def test_checks_run_each_tool_on_its_build(tmp_path: Path) -> None:
    bin_dir, py, calls = _stand_ins(tmp_path)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "PY": str(py), "CHECK_TIMEOUT": "60"}
    script = (f". bench/kernel_checks.sh; kernel_sanitizers /so/ship.so /so/rc.so 3; "
              f"kernel_ws_race_probe /so/rc.so {tmp_path / 'probe.log'}; kernel_smoke /so/ship.so {tmp_path / 'smoke.json'}")
    proc = subprocess.run(["bash", "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = calls.read_text().splitlines()
    assert len(lines) == 4, lines
    assert lines[0].startswith("sanitizer /so/ship.so | --tool memcheck ") and "sanitizer_subset or clustered_ctas" in lines[0]
    assert lines[1].startswith("sanitizer /so/rc.so | --tool racecheck ") and "sanitizer_subset and T2" in lines[1]
    assert lines[2].startswith("sanitizer /so/rc.so | --tool racecheck ") and lines[2].endswith("bench/racecheck_ws_probe.py")
    assert lines[3] == "python /so/ship.so | -m dsparkctl smoke --kernel bundled --tp 4 --json"
    out = proc.stdout
    assert "== memcheck (/so/ship.so)" in out and "== racecheck (/so/rc.so)" in out
    assert "3 launches ok | ========= RACECHECK SUMMARY: 0 hazards" in out
    assert out.rstrip().endswith("smoke (--kernel bundled --tp 4): rc 0 verdict healthy []")
    assert json.loads((tmp_path / "smoke.json").read_text())["verdict"] == "healthy"


def test_device_scripts_use_the_shared_checks() -> None:
    """Both device scripts source the shared checks rather than carrying their own copies."""
    for name in ("kernel_device_run.sh", "kernel_candidate_check.sh"):
        text = (BENCH / name).read_text()
        assert ". bench/kernel_checks.sh" in text, name
        assert "kernel_sanitizers " in text and "kernel_ws_race_probe " in text and "kernel_smoke " in text, name
        # their own copies' marks: the racecheck subset, the probe's command line, the inline verdict
        assert "sanitizer_subset and T2" not in text and "python3 bench/racecheck_ws_probe.py" not in text, name
        assert "$PY bench/racecheck_ws_probe.py" not in text and "print('verdict'" not in text, name
