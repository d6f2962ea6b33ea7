"""kb_index's part in a knowledge file moved by hand, on a real state.db: the link follows the
file, the record's source follows only when it named the old path, and an entry id binds a
file whose record's other file is gone."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from minionsd.storage import kb_index, record_fields, records
from minionsd.storage.database import migrate

NOW = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
A, B = "knowledge/conventions/a.md", "knowledge/reviews/a.md"


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(tmp_path / "state.db", isolation_level=None)
    conn.row_factory = sqlite3.Row
    migrate(conn)
    yield conn
    conn.close()


def _record(conn: sqlite3.Connection, source: str, content_hash: str) -> str:
    fields = record_fields.validate_new({"body": "text", "type": "semantic", "scope": "global",
                                         "trust": "human", "source": source})
    return records.insert(conn, fields, NOW, content_hash)


def _source(conn: sqlite3.Connection, record_id: str) -> str:
    return conn.execute("SELECT source FROM memory_records WHERE id = ?",
                        (record_id,)).fetchone()[0]


def test_a_moved_file_takes_its_link_and_a_source_that_named_it(conn) -> None:
    own = _record(conn, A, f"kb:{A}")
    kb_index.link_file(conn, A, "h1", own, NOW)
    assert kb_index.paths_at(conn, "h1") == [(A, own)]
    kb_index.move_file(conn, A, B, NOW)
    assert kb_index.known_files(conn) == {B: ("h1", own)}
    assert _source(conn, own) == B


def test_a_note_record_keeps_its_archived_source(conn) -> None:
    note = _record(conn, "notes/archive/2030-01-02-n.md", "feedc0de12345678" + "0" * 48)
    kb_index.link_file(conn, A, "h1", note, NOW)
    kb_index.move_file(conn, A, B, NOW)
    assert kb_index.known_files(conn) == {B: ("h1", note)}
    assert _source(conn, note) == "notes/archive/2030-01-02-n.md"


def test_a_move_onto_a_stale_row_replaces_it_and_an_unknown_path_moves_nothing(conn) -> None:
    own = _record(conn, A, f"kb:{A}")
    kb_index.link_file(conn, A, "h1", own, NOW)
    kb_index.link_file(conn, B, "h0", None, NOW)  # a file once known there, since gone
    kb_index.move_file(conn, A, B, NOW)
    assert kb_index.known_files(conn) == {B: ("h1", own)}
    kb_index.move_file(conn, "knowledge/conventions/none.md", A, NOW)
    assert kb_index.known_files(conn) == {B: ("h1", own)}


def test_an_entry_id_binds_past_a_gone_file_only(conn) -> None:
    note = _record(conn, "notes/archive/n.md", "feedc0de12345678" + "0" * 48)
    kb_index.link_file(conn, A, "h1", note, NOW)
    assert kb_index.record_for_entry(conn, "feedc0de12345678", B) is None  # A still there
    assert kb_index.record_for_entry(conn, "feedc0de12345678", B,
                                     gone=lambda path: path == A) == note
    assert kb_index.record_for_entry(conn, "feedc0de12345678", B,
                                     gone=lambda path: False) is None
