"""Daemon CPU to consolidate one large note whose front matter needs the full YAML parser.

A note of about 1 MB (just under engine.inbox_max_note_bytes) whose front matter holds
`kN: [vN, {x: N}]` lines is dropped into a fresh home; the daemon's user+system CPU time
(/proc/<pid>/stat) is read before and after `consolidation.run {force: true}`. Each run is
a new daemon and home; with --old DIR, runs of that checkout alternate with this one's, so
both see the same load. CPU time, not wall time, is the figure to compare on a busy machine.

    .venv/bin/python scripts/bench_heavy_note.py [--runs 3] [--old /tmp/other-checkout]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "scripts")]

from bench_common import BenchDaemon  # noqa: E402

from tests.harness import wait_for  # noqa: E402

NOTE_BYTES = 1_000_000


def heavy_note(limit: int = NOTE_BYTES) -> str:
    head = "---\ntitle: Heavy front matter\nnested: {a: [1, 2, {b: c}]}\n"
    tail = "---\nThe body of the heavy note heavybodytoken.\n"
    lines = [head]
    size = len(head) + len(tail)
    n = 0
    while True:
        line = f"k{n}: [v{n}, {{x: {n}}}]\n"
        if size + len(line) > limit:
            break
        lines.append(line)
        size += len(line)
        n += 1
    return "".join(lines) + tail


def one_run(code: Path | None, text: str) -> tuple[float, float]:
    """(daemon CPU seconds, wall seconds) of one forced batch of the heavy note."""
    root = Path(tempfile.mkdtemp(prefix="bhn-", dir="/tmp"))
    home = root / "home"
    home.mkdir(parents=True)
    (home / "config.toml").write_text(
        "[engine]\nauto_consolidate_memory = false\ninbox_settle_ms = 0\n"
        "inbox_max_note_bytes = 1048576\n")
    daemon = BenchDaemon(home, None, code=code)
    try:
        daemon.start()
        staged = root / "heavy.md"
        staged.write_text(text)
        os.rename(staged, home / "notes" / "inbox" / "root-heavy.md")
        wait_for(lambda: any(n["eligible"] for n in daemon.call("inbox.list")["notes"]),
                 timeout=120, what="the heavy note to be eligible")
        before, started = daemon.cpu_seconds(), time.perf_counter()
        result = daemon.call("consolidation.run", force=True)
        wall = time.perf_counter() - started
        cpu = daemon.cpu_seconds() - before
        assert result["notes"] == 1, result
        return cpu, wall
    finally:
        daemon.kill()
        shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--old", type=Path, help="another checkout to run alternately")
    args = parser.parse_args(argv)
    text = heavy_note()
    print(f"note: {len(text.encode()):,} bytes, {text.count(chr(10)):,} lines")
    print("load:", os.getloadavg())
    trees: list[tuple[str, Path | None]] = [("this", None)]
    if args.old:
        trees.insert(0, ("old", args.old))
    figures: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in trees}
    for run in range(args.runs):
        for name, code in trees:
            cpu, wall = one_run(code, text)
            figures[name].append((cpu, wall))
            print(f"run {run + 1} {name}: daemon CPU {cpu:.2f} s, wall {wall:.2f} s", flush=True)
    for name, rows in figures.items():
        cpus = sorted(c for c, _ in rows)
        walls = sorted(w for _, w in rows)
        print(f"{name}: median daemon CPU {cpus[len(cpus) // 2]:.2f} s, "
              f"median wall {walls[len(walls) // 2]:.2f} s over {len(rows)} runs")
    print("load:", os.getloadavg())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
