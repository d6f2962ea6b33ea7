"""The knowledge base's index in storage: which KB file is known at which hash, and its record.

Owns the table `kb_files` (migration 0003), one row per knowledge file seen: its path, the
hash of its text when last imported, and the record it feeds (None once the link is dropped,
as a purge does). Also the record-side changes a KB file's fate decides: a swept or deleted
file retracts the record that came from it alone, a moved file takes its record's source
along. The decisions (when a file counts as changed, swept or moved) stay in kb_sweep.py,
knowledge.py and purge.py; each function here takes a connection inside their read or write.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from datetime import datetime

from minionsd.clock import iso


def known_files(conn: sqlite3.Connection) -> dict[str, tuple[str, str | None]]:
    """Every known KB file: {path: (sha256, record id or None)}."""
    return {row[0]: (row[1], row[2]) for row in
            conn.execute("SELECT path, sha256, record_id FROM kb_files")}


def link_file(conn: sqlite3.Connection, rel: str, digest: str, record_id: str | None,
              now: datetime) -> None:
    """Note `rel` at `digest`; a None record id keeps the record it is linked to already."""
    conn.execute(
        """INSERT INTO kb_files (path, sha256, record_id, seen_at) VALUES (?, ?, ?, ?)
           ON CONFLICT (path) DO UPDATE SET sha256 = excluded.sha256,
               record_id = COALESCE(excluded.record_id, kb_files.record_id),
               seen_at = excluded.seen_at""",
        (rel, digest, record_id, iso(now)))


def forget_file(conn: sqlite3.Connection, rel: str, reason: str, now: datetime) -> None:
    """A swept or deleted file: its row goes, and its record, when it came from a KB file
    (content hash `kb:…`) and is still active, is retracted with `reason` (the SQL follows
    the file)."""
    row = conn.execute("SELECT record_id FROM kb_files WHERE path = ?", (rel,)).fetchone()
    conn.execute("DELETE FROM kb_files WHERE path = ?", (rel,))
    if row and row["record_id"]:
        conn.execute("""UPDATE memory_records SET status = 'retracted', retracted_reason = ?,
                            updated_at = ?, pinned = 0
                        WHERE id = ? AND status = 'active' AND content_hash LIKE 'kb:%'""",
                     (reason[:1000], iso(now), row["record_id"]))


def move_file(conn: sqlite3.Connection, old: str, new: str, now: datetime,
              sources: tuple[str, str] | None = None) -> None:
    """A moved or reclassified file keeps its record: the link follows the file, and so does
    the record's source when it named the old file (`sources`: the old and new paths as a
    source shows them, the plain paths by default). A record whose source is elsewhere (a
    note's archived copy) keeps it."""
    old_source, new_source = sources or (old, new)
    row = conn.execute("SELECT record_id FROM kb_files WHERE path = ?", (old,)).fetchone()
    if row is None or old == new:
        return
    # What was known at the new path before (a file since gone) gives way to the moved one.
    conn.execute("DELETE FROM kb_files WHERE path = ?", (new,))
    conn.execute("UPDATE kb_files SET path = ?, seen_at = ? WHERE path = ?",
                 (new, iso(now), old))
    if row["record_id"]:
        conn.execute("UPDATE memory_records SET source = ?, updated_at = ? "
                     "WHERE id = ? AND source = ?",
                     (new_source, iso(now), row["record_id"], old_source))


def paths_at(conn: sqlite3.Connection, digest: str) -> list[tuple[str, str | None]]:
    """(path, record id or None) of every known KB file last seen with text hash `digest`:
    where a file that appears under a new path may have been moved from."""
    return [(row[0], row[1]) for row in conn.execute(
        "SELECT path, record_id FROM kb_files WHERE sha256 = ? ORDER BY path", (digest,))]


def known_file(conn: sqlite3.Connection, rel: str) -> tuple[str, str | None] | None:
    """(sha256, record id or None) of one known KB file, or None when it is not known."""
    row = conn.execute("SELECT sha256, record_id FROM kb_files WHERE path = ?",
                       (rel,)).fetchone()
    return None if row is None else (row[0], row[1])


_ENTRY_ID_RE = re.compile(r"[0-9a-f]{16}")


def record_for_entry(conn: sqlite3.Connection, entry_id: str, rel: str,
                     gone: Callable[[str], bool] | None = None) -> str | None:
    """The active record a consolidated entry's `entry_id` names, when `rel` may bind to it.

    The id must be a whole entry id (16 hex digits, the first 16 of the note's content hash):
    an empty or partial id binds nothing. The record must not belong to another file: neither
    linked to another path nor with another knowledge path as its source, so a copied entry
    (a template) becomes a record of its own instead of taking the original's over. A linked
    path for which `gone` is true (the file is no longer on disk) does not count: `rel` is
    that file, moved.
    """
    if not _ENTRY_ID_RE.fullmatch(entry_id):
        return None
    rows = conn.execute(
        """SELECT id, source FROM memory_records WHERE content_hash >= ? AND content_hash < ?
           AND status = 'active' LIMIT 2""", (entry_id, entry_id + "g")).fetchall()
    if len(rows) != 1:
        return None
    record_id, source = rows[0][0], rows[0][1]
    if source and source.startswith("knowledge/") and source != rel:
        return None
    others = [row[0] for row in conn.execute(
        "SELECT path FROM kb_files WHERE record_id = ? AND path != ?", (record_id, rel))]
    return None if any(gone is None or not gone(path) for path in others) else record_id


def fresh_hash(conn: sqlite3.Connection, rel: str) -> str:
    """The content hash for a new record of KB file `rel`: `kb:<rel>`, unless a record that
    is no longer active holds it (the file was deleted, swept or its record retracted, and
    the path is back): then `kb:<rel>#2`, `#3`, ... so the new content gets an active record
    of its own. An active record holding the hash is reused (its link was lost)."""
    base, n = f"kb:{rel}", 1
    while True:
        candidate = base if n == 1 else f"{base}#{n}"
        row = conn.execute("SELECT status FROM memory_records WHERE content_hash = ?",
                           (candidate,)).fetchone()
        if row is None or row[0] == "active":
            return candidate
        n += 1


def record_body(conn: sqlite3.Connection, record_id: str) -> str | None:
    """The body a record has now (to compare with its file), or None when there is none."""
    row = conn.execute("SELECT body FROM memory_records WHERE id = ?", (record_id,)).fetchone()
    return None if row is None else row["body"]


def paths_of_record(conn: sqlite3.Connection, record_id: str) -> list[str]:
    return [row[0] for row in conn.execute("SELECT path FROM kb_files WHERE record_id = ?",
                                           (record_id,))]


def unlink_record(conn: sqlite3.Connection, record_id: str) -> None:
    """Files feeding `record_id` stay known, linked to no record."""
    conn.execute("UPDATE kb_files SET record_id = NULL WHERE record_id = ?", (record_id,))


def keep_unlinked(conn: sqlite3.Connection, rel: str, digest: str, now: datetime) -> None:
    """`rel` known at `digest` and linked to no record: the sweep takes it as unchanged and
    imports it again only after the file is edited."""
    conn.execute("""INSERT INTO kb_files (path, sha256, record_id, seen_at)
                    VALUES (?, ?, NULL, ?) ON CONFLICT (path) DO UPDATE
                    SET sha256 = excluded.sha256, record_id = NULL""",
                 (rel, digest, iso(now)))
