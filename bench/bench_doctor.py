"""Wall time of `dsparkctl doctor --site-packages DIR --json` (median of N runs).

The issue's budget is < 1 s wall and a goal of 0.3 s on the 2-core CI-class
machine; the peer for scale is FlashInfer's own collect_env.py (~1.3 s there).
Prints one JSON object; `--out FILE` also writes it.

    python bench/bench_doctor.py --runs 15 --out bench/results/doctor_wall.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import realwheels

# A pip install byte-compiles the package; a shell with PYTHONDONTWRITEBYTECODE=1 would
# make every run recompile every module and measure that instead.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _time(cmd: list[str], runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        res = subprocess.run(cmd, capture_output=True, text=True, env=ENV)
        out.append(time.perf_counter() - t0)
        if res.returncode not in (0, 1) or ("--json" in cmd and not res.stdout.startswith("{")):
            raise SystemExit(f"doctor failed ({res.returncode}): {res.stderr[-2000:]}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    exe = shutil.which("dsparkctl") or sys.exit("dsparkctl is not on PATH")
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        site = realwheels.site_packages(Path(tmp) / "site", [
            ("flashinfer-python", "0.6.15.post1"), ("sglang", "0.5.17")])
        for label, extra in (("site_packages_json", ["--json"]),
                             ("site_packages_rich", [])):
            cmd = [exe, "doctor", "--site-packages", str(site), "--tp", "2", "--gamma", "5", *extra]
            _time(cmd, 2)  # warm the page cache
            ts = _time(cmd, args.runs)
            results[label] = {"median_s": statistics.median(ts), "min_s": min(ts),
                              "max_s": max(ts), "runs": args.runs, "command": " ".join(cmd)}
        ts = _time([sys.executable, "-c", "pass"], args.runs)
        results["python_startup_peer"] = {"median_s": statistics.median(ts)}
    doc = {
        "bench": "doctor_wall",
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                    "python": platform.python_version()},
        "results": results,
        "budget_s": 1.0, "goal_s": 0.3,
    }
    text = json.dumps(doc, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
