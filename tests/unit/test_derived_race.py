"""Derived columns computed off the writer (reindex, term-count filling) never overwrite a
row edited after they were read: they were computed from the older body (issue 20 item 7)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from minionsd.storage import fts, records
from minionsd.storage.database import migrate

NOW = datetime(2026, 12, 1, tzinfo=UTC)


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    db = sqlite3.connect(tmp_path / "state.db", isolation_level=None)
    db.row_factory = sqlite3.Row
    migrate(db)
    try:
        yield db
    finally:
        db.close()


def _insert(conn: sqlite3.Connection, body: str) -> str:
    fields = {"type": "semantic", "scope": "global", "trust": "human", "title": "Plum",
              "body": body, "source": "test", "author": None, "project": None, "agent": None,
              "task": None, "pr": None, "paths": [], "tags": [], "importance": 0.5,
              "confidence": 0.5, "expires_at": None, "created_at": None, "meta": {}}
    return records.insert(conn, fields, NOW, None)


def test_an_edit_between_read_and_write_keeps_its_own_counts(conn: sqlite3.Connection) -> None:
    record_id = _insert(conn, "the old body mentions quince")
    conn.execute("UPDATE memory_records SET term_counts = NULL, search_aux = ''")
    _, changed = fts.derived_after(conn, 0, True, 100)
    assert len(changed) == 1
    records.update_content(conn, record_id, "Plum", "a new body about damsons", NOW)
    fresh = conn.execute("SELECT search_aux, term_counts FROM memory_records").fetchone()
    fts.update_derived(conn, changed)
    row = conn.execute("SELECT search_aux, term_counts FROM memory_records").fetchone()
    assert tuple(row) == tuple(fresh)
    assert "damson" in row["term_counts"] and "quinc" not in row["term_counts"]


def test_an_unchanged_row_gets_its_counts(conn: sqlite3.Connection) -> None:
    _insert(conn, "a body about quince jam")
    conn.execute("UPDATE memory_records SET term_counts = NULL")
    _, changed = fts.derived_after(conn, 0, True, 100)
    fts.update_derived(conn, changed)
    (counts,) = conn.execute("SELECT term_counts FROM memory_records").fetchone()
    assert counts is not None and "quinc" in counts
