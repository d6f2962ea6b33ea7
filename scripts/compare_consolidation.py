"""Consolidation throughput of this checkout and an older one, alternated in the same minutes
(a shared machine's load moves; alternating runs see the same load). Regex path, forced
batches of 50, the notes of scripts/bench.py section 4a; daemon CPU per note beside wall.

    .venv/bin/python scripts/compare_consolidation.py --old /tmp/h24-old --notes 1000 --rounds 2
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_common import Bench, say  # noqa: E402
from bench_compare import consolidation_figures  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", type=Path, required=True, help="older checkout with .venv")
    parser.add_argument("--notes", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    bench = Bench(argparse.Namespace(seed=args.seed, pin=False, keep=False))
    trees = {"old": args.old.resolve(), "new": REPO}
    runs: dict[str, list[dict[str, float]]] = {"old": [], "new": []}
    try:
        for round_no in range(args.rounds):
            for tag in (("old", "new") if round_no % 2 == 0 else ("new", "old")):
                load = os.getloadavg()[0]
                figures = consolidation_figures(bench, trees[tag], f"{tag}{round_no}",
                                                args.notes)
                runs[tag].append(figures)
                say(f"   round {round_no + 1} {tag}: "
                    + ", ".join(f"{k} {v:.2f}" for k, v in figures.items())
                    + f" (load average {load:.2f} before, {os.getloadavg()[0]:.2f} after)")
    finally:
        bench.close()
    say(f"\n   {'median of ' + str(args.rounds) + ' runs':42} {'old':>10} {'new':>10} "
        f"{'new/old':>8}")
    for key in runs["old"][0]:
        old = statistics.median(r[key] for r in runs["old"])
        new = statistics.median(r[key] for r in runs["new"])
        say(f"   {key:42} {old:10.2f} {new:10.2f} {new / old:8.2f}")


if __name__ == "__main__":
    main()
