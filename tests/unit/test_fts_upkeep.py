"""records.fts_segments / fts_merge_step on a real FTS5 index."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from minionsd import records
from minionsd.db import migrate


def test_merging_leaves_fewer_segments_and_the_same_matches(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "state.db", isolation_level=None)
    migrate(conn)
    assert records.fts_segments(conn) in (None, 0)  # nothing indexed yet
    for i in range(30):  # one transaction each: a segment each until FTS5 merges
        conn.execute(
            "INSERT INTO memory_records (id, type, scope, trust, body, created_at, updated_at) "
            "VALUES (?, 'semantic', 'global', 'human', ?, '2026-01-01', '2026-01-01')",
            (f"M-{i}", f"token refresh retry {i} {'cache' if i % 3 else 'jitter'}"))
    before = records.fts_segments(conn)
    assert before is not None and before > 4
    matches = conn.execute("SELECT rowid FROM memory_fts WHERE memory_fts MATCH 'cache' "
                           "ORDER BY rowid").fetchall()
    left = before
    for _ in range(20):
        left = records.fts_merge_step(conn, 1000)
        if left is not None and left <= 1:
            break
    assert left is not None and left < before and left <= 4
    assert conn.execute("SELECT rowid FROM memory_fts WHERE memory_fts MATCH 'cache' "
                        "ORDER BY rowid").fetchall() == matches
    conn.execute("INSERT INTO memory_fts (memory_fts, rank) VALUES ('integrity-check', 1)")
