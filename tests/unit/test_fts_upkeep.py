"""fts.merge_step on a real FTS5 index: whether a step did work comes from total_changes."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from minionsd.storage import fts
from minionsd.storage.database import migrate


def _would_merge(conn: sqlite3.Connection) -> bool:
    """Whether a merge step would do any work (run, then rolled back)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        return fts.merge_step(conn, 500)
    finally:
        conn.execute("ROLLBACK")


def test_merging_does_work_then_stops_and_keeps_the_same_matches(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "state.db", isolation_level=None)
    migrate(conn)
    assert not _would_merge(conn)  # nothing indexed yet
    for i in range(30):  # one transaction each: a segment each until FTS5 merges
        conn.execute(
            "INSERT INTO memory_records (id, type, scope, trust, body, created_at, updated_at) "
            "VALUES (?, 'semantic', 'global', 'human', ?, '2026-01-01', '2026-01-01')",
            (f"M-{i}", f"token refresh retry {i} {'cache' if i % 3 else 'jitter'}"))
    matches = conn.execute("SELECT rowid FROM memory_fts WHERE memory_fts MATCH 'cache' "
                           "ORDER BY rowid").fetchall()
    steps = []
    for _ in range(50):
        steps.append(fts.merge_step(conn, 500))
        if not steps[-1]:
            break
    assert steps[0] and not steps[-1]  # work at first, then none once no level has two
    assert not _would_merge(conn)
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
    conn.execute(
        "INSERT INTO memory_records (id, type, scope, trust, body, created_at, updated_at) "
        "VALUES ('M-new', 'semantic', 'global', 'human', 'one more', '2026-01-02', '2026-01-02')")
    # The big segment and the new one sit on different levels: nothing is merged or rewritten.
    before = conn.total_changes
    assert fts.merge_step(conn, 500) is False
    assert fts.merge_step(conn, 500) is False  # ...and stays so until a level fills
    assert conn.total_changes - before <= 2
    assert conn.execute("SELECT count(*) FROM memory_fts WHERE memory_fts MATCH 'one'"
                        ).fetchone()[0] == 1
