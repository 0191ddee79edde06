"""One line per shape of the warp-specialized kernel's timeline (bench/kernel_timeline.cu JSON lines):
the waits and phases the session-25 device scripts compared, summed over the median CTA's tiles
(thread 0 of each role), so A/B scripts print them without each carrying its own copy of this.
With --marks: the epilogue's marks of a -DDSPARKCTL_TL_CLUSTER_MARKS build instead (thread 0's
cycles since entry, [median, max] over CTAs: both warpgroups staged, the 2-split combine's first
rendezvous passed, its rows written, the end; at 1 split the middle two are the Q marks), in the
form sessions 28-29's device scripts printed them.

    python bench/ws_timeline_summary.py [--marks] LABEL=FILE.jsonl [LABEL=FILE.jsonl ...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

# (printed name, timeline phase): warpgroup 0's wait for tiles, then the producer's phases
PHASES = (("wg0 tile wait", "ids_issued"), ("landed", "pv"), ("raw reads", "s_mma"), ("convert", "epi_stage"),
          ("prep", "epi_wait2"))
# producer phases only builds that wait for a free buffer have (the 8-byte path, session 26's
# -DDSPARKCTL_WS_LDG_RAW): printed when that wait is there, so the copy path's lines stay as recorded
WAITING = (("buffer wait", "epi_wait"), ("loads issue", "epi_store"))


def _line(label: str, a: dict, head: tuple[str, ...], fields: list[tuple[str, object]]) -> str:
    """One printed line: the label, the shape, the head fields (e.g. splits) by name, the stream
    time, then name value pairs."""
    parts = [label, str(a["H"]), str(a["extra"]), str(a["T"])]
    for key in head:
        parts += [key, str(a[key])]
    parts += ["us", str(a["stream_us_per_call"])]
    for name, value in fields:
        parts += [name, str(value)]
    return " ".join(parts)


def _records(text: str) -> list[dict]:
    return [json.loads(raw) for raw in text.splitlines() if raw.strip()]


def lines(label: str, text: str) -> list[str]:
    out = []
    for a in _records(text):
        ph = a["phase_cycles"]
        phases = PHASES + (WAITING if ph["epi_wait"][0] > 0 else ())
        out.append(_line(label, a, (), [(name, ph[key][0]) for name, key in phases]))
    return out


# (printed name, timeline phase) of the marks build's slots 24, 25, 21 and 23
MARKS = (("both_staged", "ws_range_at"), ("sync1", "ws_q_regs_at"), ("rows_written", "ws_q_ready_at"),
         ("end", "ws_written_at"))


def mark_lines(label: str, text: str) -> list[str]:
    return [
        _line(label, a, ("splits",), [(name, a["phase_cycles"][key]) for name, key in MARKS])
        for a in _records(text)
    ]


def main(argv: list[str]) -> int:
    marks = bool(argv) and argv[0] == "--marks"
    if marks:
        argv = argv[1:]
    if not argv or any("=" not in a for a in argv):
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    for arg in argv:
        label, path = arg.split("=", 1)
        p = Path(path)
        if not p.is_file():
            print(f"{label}: no timeline at {path} (its run failed or timed out)", file=sys.stderr)
            continue
        print("\n".join((mark_lines if marks else lines)(label, p.read_text())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
