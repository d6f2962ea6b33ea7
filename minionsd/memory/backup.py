"""Online backup of a home while the daemon runs; `restore.py` is the offline way back.

A backup directory mirrors the home: `engine/state.db` made with SQLite's online backup API,
then config.toml, pinned.md, notes.md, notes/ and knowledge/ copied file by file, then
`minionsd-backup.json`. The manifest is written last, so a directory without it is an
interrupted backup and restore refuses it. Sockets, the pid file, lock files, WAL/SHM files
and in-flight temp files are never copied; nothing else under engine/ is either.

Why the database goes first and the files second. Consolidation records each decision in
its journal (state.db) before acting on it, and on start-up redoes every open batch; each
step checks what already exists (batch markers in notes.md, entry ids in notebooks, the KB
and archive paths it recorded, records upserted by content hash). So files that are *ahead*
of the snapshot by the one action that follows a recorded decision are harmless: the restored
daemon redoes that step as a no-op, or redoes a move that was only half copied from the
journal's copy of the note. Files ahead by a decision the snapshot does not hold are not
harmless: a redo would choose a new KB or archive path and write a second copy beside the
one the files already hold. The journal only moves forward (batches are added, fields are
filled in, open becomes done), so comparing the snapshot's journal with the live one after
the files are copied tells whether a decision was made in between; if one was, the attempt
is thrown away and made again, once the batch in progress has finished. Copying files first
would be worse: a snapshot taken after a batch finished would mark notes done whose inbox
copies the files still hold, and they would be consolidated a second time.

Outside consolidation, a file newer than the snapshot is repaired by the daemon's own jobs:
a knowledge entry whose record is missing is imported by the KB sweep, and an inbox note
without its submission row is simply a note to consolidate.

The backup runs inside the consolidation service's pause (an async context manager, handed to
`BackupSurface` by the daemon's wiring, that waits for a running batch to end and starts no
other until it exits), so the first attempt normally stands; the comparison stays as the guard
for a backup made without it (`create_backup` called directly).

notes.md and notes/archive/notes-history.md are copied together under the notes.md lock,
because bounding moves sections from one to the other under that lock; copied apart, a
section could be in neither copy or in both.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sqlite3
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import structlog

from minionsd.clock import iso
from minionsd.errors import Conflict, InvalidParams, InvalidState, StorageError
from minionsd.fileio import fsync_dir
from minionsd.home import Home
from minionsd.memory.app import App
from minionsd.storage import journal
from minionsd.storage.database import schema_version
from minionsd.storage.db_snapshot import open_plain, record_count, snapshot_db
from minionsd.storage.snapshot import DB_REL, FORMAT, MANIFEST, copy_tree

log = structlog.get_logger()

MAX_ATTEMPTS = 10
# Before a retry, wait (at most this long in all) for the batch that spoiled the last attempt.
IDLE_WAIT_S = 60.0
IDLE_POLL_S = 0.05


def _journal_state(conn: sqlite3.Connection) -> tuple[dict[str, str], list[journal.Batch]]:
    """Everything consolidation has decided; it only ever grows, so equal means unchanged."""
    return journal.counters(conn), [journal.load(conn, b) for b in journal.open_batch_ids(conn)]



def check_target(home: Home, raw: object) -> Path:
    if not isinstance(raw, str) or not raw or "\0" in raw:
        raise InvalidParams("'path' must be a non-empty string", param="path")
    target = Path(raw)
    if not target.is_absolute():
        raise InvalidParams("'path' must be absolute (the daemon's working directory is not "
                            "yours)", param="path")
    resolved = target.resolve()
    if resolved.is_relative_to(home.root.resolve()):
        raise InvalidParams(f"{target} is inside the home being backed up", param="path")
    if target.is_symlink() or (target.exists() and not target.is_dir()):
        raise Conflict(f"{target} exists and is not a directory", path=str(target))
    if target.is_dir() and any(target.iterdir()):
        raise Conflict(f"{target} is not empty; back up into a new or empty directory",
                       path=str(target))
    return target


def _empty_dir(directory: Path) -> None:
    for entry in directory.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def create_backup(app: App, target: Path) -> dict[str, Any]:
    """Write a backup of the running daemon's home into `target` (blocking; worker thread)."""
    home = app.home
    target = check_target(home, str(target))
    created = not target.exists()
    target.mkdir(parents=True, exist_ok=True, mode=0o700)
    idle_deadline = time.monotonic() + IDLE_WAIT_S
    try:
        for attempt in range(1, MAX_ATTEMPTS + 1):
            if attempt > 1:
                _wait_for_idle(app, idle_deadline)
            _empty_dir(target)
            snapshot_db(home.db, target / DB_REL)
            conn = open_plain(target / DB_REL)
            try:
                snapshot_state = _journal_state(conn)
                count = record_count(conn)
                version = schema_version(conn)
            finally:
                conn.close()
            copier = copy_tree(home.root, target, notes_lock=True)
            if app.db.read_blocking(_journal_state) == snapshot_state:
                break
            log.info("backup.retry", attempt=attempt, path=str(target),
                     reason="consolidation recorded a step during the copy")
        else:
            raise InvalidState(f"consolidation kept advancing during {MAX_ATTEMPTS} backup "
                               "attempts; try again when it is idle", path=str(target))
        db_bytes = (target / DB_REL).stat().st_size
        result = {"path": str(target), "records": count, "files": copier.files + 1,
                  "bytes": copier.bytes + db_bytes}
        manifest = {"format": FORMAT, "created_at": iso(app.now()), "version": app.version,
                    "home": str(home.root), "schema_version": version, "attempts": attempt,
                    **{k: v for k, v in result.items() if k != "path"}}
        _write_manifest(target, manifest)
    except BaseException:
        _discard(target, created)
        raise
    log.info("backup.done", **result, attempts=attempt)
    return result


def _wait_for_idle(app: App, deadline: float) -> None:
    """Until no batch is open (or the deadline): between batches the inbox must refill and
    settle, which usually leaves the next attempt a quiet window."""
    while app.db.read_blocking(journal.open_batch_ids) and time.monotonic() < deadline:
        time.sleep(IDLE_POLL_S)


def _write_manifest(target: Path, manifest: dict[str, Any]) -> None:
    fd = os.open(target / MANIFEST, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(manifest, handle, indent=2)
        handle.write("\n")
        handle.flush()
        os.fsync(handle.fileno())
    fsync_dir(target)


def _discard(target: Path, created: bool) -> None:
    """Leave no half backup behind: remove what this attempt wrote."""
    try:
        if created:
            shutil.rmtree(target)
        elif target.is_dir():
            _empty_dir(target)
    except OSError:
        log.warning("backup.cleanup_failed", path=str(target))


class BackupSurface:
    """The `backup.create` method."""

    def __init__(self, app: App,
                 pause_consolidation: Callable[[], AbstractAsyncContextManager[None]]) -> None:
        self.app = app
        # Waits for a running batch to end and starts no other while the backup runs.
        self._pause = pause_consolidation
        # One at a time: two requests naming the same empty directory would both pass the
        # emptiness check and then clear each other's files.
        self._lock = asyncio.Lock()

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None

    def methods(self) -> dict[str, Any]:
        app = self.app

        async def backup_create(path: Any) -> dict[str, Any]:
            target = check_target(app.home, path)
            async with self._lock, self._pause():
                try:
                    return await app.off_loop(create_backup, app, target,
                                              name="backup")
                except OSError as exc:
                    raise StorageError(f"backup to {target} failed: {exc}") from exc

        return {"backup.create": backup_create}

