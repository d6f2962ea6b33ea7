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
    left, merged = before, True
    for _ in range(50):
        left, merged = records.fts_merge_step(conn, 500)
        if not merged:
            break
    assert not merged  # stops reporting work once no two segments share a level
    assert left is not None and left < before and left <= 4
    assert conn.execute("SELECT rowid FROM memory_fts WHERE memory_fts MATCH 'cache' "
                        "ORDER BY rowid").fetchall() == matches
    conn.execute("INSERT INTO memory_fts (memory_fts, rank) VALUES ('integrity-check', 1)")


def test_a_merged_index_is_not_rewritten_for_one_new_segment(tmp_path: Path) -> None:
    """The upkeep must not rewrite a large merged index each time a note arrives."""
    conn = sqlite3.connect(tmp_path / "state.db", isolation_level=None)
    migrate(conn)
    conn.execute("BEGIN")
    for i in range(2000):
        conn.execute(
            "INSERT INTO memory_records (id, type, scope, trust, body, created_at, updated_at) "
            "VALUES (?, 'semantic', 'global', 'human', ?, '2026-01-01', '2026-01-01')",
            (f"M-{i}", f"note {i} about caches, retries and token refresh number {i % 97}"))
    conn.execute("COMMIT")
    conn.execute("INSERT INTO memory_fts (memory_fts) VALUES ('optimize')")
    structure = conn.execute("SELECT block FROM memory_fts_data WHERE id = 10").fetchone()[0]
    conn.execute(
        "INSERT INTO memory_records (id, type, scope, trust, body, created_at, updated_at) "
        "VALUES ('M-new', 'semantic', 'global', 'human', 'one more', '2026-01-02', '2026-01-02')")
    assert records.fts_segments(conn) == 2
    # The big segment and the new one sit on different levels: nothing is merged or rewritten.
    assert records.fts_merge_step(conn, 500) == (2, False)
    after = conn.execute("SELECT block FROM memory_fts_data WHERE id = 10").fetchone()[0]
    assert after[4:] != structure[4:]  # the new segment is there...
    assert records.fts_merge_step(conn, 500) == (2, False)  # ...and stays until a level fills
