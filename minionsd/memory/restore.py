"""The offline restore: replace a home's data with a backup made by `backup.create`.

No daemon may run on the home meanwhile (the restore holds the daemon's own pid lock). The
backup is staged inside the home and checked there before any part of the home is touched;
then each part is swapped in by rename.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path
from typing import Any

from minionsd.errors import InvalidParams, InvalidState, StorageError
from minionsd.fileio import fsync_dir
from minionsd.home import Home
from minionsd.storage.db_snapshot import verify_db
from minionsd.storage.pidfile import PidFile
from minionsd.storage.snapshot import DB_REL, MANIFEST, SKIPPED_NAME, TREE, copy_file, copy_tree

_STAGING_PREFIX = ".restore-"


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
    """Nothing worth keeping: only directories, lock files, the pid file and socket record, a
    stale socket, or what a failed restore left."""
    for directory, dirs, files in os.walk(home.root):
        if Path(directory) == home.root:
            dirs[:] = [d for d in dirs if not d.startswith(_STAGING_PREFIX)]
        for name in files:
            path = Path(directory) / name
            if path in (home.pidfile, home.socket_record) or SKIPPED_NAME.match(name):
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
            copier = copy_tree(backup, staging, notes_lock=False)
            (staging / DB_REL).parent.mkdir(mode=0o700)
            db_bytes = copy_file(backup / DB_REL, staging / DB_REL)
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

