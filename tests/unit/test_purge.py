"""purge.py on a real SQLite file: nothing of the record left in the bytes, and its fragments."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from minionsd.errors import InvalidState, NotFound
from minionsd.memory import purge
from minionsd.storage import purged, record_fields, records
from minionsd.storage.database import connect, migrate

SECRET = "AKIAZ7QWERTYUIOPASDF/wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEYZZ"
NOW = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)


def _add(conn, body: str, title: str = "") -> str:
    conn.execute("BEGIN IMMEDIATE")
    fields = record_fields.validate_new({"body": body, "title": title, "type": "semantic",
                                   "scope": "global", "trust": "human", "source": "x.md"})
    record_id = records.insert(conn, fields, NOW)
    conn.execute("COMMIT")
    return record_id


def test_no_byte_of_the_record_survives_in_the_database_file(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    conn = connect(db)
    migrate(conn)
    for i in range(40):
        _add(conn, f"filler note {i} about deploy retries and caches")
    leak = _add(conn, f"aws keys for the build box: {SECRET}", title="Build box keys")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert SECRET.encode() in db.read_bytes()

    conn.execute("PRAGMA secure_delete = OFF")  # as a build without SQLITE_SECURE_DELETE has
    conn.execute("BEGIN IMMEDIATE")
    purge.delete_record(conn, leak, "leaked aws key", NOW, ["x.md"], {})
    conn.execute("COMMIT")
    purged.checkpoint(db)
    data = db.read_bytes() + (db.with_name("state.db-wal").read_bytes()
                              if db.with_name("state.db-wal").exists() else b"")
    for piece in (SECRET, SECRET.lower()[:20], "wjalrxutnfemik7mdengbpxrficyexamplekeyzz",
                  "Build box keys"):
        assert piece.encode() not in data, piece
    assert conn.execute("PRAGMA secure_delete").fetchone()[0] == 0  # restored afterwards
    assert purged.audit_row(conn, leak)["reason"] == "leaked aws key"
    missing = purge.explain_missing(conn, leak)
    assert isinstance(missing, NotFound) and missing.code == -32001
    assert "purged at 2030-01-02T03:04:05" in missing.detail and "leaked aws key" in missing.detail
    conn.execute("BEGIN IMMEDIATE")
    with pytest.raises(NotFound, match="leaked aws key"):
        purge.delete_record(conn, leak, "again", NOW, [], {})
    conn.execute("ROLLBACK")
    assert purge.explain_missing(conn, "M-never") is None
    conn.close()


def test_fragments_are_long_words_line_starts_and_the_title() -> None:
    body = ("- The staging deploy reads its login from ops/staging-deploy.sh today.\n"
            "short line\n"
            f"token: {SECRET}\n")
    pieces = purge.fragments("Staging deploy credentials", body)
    assert "ops/staging-deploy.sh" in pieces and SECRET in pieces
    assert "The staging deploy reads its login from ops/stag" in pieces  # 48 characters
    assert "Staging deploy credentials" in pieces
    assert "short line" not in pieces and "token:" not in pieces
    assert purge.fragments("Short", "tiny") == []


@pytest.mark.parametrize("reason", [None, "", "   ", 5, "x" * 1001])
def test_reason_is_required(reason: object) -> None:
    with pytest.raises(Exception) as err:
        purge.check_reason(reason)
    assert getattr(err.value, "code", None) == -32602 and err.value.data == {"param": "reason"}


def test_a_note_still_in_an_open_batch_is_refused_then_its_text_cleared(tmp_path: Path) -> None:
    conn = connect(tmp_path / "state.db")
    migrate(conn)
    leak = _add(conn, f"deploy token {SECRET}")
    conn.execute("INSERT INTO batches (id, started_at, state, mode, digest, date) VALUES "
                 "('B-1', 'x', 'open', 'regex', ?, '2030-01-02')", (f"- token {SECRET}",))
    conn.execute("INSERT INTO batch_notes (batch_id, name, content, content_hash, author, role, "
                 "record_id, done) VALUES ('B-1', 'a.md', ?, 'h', 'dallas', 'note', ?, 0)",
                 (f"deploy token {SECRET}", leak))
    conn.execute("BEGIN IMMEDIATE")
    with pytest.raises(InvalidState, match="B-1"):
        purge.delete_record(conn, leak, "leak", NOW, [], {})
    conn.execute("ROLLBACK")
    assert records.fetch(conn, leak, NOW)["id"] == leak  # nothing changed
    conn.execute("UPDATE batch_notes SET done = 1")
    conn.execute("BEGIN IMMEDIATE")
    purge.delete_record(conn, leak, "leak", NOW, [], {})
    conn.execute("COMMIT")
    assert conn.execute("SELECT content FROM batch_notes").fetchone()[0] == ""
    # The open batch's digest is kept for its redo (the finished note is not read again).
    assert conn.execute("SELECT digest FROM batches").fetchone()[0] == f"- token {SECRET}"
    conn.close()
