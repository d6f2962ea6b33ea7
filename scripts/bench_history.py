"""Cost of moving digest sections into a large notes/archive/notes-history.md, per batch.

Builds a history of --mb megabytes in a temporary directory, then moves one section into it
--batches times the way consolidation does (a read of the file's last 2 x 50 kB, twice
`engine.notes_max_bytes`' default; `notesfile.history_addition`; `fileio.append_synced`),
and, for comparison, the same number of times by reading the whole file and replacing it
(`notesfile.append_history`, `fileio.atomic_write_text`: what a whole rewrite costs). Prints
wall and CPU milliseconds per batch and the bytes written.

    .venv/bin/python scripts/bench_history.py [--mb 10] [--batches 20]
    .venv/bin/python scripts/bench.py --only history      # the same, at 10 MB
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from minionsd.fileio import (  # noqa: E402
    append_synced,
    atomic_write_text,
    read_tail,
    read_text,
)
from minionsd.text import notesfile  # noqa: E402

NOTES_MAX_BYTES = 50_000  # engine.notes_max_bytes' default


def _section(n: int) -> str:
    digest = (f"### 2026-05-07: digest {n}\n**By:** Engine (regex fallback)\n\n"
              + f"- a finding about build {n} and what caused it\n" * 20)
    return notesfile.render_section(digest, f"b{n}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=10.0)
    parser.add_argument("--batches", type=int, default=20)
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="bench-history-"))
    try:
        history = root / "notes-history.md"
        parts, size, n = [notesfile.HISTORY_HEADER], 0, 0
        while size < args.mb * 1e6:
            parts.append(_section(n))
            size += len(parts[-1])
            n += 1
        atomic_write_text(history, "".join(parts))
        print(f"history {history.stat().st_size / 1e6:.1f} MB, {args.batches} batches each way")
        for how in ("append", "rewrite"):
            written = 0
            wall, cpu = time.perf_counter(), time.process_time()
            for i in range(args.batches):
                moved = _section(1_000_000 + n + i)
                if how == "append":  # the end consolidation reads: twice a full notes.md
                    window = 2 * NOTES_MAX_BYTES + 4096
                    addition = notesfile.history_addition(read_tail(history, window) or b"",
                                                          moved)
                    append_synced(history, addition)
                    written += len(addition)
                else:
                    text = notesfile.append_history(read_text(history), moved)
                    atomic_write_text(history, text)
                    written += len(text.encode("utf-8"))
            n += args.batches
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            print(f"   {how:8} {1000 * wall / args.batches:8.2f} ms wall "
                  f"{1000 * cpu / args.batches:8.2f} ms CPU "
                  f"{written / args.batches / 1e3:10.1f} kB written per batch")
    finally:
        shutil.rmtree(root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
