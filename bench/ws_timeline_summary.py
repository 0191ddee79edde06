"""One line per shape of the warp-specialized kernel's timeline (bench/kernel_timeline.cu JSON lines):
the waits and phases the session-25 device scripts compared, summed over the median CTA's tiles
(thread 0 of each role), so A/B scripts print them without each carrying its own copy of this.
With --marks: the epilogue's marks of a -DDSPARKCTL_TL_CLUSTER_MARKS build instead (thread 0's
cycles since entry, [median, max] over CTAs: both warpgroups staged, the 2-split combine's first
rendezvous passed, its rows written, the end; at 1 split the middle two are the Q marks), in the
form sessions 28-29's device scripts printed them.
With --tiles: every role's phases per tile (the median CTA's sums over its tiles / its tile count),
so the three roles' loops can be laid side by side (session 32: where a tile's ~5,900 cycles go).
--tiles-split-pv: the same for -DDSPARKCTL_TL_SPLIT_PV builds, whose slots 13-14 hold warpgroup 1's
P.V split into issue and wgmma wait instead of the producer's first two phases.
With --events: a -DDSPARKCTL_TL_EVENTS build's per-tile points of the median CTA (SM cycles since
its entry; session 40), one line a tile, then its Q-ready, staged and written marks, so each
role's chain can be read tile by tile: when the producer published the tile, when warpgroup 0
handed its P over, when warpgroup 1's P.V of it ended.
With --prologue: a -DDSPARKCTL_TL_PROLOGUE build's prologue points (session 41; the kernel keeps
them in tile 3's event slots), sorted by cycle, with tile 0's landing and publication and the
written mark: where the start of a CTA of at most 3 tiles goes.
With --spans: per shape the call's span and its CTAs' (session 50): valid length, us per call, the
main kernel's span (ns), the median and slowest CTA's duration (ns), when the CTAs end
([min, p10, p50, p90, max] ns after the first entry; a call ends with its last CTA) and, for the
halves kernel, each half's median end, Q-ready and rows-staged points.
A phase that ends at a named barrier (bar.sync) reads short: ptxas emits BAR.SYNC.DEFER_BLOCKING and
the next clock read issues before the barrier releases, so that wait lands in the following phase
(session 32: warpgroup 1's P-ready wait shows up in its P.V, warpgroup 0's P-free wait in its P).

    python bench/ws_timeline_summary.py [--marks | --tiles | --tiles-split-pv | --events | --prologue | --spans] LABEL=FILE.jsonl [...]
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


# (printed name, timeline phase) per role, in loop order: the WS kernel's lead threads store their
# phase sums at fixed slots (sparse_mla_decode.cu, DSPARKCTL_WS_TL_STORE: warpgroup 0 slots 4-10,
# warpgroup 1 11-12 and 19, the producer 13-18 and 20), which the timeline names after the main
# kernel's phases
ROLES = (
    ("wg0", (("wait", "ids_issued"), ("S", "ids_published"), ("mask", "q_landed"), ("Pfree", "first_copy_issue"),
             ("P", "q_to_smem"), ("PV", "tile_landed"))),
    ("wg1", (("wait", "next_copy_issue"), ("PV", "s"), ("copies", "q_loads_issued"))),
    ("prod", (("first_copies", "p"), ("landed", "pv"), ("raw", "s_mma"), ("convert", "epi_stage"), ("prep", "epi_wait2"))),
)
# -DDSPARKCTL_TL_SPLIT_PV builds: warpgroup 1's P.V phase is then only its hand-offs ("rest")
ROLES_SPLIT_PV = (
    ROLES[0],
    ("wg1", (("wait", "next_copy_issue"), ("issue", "p"), ("mma_wait", "pv"), ("rest", "s"), ("copies", "q_loads_issued"))),
    ("prod", (("raw", "s_mma"), ("convert", "epi_stage"), ("prep", "epi_wait2"))),
)


def tile_lines(label: str, text: str, roles: tuple = ROLES) -> list[str]:
    """Per-tile cycles of each role's phases (64-head WS lines only: the other kernels' slots mean
    other things), then thread 0's Q-in-shared-memory, rows-staged and rows-written marks."""
    out = []
    for a in _records(text):
        if a.get("heads_per_cta") != 64:
            continue
        ph, n = a["phase_cycles"], max(int(a["tiles_max"]), 1)
        fields: list[tuple[str, object]] = [("tiles", n)]
        for role, phases in roles:
            fields += [(f"{role}.{name}", round(ph[key][0] / n)) for name, key in phases]
        fields += [("q_smem_at", ph["ws_q_ready_at"][0]), ("staged_at", ph["ws_staged_at"][0]),
                   ("written_at", ph["ws_written_at"][0])]
        out.append(_line(label, a, ("splits",), fields))
    return out


# the -DDSPARKCTL_TL_EVENTS points (bench/kernel_timeline.cu's "tile_events"), in each tile's order
EVENTS = ("prod.landed", "prod.published", "wg0.ready", "wg0.S", "wg0.mask", "wg0.Pfree", "wg0.P", "wg1.ready",
          "wg1.PV", "wg1.copies")


def event_lines(label: str, text: str) -> list[str]:
    """One line per tile the median CTA ran (of the recorded ones), its points in cycles since
    entry, then a line of its Q-ready, staged and written marks; a record without events (a build
    without -DDSPARKCTL_TL_EVENTS) gets one line saying so."""
    out = []
    for a in _records(text):
        ev = a.get("tile_events")
        if ev is None:
            out.append(_line(label, a, (), [("events", "none (build with -DDSPARKCTL_TL_EVENTS)")]))
            continue
        n = min(int(ev["tiles"]), len(ev[EVENTS[0]]))
        for j in range(n):
            out.append(_line(label, a, (), [("tile", j)] + [(k, ev[k][j]) for k in EVENTS]))
        out.append(_line(label, a, (), [("cta", ev["cta"]), ("tiles", ev["tiles"]), ("q_ready_at", ev["q_ready_at"]),
                                        ("staged_at", ev["staged_at"]), ("written_at", ev["written_at"])]))
    return out


# (event slot name in bench/kernel_timeline.cu's "tile_events", prologue point): DSPARKCTL_WS_PRO's kind k
# is the kernel's WsEvent k, so the harness prints it under that event's name
PROLOGUE = (("wg0.ready", "q_loads_issued"), ("wg0.S", "q_landed"), ("wg0.mask", "q_stored"),
            ("wg0.Pfree", "proxy_fence"), ("wg0.P", "consumers_barrier"), ("wg1.ready", "wg0_setmaxnreg"),
            ("wg1.PV", "producer_setmaxnreg"), ("wg1.copies", "tile0_copies_issued"),
            ("prod.landed", "tile1_copies_issued"), ("prod.published", "past_griddep_wait"))


def prologue_lines(label: str, text: str) -> list[str]:
    """One line per record: the prologue points by cycle, then tile 0's landing and publication and
    the written mark. A CTA of 4 or more tiles used slot 3 for tile 3 (not the prologue), and a build
    without the events has none: each gets a line saying so instead of numbers that mean nothing."""
    out = []
    for a in _records(text):
        ev = a.get("tile_events")
        if ev is None:
            out.append(_line(label, a, (), [("prologue", "none (build with -DDSPARKCTL_TL_EVENTS -DDSPARKCTL_TL_PROLOGUE)")]))
            continue
        if int(ev["tiles"]) > 3:
            out.append(_line(label, a, (), [("prologue", f"none (the CTA ran {ev['tiles']} tiles: slot 3 is tile 3's)")]))
            continue
        points = sorted((ev[slot][3], name) for slot, name in PROLOGUE)
        out.append(_line(label, a, (), [(name, v) for v, name in points]
                         + [("tile0_landed", ev["prod.landed"][0]), ("tile0_published", ev["prod.published"][0]),
                            ("written_at", ev["written_at"])]))
    return out


def span_lines(label: str, text: str) -> list[str]:
    return [
        " ".join(str(x) for x in (label, a["valid"], a["stream_us_per_call"], a["main_span_ns"], a["cta_ns_median"],
                                  a["cta_ns_max"], a.get("cta_end_ns"), a.get("halves")))
        for a in _records(text)
    ]


def main(argv: list[str]) -> int:
    modes = {"--marks": mark_lines, "--tiles": tile_lines, "--events": event_lines, "--prologue": prologue_lines,
             "--spans": span_lines,
             "--tiles-split-pv": lambda label, text: tile_lines(label, text, ROLES_SPLIT_PV)}
    mode = argv[0] if argv and argv[0] in modes else ""
    if mode:
        argv = argv[1:]
    render = modes.get(mode, lines)
    if not argv or any("=" not in a for a in argv):
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    for arg in argv:
        label, path = arg.split("=", 1)
        p = Path(path)
        if not p.is_file():
            print(f"{label}: no timeline at {path} (its run failed or timed out)", file=sys.stderr)
            continue
        print("\n".join(render(label, p.read_text())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
