"""Pruning the consolidation journal keeps every open batch (a restart must redo it)."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

from minionsd.storage import journal
from minionsd.storage.database import migrate
from minionsd.storage.submissions import prune_submissions

T0 = datetime(2030, 1, 1, tzinfo=UTC)


def _note(name: str) -> dict:
    return {"name": name, "content": f"text of {name}", "content_hash": name * 2,
            "author": "dallas", "role": "note"}


def test_prune_keeps_open_and_recent_batches(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "state.db", isolation_level=None)
    conn.row_factory = sqlite3.Row
    migrate(conn)
    journal.create(conn, "B-old-done", "2030-01-01", T0, [_note("a.md"), _note("b.md")])
    journal.set_digest(conn, "B-old-done", "regex", "digest")
    journal.finish(conn, "B-old-done", T0, storm=False)
    journal.create(conn, "B-old-open", "2030-01-01", T0, [_note("c.md")])  # interrupted
    journal.create(conn, "B-new-done", "2030-01-08", T0 + timedelta(days=7), [_note("d.md")])
    journal.set_digest(conn, "B-new-done", "regex", "digest")
    journal.finish(conn, "B-new-done", T0 + timedelta(days=7), storm=False)
    conn.execute("INSERT INTO inbox_submissions (name, at) VALUES ('old.md', ?), "
                 "('new.md', ?)", ("2030-01-01T00:00:00.000Z", "2030-01-08T00:00:00.000Z"))
    conn.execute("INSERT INTO findings (task, name, agent, at) VALUES ('W-1', 'old.md', "
                 "'dallas', '2030-01-01T00:00:00.000Z')")

    assert journal.prune_finished(conn, T0 + timedelta(days=3)) == (1, 2)
    assert prune_submissions(conn, T0 + timedelta(days=3)) == 1
    assert [r[0] for r in conn.execute("SELECT id FROM batches ORDER BY id")] == [
        "B-new-done", "B-old-open"]
    assert journal.open_batch_ids(conn) == ["B-old-open"]
    assert [n.name for n in journal.load(conn, "B-old-open").notes] == ["c.md"]
    assert journal.names_in_open_batches(conn) == {"c.md"}
    assert [r[0] for r in conn.execute("SELECT name FROM inbox_submissions")] == ["new.md"]
    assert conn.execute("SELECT count(*) FROM findings").fetchone()[0] == 1
    assert journal.counters(conn)["batches"] == "2"
    conn.close()
