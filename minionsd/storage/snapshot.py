"""Copying a home: its Markdown tree file by file (the database is copied as one consistent
snapshot by db_snapshot.py). Backup and restore share these.

A copy never follows a symlink (it may point outside the home), keeps each file's mode and
times (the inbox orders notes by mtime), fsyncs what it writes, and skips what must not travel:
lock files, temp files of in-flight writes, WAL/SHM files, sockets and devices.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
from pathlib import Path

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
