"""`memory.retrieve` of this code beside another checkout's, on copies of one loaded database,
alternated: wall p50/p99 and daemon CPU per call, for cycled tasks and tasks never asked.

Loading 100,000 records takes minutes per daemon, and two daemons loaded one after the other
run at different machine loads; here both trees' daemons open a copy of the same state.db
(scripts/count_instructions.py builds one: `--db PATH --records N`; it must be at a schema
version both trees know, the newer daemon migrates its copy) and take turns, one block of
calls each, so drift in the machine's load hits both alike.

    .venv/bin/python scripts/bench_retrieval_ab.py --old /tmp/h24-old --db /tmp/ic100k.sqlite

Each round: the 20 bench tasks cycled `--cycled` times, then `--fresh` tasks no daemon was
asked before (the same ones for both trees); tree order alternates between rounds. CPU is the
daemon's /proc utime+stime over the block (all its threads). Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_data
from bench_common import BenchDaemon, pct, say, write_config

REPO = Path(__file__).resolve().parents[1]
SEED = 7  # the seed scripts/count_instructions.py builds its records with


def copy_db(source: Path, home: Path) -> None:
    target = home / "engine" / "state.db"
    target.parent.mkdir(parents=True, exist_ok=True)
    src = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    dst = sqlite3.connect(target)
    try:
        src.backup(dst)
    finally:
        dst.close()
        src.close()


def block(daemon: BenchDaemon, specs: list[tuple[dict[str, Any], str, str]]
          ) -> tuple[list[float], float]:
    """Wall ms of each call, and the daemon's CPU seconds over the block."""
    times = []
    cpu = daemon.cpu_seconds()
    with daemon.client() as client:
        for task, project, agent in specs:
            began = time.perf_counter()
            client.call("memory.retrieve", {"task": task, "project": project, "agent": agent})
            times.append((time.perf_counter() - began) * 1000)
    return times, daemon.cpu_seconds() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--old", type=Path, required=True, help="a checkout with its own .venv")
    parser.add_argument("--db", type=Path, required=True, help="a loaded state.db to copy")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--cycled", type=int, default=2, help="rounds of 20 tasks per block")
    parser.add_argument("--fresh", type=int, default=20, help="new tasks per block")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="mab-", dir="/tmp"))
    trees = {"old": args.old.resolve(), "new": REPO}
    vocab = bench_data.Vocabulary(SEED)
    cycled = bench_data.tasks(vocab, SEED, 20)
    fresh = bench_data.tasks(vocab, 4242, args.rounds * args.fresh)
    daemons: dict[str, BenchDaemon] = {}
    try:
        for name, code in trees.items():
            home = root / name
            write_config(home, {"engine": {"auto_consolidate_memory": False}})
            copy_db(args.db, home)
            daemon = BenchDaemon(home, None, code=code, python=str(code / ".venv/bin/python"))
            daemons[name] = daemon.start(120)
            block(daemon, cycled * 2)  # warm: caches filled, as in a running daemon
        walls: dict[tuple[str, str], list[float]] = {}
        cpus: dict[tuple[str, str], list[float]] = {}
        say(f"load before: {os.getloadavg()}")
        for number in range(args.rounds):
            order = ("old", "new") if number % 2 == 0 else ("new", "old")
            new_tasks = fresh[number * args.fresh:(number + 1) * args.fresh]
            for name in order:
                for kind, specs in (("cycled", cycled * args.cycled), ("never asked", new_tasks)):
                    times, cpu = block(daemons[name], specs)
                    walls.setdefault((name, kind), []).extend(times)
                    cpus.setdefault((name, kind), []).append(cpu / len(specs) * 1000)
        say(f"load after: {os.getloadavg()}")
        say(f"{'figure':34s} {'old':>9s} {'new':>9s} {'new/old':>8s}")
        for kind in ("cycled", "never asked"):
            rows = {
                f"{kind} p50 ms": lambda n, k=kind: pct(walls[(n, k)], 50),
                f"{kind} p99 ms": lambda n, k=kind: pct(walls[(n, k)], 99),
                f"{kind} daemon CPU ms/call": lambda n, k=kind: sum(cpus[(n, k)])
                / len(cpus[(n, k)]),
            }
            for label, figure in rows.items():
                old, new = figure("old"), figure("new")
                say(f"{label:34s} {old:9.2f} {new:9.2f} {new / old:8.3f}")
        say(f"samples per tree: cycled {len(walls[('old', 'cycled')])}, never asked "
            f"{len(walls[('old', 'never asked')])}")
    finally:
        for daemon in daemons.values():
            daemon.stop()
        shutil.rmtree(root, ignore_errors=True)  # two copies of the database


if __name__ == "__main__":
    main()
