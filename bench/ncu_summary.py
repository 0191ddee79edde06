"""Summarise a kernel_ncu.sh profile: headline metrics per launch, stall reasons and the
most-stalled SASS instructions per profiled kernel.

    python bench/ncu_summary.py OUTDIR [--top N]     (OUTDIR holds details.csv.gz, source.csv.gz)
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
from collections import Counter
from pathlib import Path

HEADLINE = (
    "Duration", "Elapsed Cycles", "SM Frequency", "Registers Per Thread", "Achieved Occupancy",
    "Issue Slots Busy", "Warp Cycles Per Issued Instruction", "Memory Throughput", "L2 Hit Rate",
)  # fmt: skip


def _rows(path: Path) -> list[list[str]]:
    with gzip.open(path, "rt", encoding="utf-8", newline="") as f:
        return list(csv.reader(io.StringIO(f.read())))


def headline(details: Path) -> list[str]:
    rows = _rows(details)
    col = {h: i for i, h in enumerate(rows[0])}
    per: dict[tuple[str, str, str], dict[str, str]] = {}
    for r in rows[1:]:
        if r[col["Metric Name"]] in HEADLINE:
            name = r[col["Kernel Name"]]
            key = (r[col["ID"]], name[name.find("sparse_mla"):name.find("(")], r[col["Grid Size"]])
            per.setdefault(key, {})[r[col["Metric Name"]]] = f"{r[col['Metric Value']]} {r[col['Metric Unit']]}".strip()
    out = []
    for (lid, name, grid), m in per.items():
        out.append(f"launch {lid} {name} grid {grid}: " + "; ".join(f"{k} {m[k]}" for k in HEADLINE if k in m))
    return out


def stalls(source: Path, top: int) -> list[str]:
    """One block per kernel in the export: a 'Kernel Name' row, a header row, instruction rows."""
    out: list[str] = []
    blocks: list[tuple[str, list[str], list[list[str]]]] = []
    rows = _rows(source)
    i = 0
    while i < len(rows):
        if rows[i] and rows[i][0] == "Kernel Name":
            name, header = rows[i][1], rows[i + 1]
            j = i + 2
            body = []
            while j < len(rows) and not (rows[j] and rows[j][0] == "Kernel Name"):
                if len(rows[j]) == len(header):
                    body.append(rows[j])
                j += 1
            blocks.append((name, header, body))
            i = j
        else:
            i += 1
    seen = set()
    for name, header, body in blocks:
        short = name[name.find("sparse_mla"):name.find("(dsparkctl")]
        if short in seen:  # the export repeats a kernel per launch; the first is enough
            continue
        seen.add(short)
        col = {h: k for k, h in enumerate(header)}
        samples = col["Warp Stall Sampling (All Samples)"]
        reasons = [h for h in header if h.startswith("stall_") and "(Not Issued)" not in h]
        total = sum(int(r[samples] or 0) for r in body)
        why = Counter({h: sum(int(r[col[h]] or 0) for r in body) for h in reasons})
        out.append(f"== {short}: {len(body)} SASS instructions, {total} stall samples")
        out.append("   reasons: " + ", ".join(f"{h[6:]} {100 * n / max(total, 1):.0f}%" for h, n in why.most_common(8) if n))
        out.extend(by_opcode(body, col, samples, reasons))
        base = int(body[0][0], 16) if body else 0
        for r in sorted(body, key=lambda r: -int(r[samples] or 0))[:top]:
            top_reason = max(reasons, key=lambda h: int(r[col[h]] or 0))
            out.append(f"   {int(r[samples] or 0):6d} +{int(r[0], 16) - base:#07x} {top_reason[6:]:<14} {r[1].strip()}")
    return out


def opcode(sass: str) -> str:
    """The opcode family of one SASS line: predicate and modifiers dropped (HMMA.16816.F32 -> HMMA)."""
    words = sass.strip().split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0].split(".")[0] if words else "?"


def by_opcode(body: list[list[str]], col: dict[str, int], samples: int, reasons: list[str]) -> list[str]:
    """Stall samples and executed instructions per opcode family: which kind of work a phase waits on
    (HMMA: tensor pipe, BAR: barriers, LDSM/LDS/STS: shared memory, F2FP/FMUL/...: dequantisation)."""
    executed = col.get("Instructions Executed")
    per: dict[str, list[int]] = {}
    why: dict[str, Counter] = {}
    for r in body:
        op = opcode(r[1])
        n = int(r[samples] or 0)
        e = int(float(r[executed] or 0)) if executed is not None else 0
        acc = per.setdefault(op, [0, 0])
        acc[0] += n
        acc[1] += e
        why.setdefault(op, Counter()).update({h[6:]: int(r[col[h]] or 0) for h in reasons})
    total = max(sum(v[0] for v in per.values()), 1)
    total_e = max(sum(v[1] for v in per.values()), 1)
    out = ["   by opcode (stall samples %, executed %, top reasons):"]
    for op, (n, e) in sorted(per.items(), key=lambda kv: -kv[1][0])[:14]:
        top = ", ".join(f"{k} {100 * v / max(n, 1):.0f}%" for k, v in why[op].most_common(2) if v)
        out.append(f"     {op:<8} {100 * n / total:5.1f}% {100 * e / total_e:5.1f}%  {top}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir", type=Path)
    ap.add_argument("--top", type=int, default=15)
    a = ap.parse_args()
    for line in headline(a.outdir / "details.csv.gz") + stalls(a.outdir / "source.csv.gz", a.top):
        print(line)


if __name__ == "__main__":
    main()
