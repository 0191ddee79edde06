"""One line from a `dsparkctl smoke --json` report, for the device scripts' logs: its verdict and the
detail of every error finding (what kernel_device_run.sh and kernel_candidate_check.sh print after
their smoke; the first 1,500 characters).

    python bench/smoke_verdict.py SMOKE.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def verdict_line(report: dict) -> str:
    errors = [f["detail"] for f in report["findings"] if f["severity"] == "error"]
    return f"verdict {report['verdict']} {errors}"[:1500]


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    path = Path(argv[0])
    try:
        report = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        print(f"no smoke report at {path} ({exc}): the smoke failed before writing one", file=sys.stderr)
        return 2
    print(verdict_line(report))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
