"""Storage functions the daemon-level tests do not reach on their own, on a real state.db."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from minionsd.storage import job_runs, kb_index, record_fields, records
from minionsd.storage.database import Database, migrate

NOW = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(tmp_path / "state.db", isolation_level=None)
    conn.row_factory = sqlite3.Row
    migrate(conn)
    yield conn
    conn.close()


def _record(conn: sqlite3.Connection, body: str, content_hash: str) -> str:
    fields = record_fields.validate_new({"body": body, "type": "semantic", "scope": "global",
                                   "trust": "human", "source": "x.md"})
    return records.insert(conn, fields, NOW, content_hash)


def _status(conn: sqlite3.Connection, record_id: str) -> str:
    return conn.execute("SELECT status FROM memory_records WHERE id = ?",
                        (record_id,)).fetchone()[0]


def test_ping_answers_on_an_open_database(tmp_path: Path) -> None:
    db = Database(tmp_path / "state.db")
    try:
        assert asyncio.run(db.ping()) is True
    finally:
        db.close()


def test_a_job_run_replaces_the_jobs_previous_result(conn: sqlite3.Connection) -> None:
    job_runs.record_run(conn, "expiry", "2030-01-01T00:00:00.000Z", False, "boom")
    job_runs.record_run(conn, "expiry", "2030-01-01T00:05:00.000Z", True, "expired=0")
    job_runs.record_run(conn, "rescan", "2030-01-01T00:06:00.000Z", True, "")
    assert job_runs.last_runs(conn) == {
        "expiry": {"at": "2030-01-01T00:05:00.000Z", "ok": True, "summary": "expired=0"},
        "rescan": {"at": "2030-01-01T00:06:00.000Z", "ok": True, "summary": ""}}


def test_forgetting_a_file_retracts_only_a_record_that_came_from_a_kb_file(
        conn: sqlite3.Connection) -> None:
    own = _record(conn, "a hand-added entry", "kb:knowledge/conventions/a.md")
    note = _record(conn, "a consolidated note", "0123456789abcdef0123")
    kb_index.link_file(conn, "knowledge/conventions/a.md", "h1", own, NOW)
    kb_index.link_file(conn, "knowledge/conventions/b.md", "h2", note, NOW)

    kb_index.forget_file(conn, "knowledge/conventions/a.md", "swept: stale", NOW)
    kb_index.forget_file(conn, "knowledge/conventions/b.md", "swept: stale", NOW)

    assert kb_index.known_files(conn) == {}
    assert _status(conn, own) == "retracted"
    assert _status(conn, note) == "active"  # its source is the archived note, not the file


def test_a_link_without_a_record_keeps_the_one_it_has(conn: sqlite3.Connection) -> None:
    record_id = _record(conn, "entry", "kb:knowledge/reviews/r.md")
    kb_index.link_file(conn, "knowledge/reviews/r.md", "h1", record_id, NOW)
    kb_index.link_file(conn, "knowledge/reviews/r.md", "h2", None, NOW)
    assert kb_index.known_files(conn) == {"knowledge/reviews/r.md": ("h2", record_id)}
    kb_index.unlink_record(conn, record_id)
    assert kb_index.known_files(conn) == {"knowledge/reviews/r.md": ("h2", None)}


def test_an_entry_id_finds_its_note_record_and_is_no_like_pattern(conn: sqlite3.Connection) -> None:
    record_id = _record(conn, "note", "feedc0de12345678" + "9" * 48)
    rel = "knowledge/project-notes/n.md"
    assert kb_index.record_for_entry(conn, "feedc0de12345678", rel) == record_id
    assert kb_index.record_for_entry(conn, "fe_dc0de", rel) is None  # "_" matches nothing
    assert kb_index.record_for_entry(conn, "%c0de", rel) is None  # nor "%" any run
    # Only a whole entry id binds: empty and partial ids bind nothing (SPEC §3.7 v3).
    assert kb_index.record_for_entry(conn, "", rel) is None
    assert kb_index.record_for_entry(conn, "feedc0de", rel) is None
    # A record another file feeds is that file's: a copy of it binds nothing.
    kb_index.link_file(conn, rel, "h1", record_id, NOW)
    assert kb_index.record_for_entry(conn, "feedc0de12345678", rel) == record_id
    assert kb_index.record_for_entry(conn, "feedc0de12345678",
                                     "knowledge/project-notes/copy.md") is None
    assert kb_index.record_body(conn, record_id) == "note"
    assert kb_index.record_body(conn, "M-none") is None


def test_a_path_back_after_its_record_went_gets_a_fresh_content_hash(
        conn: sqlite3.Connection) -> None:
    rel = "knowledge/conventions/c.md"
    assert kb_index.fresh_hash(conn, rel) == f"kb:{rel}"
    first = _record(conn, "first", f"kb:{rel}")
    assert kb_index.fresh_hash(conn, rel) == f"kb:{rel}"  # still active: reused
    records.retract(conn, first, "deleted", NOW)
    assert kb_index.fresh_hash(conn, rel) == f"kb:{rel}#2"
    second = _record(conn, "second", f"kb:{rel}#2")
    records.retract(conn, second, "deleted again", NOW)
    assert kb_index.fresh_hash(conn, rel) == f"kb:{rel}#3"
