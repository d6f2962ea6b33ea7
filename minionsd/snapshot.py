"""Copying a home: its Markdown tree file by file and its database as one consistent snapshot,
and the check that a database file no daemon uses is sound. Backup and restore share these.

A copy never follows a symlink (it may point outside the home), keeps each file's mode and
times (the inbox orders notes by mtime), fsyncs what it writes, and skips what must not travel:
lock files, temp files of in-flight writes, WAL/SHM files, sockets and devices.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sqlite3
import stat
from pathlib import Path
from typing import Any

from minionsd import records
from minionsd.clock import system_clock
from minionsd.db import connect, migrations, schema_version
from minionsd.errors import InvalidState, StorageError
from minionsd.fileio import fsync_dir, lock_for

MANIFEST = "minionsd-backup.json"
FORMAT = 1
DB_REL = Path("engine") / "state.db"
# The Markdown side of a home, in the order it is copied; engine/ contributes only state.db.
TREE = ("config.toml", "pinned.md", "notes.md", "notes", "knowledge")
# filelock's permanent lock files, and fileio's temp files (`.<name>.tmp.<pid>`,
# `.<name>.new.<pid>`) that a crash or an in-flight write can leave behind.
SKIPPED_NAME = re.compile(r"^\..+\.(lock|tmp\.\d+|new\.\d+)$")


def skipped(name: str) -> bool:
    return bool(SKIPPED_NAME.match(name)) or name.endswith(("-wal", "-shm", "-journal"))


def copy_file(source: Path, target: Path) -> int:
    """Copy one regular file with its mode and times, fsynced; -1 if it vanished meanwhile."""
    try:
        src_fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return -1
    with os.fdopen(src_fd, "rb") as src:
        # Mode and times from the open file, so a rename (archiving) meanwhile cannot break
        # the copy. Times matter: the inbox orders notes by mtime and waits for them to settle.
        info = os.fstat(src.fileno())
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
            dst.flush()
            os.fchmod(dst.fileno(), stat.S_IMODE(info.st_mode))
            os.fsync(dst.fileno())
            size = dst.tell()
    os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns), follow_symlinks=False)
    return size


class Copier:
    """Copies a tree entry by entry, counting files and bytes, skipping what must not travel."""

    def __init__(self, skip: set[Path] | None = None) -> None:
        self.files = 0
        self.bytes = 0
        self.skip = skip or set()

    def copy(self, source: Path, target: Path) -> None:
        if source in self.skip or skipped(source.name):
            return
        try:
            info = source.lstat()
        except FileNotFoundError:
            return  # moved or deleted since its directory was listed
        if stat.S_ISLNK(info.st_mode):
            # Kept as a link, never followed: its target may lie outside the home.
            try:
                os.symlink(os.readlink(source), target)
            except FileNotFoundError:
                return
            self.files += 1
        elif stat.S_ISDIR(info.st_mode):
            target.mkdir(mode=0o700)
            try:
                names = sorted(os.listdir(source))
            except FileNotFoundError:
                names = []
            for name in names:
                self.copy(source / name, target / name)
            with contextlib.suppress(FileNotFoundError):
                shutil.copystat(source, target, follow_symlinks=False)
            fsync_dir(target)
        elif stat.S_ISREG(info.st_mode):
            size = copy_file(source, target)
            if size >= 0:
                self.files += 1
                self.bytes += size
        # Sockets, FIFOs and devices are not data.


def copy_tree(source_root: Path, target_root: Path, *, notes_lock: bool) -> Copier:
    """Copy the Markdown side of a home (TREE) from one root to another."""
    notes = source_root / "notes.md"
    history = source_root / "notes" / "archive" / "notes-history.md"
    copier = Copier(skip={notes, history})
    for name in TREE:
        if name == "notes.md":
            continue
        copier.copy(source_root / name, target_root / name)
    paired = Copier()
    with lock_for(notes) if notes_lock else contextlib.nullcontext():
        paired.copy(notes, target_root / "notes.md")
        if (target_root / "notes" / "archive").is_dir():
            paired.copy(history, target_root / "notes" / "archive" / history.name)
    copier.files += paired.files
    copier.bytes += paired.bytes
    fsync_dir(target_root)
    return copier

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

