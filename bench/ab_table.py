"""The same-call A/B table of two builds' bench rounds (bench_kernel.py --json files named
old_run<r>.json / new_run<r>.json in one folder): one line per shape with each side's rounds and
the best-of-rounds difference, new - old (us), the plan shown once or as old -> new where it
changed, shapes on one side only listed as such. Used by bench/kernel_full_ab.sh; sessions
28-29's run scripts carried this as an inline copy.

    python bench/ab_table.py DIR [OLD_LABEL NEW_LABEL]
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

Key = tuple[str, int, int, int]


def load_side(folder: Path, side: str) -> dict[Key, tuple[list[float], str]]:
    """{(kind, H, extra, T): ([us of each round], plan)} from folder/<side>_run*.json, in round
    order; rows are matched by shape, so a round that lost a row does not shift the others."""
    out: dict[Key, tuple[list[float], str]] = {}
    rounds = []
    for path in folder.glob(f"{side}_run*.json"):
        m = re.fullmatch(rf"{side}_run(\d+)", path.stem)
        if m:
            rounds.append((int(m.group(1)), path))
    for _, path in sorted(rounds):
        try:
            rows = json.loads(path.read_text())["rows"]
        except (OSError, ValueError, KeyError) as e:  # a round cut off by a timeout
            print(f"ab_table: skipped {path.name}: {e}", file=sys.stderr)
            continue
        for row in rows:
            key = (row["kind"], int(row["H"]), int(row["extra"]), int(row["T"]))
            runs, _ = out.get(key, ([], ""))
            out[key] = ([*runs, float(row["ours_us"])], row.get("plan") or "-")
    return out


def table(old: dict[Key, tuple[list[float], str]], new: dict[Key, tuple[list[float], str]],
          labels: tuple[str, str] = ("old", "new")) -> list[str]:
    lines = [f"shape | plan | {labels[0]} us (runs) | {labels[1]} us (runs) | best {labels[1]} - {labels[0]}"]
    for key in [*new, *(k for k in old if k not in new)]:
        runs, plan = new.get(key, ([], ""))
        o, old_plan = old.get(key, ([], ""))
        if not runs:
            diff, plan = f"n/a (no {labels[1]} rows)", old_plan
        elif not o:
            diff = f"n/a (no {labels[0]} rows)"
        else:
            diff = f"{min(runs) - min(o):+.2f}"
            if old_plan != plan:
                plan = f"{old_plan} -> {plan}"
        lines.append(
            f"{key[0]} H={key[1]} +{key[2]} T={key[3]} | {plan} | {' / '.join(f'{v:.2f}' for v in o) or '-'} | "
            f"{' / '.join(f'{v:.2f}' for v in runs) or '-'} | {diff}"
        )
    return lines


def main(argv: list[str]) -> int:
    if len(argv) not in (1, 3) or not Path(argv[0]).is_dir():
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    folder = Path(argv[0])
    old, new = load_side(folder, "old"), load_side(folder, "new")
    if not new:
        print(f"ab_table: no new_run*.json in {folder} (every bench round failed?)", file=sys.stderr)
        return 1
    labels = (argv[1], argv[2]) if len(argv) == 3 else ("old", "new")
    print("\n".join(table(old, new, labels)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
