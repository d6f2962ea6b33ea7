"""The private FTS5 upkeep: after a burst of writes the index is merged back to few segments."""

from __future__ import annotations

import sqlite3

from minionsd.storage import fts
from tests.conftest import wait_for


def _nothing_to_merge(db) -> bool:
    """A merge step on the daemon's database, rolled back: True when it would do no work."""
    conn = sqlite3.connect(db, isolation_level=None, timeout=10)
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            return not fts.merge_step(conn, 500)
        finally:
            conn.execute("ROLLBACK")
    finally:
        conn.close()


def test_index_segments_are_merged_after_a_write_burst(daemon):
    d = daemon
    # One transaction per record: every memory.add leaves an FTS5 segment behind until merged.
    for i in range(40):
        d.call("memory.add", body=f"note {i}: token refresh retry number {i}", type="semantic",
               scope="global", trust="human", source="test")
    hits_before = d.call("memory.search", query="refresh", limit=50)["total"]
    db = d.home / "engine" / "state.db"
    assert not _nothing_to_merge(db)  # the burst left segments to merge...
    wait_for(lambda: _nothing_to_merge(db), timeout=30)  # ...which the upkeep merges
    assert "index" not in d.call("status")
    # Merging changes how the index is stored, never what it finds.
    assert d.call("memory.search", query="refresh", limit=50)["total"] == hits_before == 40
    assert d.call("memory.search", query="number", limit=5)["total"] == 40


def test_term_counts_missing_after_an_upgrade_are_filled_after_start(make_daemon):
    import sqlite3

    d = make_daemon()
    for i in range(3):
        d.call("memory.add", body=f"kumquat harvest {i}", type="semantic", scope="global",
               trust="human", source="test")
    assert d.stop() == 0
    db = d.home / "engine" / "state.db"
    with sqlite3.connect(db) as conn:  # as migration 0006 leaves rows stored in the old form
        conn.execute("UPDATE memory_records SET term_counts = NULL")

    def missing() -> int:
        with sqlite3.connect(db) as conn:
            return conn.execute(
                "SELECT count(*) FROM memory_records WHERE term_counts IS NULL").fetchone()[0]

    assert missing() == 3
    again = make_daemon()
    wait_for(lambda: missing() == 0, timeout=30)
    task = {"id": "W-1", "title": "kumquat harvest"}
    assert len(again.call("memory.retrieve", task=task)["selected"]) == 3
