"""Online backup of a home while the daemon runs, and the offline restore that reverses it.

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

When the consolidation component offers the `pause_consolidation` hook (an async context
manager that waits for a running batch to end and starts no other until it exits), the backup
runs inside it and the first attempt always stands; the comparison stays as the guard.

notes.md and notes/archive/notes-history.md are copied together under the notes.md lock,
because bounding moves sections from one to the other under that lock; copied apart, a
section could be in neither copy or in both.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import sqlite3
import stat
import time
from pathlib import Path
from typing import Any

import structlog

from minionsd import records
from minionsd.app import App
from minionsd.clock import iso, system_clock
from minionsd.consolidate import journal
from minionsd.db import connect, migrations, schema_version
from minionsd.errors import Conflict, InvalidParams, InvalidState, StorageError
from minionsd.fileio import fsync_dir, lock_for
from minionsd.home import Home
from minionsd.pidfile import PidFile
from minionsd.threads import run_in_daemon_thread

log = structlog.get_logger()

MANIFEST = "minionsd-backup.json"
FORMAT = 1
DB_REL = Path("engine") / "state.db"
# The Markdown side of a home, in the order it is copied; engine/ contributes only state.db.
TREE = ("config.toml", "pinned.md", "notes.md", "notes", "knowledge")
MAX_ATTEMPTS = 10
# Before a retry, wait (at most this long in all) for the batch that spoiled the last attempt.
IDLE_WAIT_S = 60.0
IDLE_POLL_S = 0.05
# filelock's permanent lock files, and fileio's temp files (`.<name>.tmp.<pid>`,
# `.<name>.new.<pid>`) that a crash or an in-flight write can leave behind.
_SKIPPED_NAME = re.compile(r"^\..+\.(lock|tmp\.\d+|new\.\d+)$")
_STAGING_PREFIX = ".restore-"


# --- copying files ---------------------------------------------------------------------------

def _skipped(name: str) -> bool:
    return bool(_SKIPPED_NAME.match(name)) or name.endswith(("-wal", "-shm", "-journal"))


def _copy_file(source: Path, target: Path) -> int:
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


class _Copier:
    """Copies a tree entry by entry, counting files and bytes, skipping what must not travel."""

    def __init__(self, skip: set[Path] | None = None) -> None:
        self.files = 0
        self.bytes = 0
        self.skip = skip or set()

    def copy(self, source: Path, target: Path) -> None:
        if source in self.skip or _skipped(source.name):
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
            size = _copy_file(source, target)
            if size >= 0:
                self.files += 1
                self.bytes += size
        # Sockets, FIFOs and devices are not data.


def _copy_tree(source_root: Path, target_root: Path, *, notes_lock: bool) -> _Copier:
    """Copy the Markdown side of a home (TREE) from one root to another."""
    notes = source_root / "notes.md"
    history = source_root / "notes" / "archive" / "notes-history.md"
    copier = _Copier(skip={notes, history})
    for name in TREE:
        if name == "notes.md":
            continue
        copier.copy(source_root / name, target_root / name)
    paired = _Copier()
    with lock_for(notes) if notes_lock else contextlib.nullcontext():
        paired.copy(notes, target_root / "notes.md")
        if (target_root / "notes" / "archive").is_dir():
            paired.copy(history, target_root / "notes" / "archive" / history.name)
    copier.files += paired.files
    copier.bytes += paired.bytes
    fsync_dir(target_root)
    return copier


# --- the database ----------------------------------------------------------------------------

def _snapshot_db(source: Path, target: Path) -> None:
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


def _open_plain(path: Path) -> sqlite3.Connection:
    # Not a URI: a backup path may hold '?' or '#'.
    conn = sqlite3.connect(path, isolation_level=None)
    conn.row_factory = sqlite3.Row
    return conn


def _journal_state(conn: sqlite3.Connection) -> tuple[dict[str, str], list[journal.Batch]]:
    """Everything consolidation has decided; it only ever grows, so equal means unchanged."""
    return journal.counters(conn), [journal.load(conn, b) for b in journal.open_batch_ids(conn)]


def _record_count(conn: sqlite3.Connection) -> int:
    return sum(records.status_counts_by_scan(conn, system_clock()).values())


def verify_db(path: Path) -> dict[str, Any]:
    """Check a database file that no daemon uses: page integrity, FTS index, schema version."""
    try:
        conn = _open_plain(path)
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
            return {"records": _record_count(conn), "schema_version": version}
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise StorageError(f"{path} is not a sound minionsd database: {exc}") from exc


# --- backup ----------------------------------------------------------------------------------

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
            _snapshot_db(home.db, target / DB_REL)
            conn = _open_plain(target / DB_REL)
            try:
                snapshot_state = _journal_state(conn)
                record_count = _record_count(conn)
                version = schema_version(conn)
            finally:
                conn.close()
            copier = _copy_tree(home.root, target, notes_lock=True)
            if app.db.read_blocking(_journal_state) == snapshot_state:
                break
            log.info("backup.retry", attempt=attempt, path=str(target),
                     reason="consolidation recorded a step during the copy")
        else:
            raise InvalidState(f"consolidation kept advancing during {MAX_ATTEMPTS} backup "
                               "attempts; try again when it is idle", path=str(target))
        db_bytes = (target / DB_REL).stat().st_size
        result = {"path": str(target), "records": record_count, "files": copier.files + 1,
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

    def __init__(self, app: App) -> None:
        self.app = app
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
            pause = app.hooks.get("pause_consolidation")
            async with self._lock, (pause() if pause else contextlib.nullcontext()):
                try:
                    return await run_in_daemon_thread(create_backup, app, target,
                                                      name="backup")
                except OSError as exc:
                    raise StorageError(f"backup to {target} failed: {exc}") from exc

        return {"backup.create": backup_create}


# --- restore ---------------------------------------------------------------------------------

def _lock_home(home: Home) -> PidFile:
    """Take the daemon's own pid lock, so no daemon runs on the home while it is replaced."""
    guard = PidFile(home.pidfile)
    try:
        home.root.parent.mkdir(parents=True, exist_ok=True)
        home.root.mkdir(exist_ok=True, mode=0o700)
        home.engine.mkdir(exist_ok=True, mode=0o700)
        guard.acquire()
    except OSError as exc:
        raise StorageError(f"cannot prepare {home.root} for a restore: {exc}") from exc
    except InvalidState:
        try:
            pid = home.pidfile.read_text(encoding="ascii", errors="replace").strip()
        except OSError:
            pid = "unknown"
        raise InvalidState(f"minionsd is running on {home.root} (pid {pid or 'unknown'}); "
                           "stop it before restoring") from None
    return guard


def _is_empty(home: Home) -> bool:
    """Nothing worth keeping: only directories, lock files, the pid file, a stale socket, or
    what a failed restore left."""
    for directory, dirs, files in os.walk(home.root):
        if Path(directory) == home.root:
            dirs[:] = [d for d in dirs if not d.startswith(_STAGING_PREFIX)]
        for name in files:
            path = Path(directory) / name
            if path == home.pidfile or _SKIPPED_NAME.match(name):
                continue
            mode = path.lstat().st_mode
            if stat.S_ISREG(mode) or stat.S_ISLNK(mode):
                return False
    return True


def _managed() -> list[Path]:
    """What a restore replaces, relative to a home: the tree and the database files."""
    db = [DB_REL.with_name(DB_REL.name + suffix) for suffix in ("", "-wal", "-shm", "-journal")]
    return [Path(name) for name in TREE] + db


def restore(backup_dir: str | os.PathLike[str], home_root: str | os.PathLike[str], *,
            force: bool = False) -> dict[str, Any]:
    """Replace a home's data with a backup. No daemon may run on the home meanwhile.

    The backup is copied into a staging directory inside the home and its database checked
    there (integrity, FTS index, schema version) before anything of the home is touched;
    then each part is swapped in by rename, and what it replaced is deleted.
    """
    backup = Path(backup_dir).expanduser().absolute()
    home = Home(Path(home_root).expanduser().absolute())
    if not (backup / MANIFEST).is_file():
        raise InvalidParams(f"{backup} is not a complete minionsd backup (no {MANIFEST}; "
                            "an interrupted backup lacks it)", param="path")
    if not (backup / DB_REL).is_file():
        raise InvalidParams(f"{backup} has no {DB_REL.as_posix()}", param="path")
    if home.root.resolve().is_relative_to(backup.resolve()) or \
            backup.resolve().is_relative_to(home.root.resolve()):
        raise InvalidParams("the backup and the home must not contain each other", param="path")
    guard = _lock_home(home)
    try:
        if not force and not _is_empty(home):
            raise InvalidState(f"{home.root} already holds data; restore into a new or empty "
                               "home, or pass --force to replace it")
        for stale in home.root.glob(f"{_STAGING_PREFIX}*"):
            shutil.rmtree(stale, ignore_errors=True)
        staging = home.root / f"{_STAGING_PREFIX}{os.getpid()}"
        trash = home.root / f"{_STAGING_PREFIX}{os.getpid()}-old"
        staging.mkdir(mode=0o700)
        try:
            copier = _copy_tree(backup, staging, notes_lock=False)
            (staging / DB_REL).parent.mkdir(mode=0o700)
            db_bytes = _copy_file(backup / DB_REL, staging / DB_REL)
            checked = verify_db(staging / DB_REL)
            _swap_in(home.root, staging, trash)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
            shutil.rmtree(trash, ignore_errors=True)
    except OSError as exc:
        raise StorageError(f"restore into {home.root} failed: {exc}") from exc
    finally:
        guard.release()
    return {"home": str(home.root), "backup": str(backup), "records": checked["records"],
            "schema_version": checked["schema_version"], "files": copier.files + 1,
            "bytes": copier.bytes + db_bytes, "integrity": "ok"}


def _swap_in(root: Path, staging: Path, trash: Path) -> None:
    trash.mkdir(mode=0o700)
    (trash / "engine").mkdir(mode=0o700)
    (root / "engine").mkdir(mode=0o700, exist_ok=True)
    for rel in _managed():
        current, new = root / rel, staging / rel
        if current.exists() or current.is_symlink():
            # A -wal or -shm left beside the old database would be replayed into the new one.
            os.rename(current, trash / rel)
        if new.exists() or new.is_symlink():
            os.rename(new, current)
    fsync_dir(root / "engine")
    fsync_dir(root)

