"""Records purged for good, in storage: the audit table and the statements of a purge.

Owns the table `purged_records` (migration 0008: id, reason, when, source, the files that
still held the text) and the storage side of memory.purge's write transaction: the record's
text for the decisions, the delete with its audit row, SQLite's `secure_delete` for that
transaction, the FTS index merged into one segment, and the WAL checkpoint afterwards. What
is purged and what is refused (a record whose batch is still open) is purge.py's decision.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from minionsd.clock import iso
from minionsd.storage.database import connect


def audit_row(conn: sqlite3.Connection, record_id: str) -> dict[str, Any] | None:
    """{id, reason, purged_at, source, files} of a purged id, or None if it never was one."""
    row = conn.execute("SELECT id, reason, purged_at, source, files FROM purged_records "
                       "WHERE id = ?", (record_id,)).fetchone()
    if row is None:
        return None
    return {"id": row[0], "reason": row[1], "purged_at": row[2], "source": row[3],
            "files": json.loads(row[4])}


def record_text(conn: sqlite3.Connection, record_id: str) -> dict[str, Any] | None:
    """{id, title, body, source, author, agent} of a record, or None when there is none."""
    row = conn.execute("SELECT id, title, body, source, author, agent FROM memory_records "
                       "WHERE id = ?", (record_id,)).fetchone()
    return None if row is None else dict(row)


@contextlib.contextmanager
def secure_delete(conn: sqlite3.Connection) -> Iterator[None]:
    """Deleted content is overwritten with zeros, not only unlinked, until the block ends."""
    was_secure = conn.execute("PRAGMA secure_delete").fetchone()[0]
    conn.execute("PRAGMA secure_delete = ON")
    try:
        yield
    finally:
        conn.execute(f"PRAGMA secure_delete = {int(was_secure)}")


def delete_for_good(conn: sqlite3.Connection, record_id: str, reason: str, now: datetime,
                    source: str | None, files: list[str]) -> None:
    """The record's row goes (the FTS index follows through the delete trigger, migration
    0001) and the audit row takes its place."""
    conn.execute("DELETE FROM memory_records WHERE id = ?", (record_id,))
    conn.execute("INSERT INTO purged_records (id, reason, purged_at, source, files) "
                 "VALUES (?, ?, ?, ?, ?)",
                 (record_id, reason, iso(now), source, json.dumps(files)))


def merge_index(conn: sqlite3.Connection) -> None:
    """Rewrite the FTS index into one segment: an FTS5 delete only adds a tombstone segment,
    and until segments merge the deleted words stay readable in `memory_fts_data`."""
    conn.execute("INSERT INTO memory_fts (memory_fts) VALUES ('optimize')")


def checkpoint(db_path: Path) -> tuple[int, int, int] | str:
    """Move the WAL into the database file and truncate it: (busy, log frames, checkpointed),
    or the error, as text, when the checkpoint could not run."""
    try:
        conn = connect(db_path)
    except sqlite3.Error as exc:
        return f"{type(exc).__name__}: {exc}"
    try:
        return tuple(conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone())
    except sqlite3.Error as exc:
        return f"{type(exc).__name__}: {exc}"
    finally:
        conn.close()
