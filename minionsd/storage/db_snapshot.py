"""The database as one file: a consistent copy of it, and the check of a copy no daemon uses.

A backup copies state.db in one step inside one read transaction, so the copy is a single
consistent snapshot while the writer commits; a restore checks the copy (page integrity, the
FTS index against memory_records, the schema version) before it replaces anything. These are
SQLite's file-level operations; backup.py and restore.py decide when they run.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from minionsd.clock import system_clock
from minionsd.errors import InvalidState, StorageError
from minionsd.fileio import fsync_dir
from minionsd.storage import records
from minionsd.storage.database import connect, migrations, schema_version


def snapshot_db(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    src = connect(source, readonly=True)
    try:
        dst = sqlite3.connect(target, isolation_level=None)
        try:
            # pages=-1 copies everything in one step, inside one read transaction of the
            # source, so the copy is a single consistent snapshot while the writer commits.
            src.backup(dst, pages=-1)
            # A backup is one self-contained file; the daemon that opens it turns WAL back on.
            dst.execute("PRAGMA journal_mode=DELETE")
        finally:
            dst.close()
    finally:
        src.close()
    fsync_dir(target.parent)


def open_plain(path: Path) -> sqlite3.Connection:
    # Not a URI: a backup path may hold '?' or '#'.
    conn = sqlite3.connect(path, isolation_level=None)
    conn.row_factory = sqlite3.Row
    return conn


def record_count(conn: sqlite3.Connection) -> int:
    return sum(records.status_counts_by_scan(conn, system_clock()).values())


def verify_db(path: Path) -> dict[str, Any]:
    """Check a database file that no daemon uses: page integrity, FTS index, schema version."""
    try:
        conn = open_plain(path)
        try:
            problems = [row[0] for row in conn.execute("PRAGMA integrity_check")]
            if problems != ["ok"]:
                raise StorageError(f"{path} fails PRAGMA integrity_check: "
                                   f"{'; '.join(problems[:5])}")
            # Compares the FTS index with memory_records too (rank 1), not only its own pages.
            conn.execute("INSERT INTO memory_fts(memory_fts, rank) VALUES('integrity-check', 1)")
            version = schema_version(conn)
            known = len(migrations())
            if version > known:
                raise InvalidState(f"{path} has schema version {version}, newer than this "
                                   f"minionsd (knows up to {known}); upgrade minionsd first")
            return {"records": record_count(conn), "schema_version": version}
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise StorageError(f"{path} is not a sound minionsd database: {exc}") from exc

