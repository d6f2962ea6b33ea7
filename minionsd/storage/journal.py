"""The consolidation journal in state.db: what a batch holds and how far it got.

A batch is written to the journal (with every note's content) before any file changes, and
each later step records its decision (digest text, KB path, archive path, record id) before
acting. A restart redoes open batches; every step checks what is already there, so a crash at
any point ends with each note processed exactly once.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from minionsd.clock import iso


@dataclass(frozen=True)
class JournalNote:
    name: str
    content: str
    content_hash: str
    author: str
    role: str
    kb_path: str | None
    archive_path: str | None
    record_id: str | None
    done: bool


@dataclass(frozen=True)
class Batch:
    id: str
    date: str
    mode: str | None
    digest: str | None
    notes: list[JournalNote]


def create(conn: sqlite3.Connection, batch_id: str, date: str, now: datetime,
           notes: list[dict[str, Any]]) -> None:
    conn.execute("INSERT INTO batches (id, started_at, state, date) VALUES (?, ?, 'open', ?)",
                 (batch_id, iso(now), date))
    conn.executemany(
        """INSERT INTO batch_notes (batch_id, name, content, content_hash, author, role)
           VALUES (:batch_id, :name, :content, :content_hash, :author, :role)""",
        [note | {"batch_id": batch_id} for note in notes],
    )


def load(conn: sqlite3.Connection, batch_id: str) -> Batch:
    row = conn.execute("SELECT * FROM batches WHERE id = ?", (batch_id,)).fetchone()
    notes = [
        JournalNote(r["name"], r["content"], r["content_hash"], r["author"], r["role"],
                    r["kb_path"], r["archive_path"], r["record_id"], bool(r["done"]))
        for r in conn.execute("SELECT * FROM batch_notes WHERE batch_id = ? ORDER BY rowid",
                              (batch_id,))
    ]
    return Batch(row["id"], row["date"], row["mode"], row["digest"], notes)


def open_batch_ids(conn: sqlite3.Connection) -> list[str]:
    return [r[0] for r in conn.execute(
        "SELECT id FROM batches WHERE state = 'open' ORDER BY started_at, id")]


def names_in_open_batches(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute(
        """SELECT n.name FROM batch_notes n JOIN batches b ON b.id = n.batch_id
           WHERE b.state = 'open' AND n.done = 0""")}


def kb_paths_in_open_batches(conn: sqlite3.Connection) -> set[str]:
    """KB entry paths an open (running or interrupted) batch has chosen: the batch writes
    those files and links them to its records itself."""
    return {r[0] for r in conn.execute(
        """SELECT n.kb_path FROM batch_notes n JOIN batches b ON b.id = n.batch_id
           WHERE b.state = 'open' AND n.kb_path IS NOT NULL""")}


def latest_content(conn: sqlite3.Connection, name: str) -> str | None:
    """The text most recently journalled for a note called `name` (any batch), or None."""
    row = conn.execute("SELECT content FROM batch_notes WHERE name = ? "
                       "ORDER BY rowid DESC LIMIT 1", (name,)).fetchone()
    return row[0] if row else None


def latest_archive_path(conn: sqlite3.Connection, name: str) -> str | None:
    """Where the most recent batch that took a note called `name` archived it, or None."""
    row = conn.execute("SELECT archive_path FROM batch_notes WHERE name = ? "
                       "ORDER BY rowid DESC LIMIT 1", (name,)).fetchone()
    return row[0] if row else None


def notes_of_record(conn: sqlite3.Connection, record_id: str) -> list[dict[str, Any]]:
    """Every journalled note that became `record_id`, with its batch's state: {batch_id,
    name, author, kb_path, archive_path, content_hash, done, state}."""
    return [dict(row) for row in conn.execute(
        """SELECT n.batch_id, n.name, n.author, n.kb_path, n.archive_path, n.content_hash,
                  n.done, b.state FROM batch_notes AS n JOIN batches AS b ON b.id = n.batch_id
           WHERE n.record_id = ?""", (record_id,))]


def clear_content(conn: sqlite3.Connection, batch_id: str, name: str) -> None:
    """Forget a finished note's journalled text (a purge); nothing reads it again."""
    conn.execute("UPDATE batch_notes SET content = '' WHERE batch_id = ? AND name = ?",
                 (batch_id, name))


def digest_of(conn: sqlite3.Connection, batch_id: str) -> str | None:
    row = conn.execute("SELECT digest FROM batches WHERE id = ?", (batch_id,)).fetchone()
    return row[0] if row else None


def drop_digest(conn: sqlite3.Connection, batch_id: str) -> None:
    conn.execute("UPDATE batches SET digest = NULL WHERE id = ?", (batch_id,))


def set_digest(conn: sqlite3.Connection, batch_id: str, mode: str, digest: str | None) -> None:
    conn.execute("UPDATE batches SET mode = ?, digest = ? WHERE id = ? AND mode IS NULL",
                 (mode, digest, batch_id))


def set_note(conn: sqlite3.Connection, batch_id: str, name: str, **fields: Any) -> None:
    sets = ", ".join(f"{key} = :{key}" for key in fields)
    conn.execute(f"UPDATE batch_notes SET {sets} WHERE batch_id = :batch_id AND name = :name",
                 fields | {"batch_id": batch_id, "name": name})


Updates = list[tuple[str, dict[str, Any]]]  # (note name, journal fields to set)


def with_fields(batch: Batch, updates: Updates) -> Batch:
    """`batch` as it reads once `updates` are journalled (for deciding before writing)."""
    if not updates:
        return batch
    by_name = dict(updates)
    notes = [dataclasses.replace(n, **by_name[n.name]) if n.name in by_name else n
             for n in batch.notes]
    return dataclasses.replace(batch, notes=notes)


def set_notes(conn: sqlite3.Connection, batch_id: str, updates: Updates) -> None:
    """set_note for each update, one statement per set of fields (executemany)."""
    by_keys: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for name, fields in updates:
        by_keys.setdefault(tuple(fields), []).append(
            fields | {"batch_id": batch_id, "name": name})
    for keys, rows in by_keys.items():
        sets = ", ".join(f"{key} = :{key}" for key in keys)
        conn.executemany(f"UPDATE batch_notes SET {sets} "
                         "WHERE batch_id = :batch_id AND name = :name", rows)


def decide(conn: sqlite3.Connection, batch_id: str, updates: Updates, mode: str | None,
           digest: str | None) -> None:
    """A batch's plan (archive and KB paths) and its digest, journalled in one transaction
    before any file is written; nothing is journalled for a mode already set."""
    set_notes(conn, batch_id, updates)
    if mode is not None:
        set_digest(conn, batch_id, mode, digest)


def finish(conn: sqlite3.Connection, batch_id: str, now: datetime, storm: bool,
           done: tuple[str, ...] | list[str] = ()) -> None:
    """Close the batch; `done` names notes whose archiving is marked in the same commit."""
    set_notes(conn, batch_id, [(name, {"done": 1}) for name in done])
    conn.execute("UPDATE batches SET state = 'done', finished_at = ? WHERE id = ?",
                 (iso(now), batch_id))
    mode = conn.execute("SELECT mode FROM batches WHERE id = ?", (batch_id,)).fetchone()[0]
    bump(conn, "batches")
    if storm:
        bump(conn, "circuit_breaks")
    put(conn, "last_at", iso(now))
    put(conn, "last_mode", mode)


def prune_finished(conn: sqlite3.Connection, before: datetime) -> tuple[int, int]:
    """Delete finished batches (and their notes' journalled text) that ended before `before`;
    (batches, notes) removed. Open batches are never touched: a restart redoes them."""
    old = ("SELECT id FROM batches WHERE state = 'done' AND finished_at IS NOT NULL "
           "AND finished_at < ?")
    cutoff = (iso(before),)
    notes = conn.execute(f"DELETE FROM batch_notes WHERE batch_id IN ({old})", cutoff).rowcount
    batches = conn.execute(f"DELETE FROM batches WHERE id IN ({old})", cutoff).rowcount
    return batches, notes


def bump(conn: sqlite3.Connection, name: str) -> None:
    conn.execute("""INSERT INTO counters (name, value) VALUES (?, '1')
                    ON CONFLICT (name) DO UPDATE SET value = CAST(value AS INTEGER) + 1""",
                 (name,))


def put(conn: sqlite3.Connection, name: str, value: str) -> None:
    conn.execute("""INSERT INTO counters (name, value) VALUES (?, ?)
                    ON CONFLICT (name) DO UPDATE SET value = excluded.value""", (name, value))


def counters(conn: sqlite3.Connection) -> dict[str, str]:
    return {r[0]: r[1] for r in conn.execute("SELECT name, value FROM counters")}
