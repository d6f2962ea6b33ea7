"""CPU per record of each step of a bulk `memory.add`, in-process, one thread (thread_time,
best of --rounds): what the daemon's event loop, preparing threads and writer do with a batch.
Prints figures; asserts nothing. scripts/bench.py --only load runs it after the load.

    .venv/bin/python scripts/bench_add_steps.py --records 3000

The first pass over the records starts with an empty stem memo (as a daemon just started),
the later passes find every stem remembered. CPU time is what to compare on a shared machine;
with several sessions running, take the best of a few runs.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_data

from minionsd.rpc import methods
from minionsd.rpc.protocol import decode_line, encode_reply
from minionsd.storage import fts, record_rows, records, stem_memo
from minionsd.storage.database import connect, migrate
from minionsd.text.redact import redact

BATCH = 500


def _best(rounds: int, step: Callable[[], Any]) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(rounds):
        began = time.thread_time()
        result = step()
        best = min(best, time.thread_time() - began)
    return best, result


def steps(count: int, rounds: int, seed: int = 1) -> list[tuple[str, float]]:
    """(step, ms of CPU per record) for `count` bench records."""
    vocab = bench_data.Vocabulary(seed)
    params = list(bench_data.record_stream(vocab, seed, 0, count,
                                           datetime(2026, 1, 1, tzinfo=UTC)))
    line = json.dumps([{"jsonrpc": "2.0", "id": i, "method": "memory.add", "params": p}
                       for i, p in enumerate(params)], separators=(",", ":")).encode()
    scratch = sqlite3.connect(":memory:", isolation_level=None,
                              factory=stem_memo.ScratchConnection)
    scratch.stem_memo = stem_memo.StemMemo()
    now = datetime.now(UTC)
    calls = [((), p) for p in params]
    out: list[tuple[str, float]] = []

    def add(name: str, seconds: float) -> None:
        out.append((name, seconds / count * 1000))

    began = time.thread_time()
    for start in range(0, count, BATCH):
        methods._prepare_calls(scratch, calls[start:start + BATCH], now)
    add("prepare, stem memo empty at first", time.thread_time() - began)
    seconds, _ = _best(rounds, lambda: [methods._prepare_calls(scratch, calls[s:s + BATCH], now)
                                        for s in range(0, count, BATCH)])
    add("prepare, every stem remembered", seconds)
    seconds, _ = _best(rounds, lambda: decode_line(line))
    add("  loop: decode the batch line", seconds)
    seconds, fields = _best(rounds, lambda: [methods._new_fields(*a, **k) for a, k in calls])
    add("  validate", seconds)
    seconds, clean = _best(rounds, lambda: [
        {**f, "title": redact(f["title"]), "body": redact(f["body"])} for f in fields])
    add("  redact title and body", seconds)
    seconds, derived = _best(rounds, lambda: records.derive_many(scratch, clean))
    add("  index columns (search_aux, term counts)", seconds)
    plain = sqlite3.connect(":memory:", isolation_level=None)
    seconds, _ = _best(rounds, lambda: [
        fts.term_counts(plain, f["title"], f["body"], f["search_aux"]) for f in derived])
    plain.close()
    add("    (term counts by FTS5 alone, for comparison)", seconds)
    seconds, (ids, _) = _best(rounds, lambda: record_rows.batch_rows(derived, now))
    add("  rows as one JSON text", seconds)
    replies = [{"jsonrpc": "2.0", "id": i, "result": {"id": x}} for i, x in enumerate(ids)]
    seconds, _ = _best(rounds, lambda: [encode_reply(r, "memory.add") for r in replies])
    add("  loop: encode the replies", seconds)
    add("writer: insert + commit (a new database)", _writer_seconds(derived, now))
    return out


def _writer_seconds(derived: list[dict[str, Any]], now: datetime) -> float:
    with tempfile.TemporaryDirectory(prefix="bench-add-") as home:
        conn = connect(Path(home) / "state.db")
        try:
            migrate(conn)
            seconds = 0.0
            for start in range(0, len(derived), BATCH):
                _, rows = record_rows.batch_rows(derived[start:start + BATCH], now)
                began = time.thread_time()
                conn.execute("BEGIN IMMEDIATE")
                if rows is None:
                    for fields in derived[start:start + BATCH]:
                        records.insert(conn, fields, now)
                else:
                    record_rows.insert_batch(conn, rows)
                conn.execute("COMMIT")
                seconds += time.thread_time() - began
        finally:
            conn.close()
    return seconds


def report(count: int, rounds: int) -> list[str]:
    lines = [f"   CPU per record of each step, in-process, {count:,} records, best of {rounds} "
             f"(load average {os.getloadavg()[0]:.2f}):"]
    lines += [f"     {name:<48} {ms:.3f} ms" for name, ms in steps(count, rounds)]
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print("\n".join(report(args.records, args.rounds)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
