"""What sits in notes/quarantine/: counting, listing with reasons, and moving a file back.

The inbox (inbox.py) puts files here, each with `<name>.reason.txt` beside it. This module
makes that visible: a count for `status` (one directory listing, repeated only when the
directory changed), the list for `inbox.list {quarantined: true}`, and `inbox.requeue`, which
moves a fixed file back into notes/inbox/ under a free name and removes its reason file.
"""

from __future__ import annotations

import os
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import structlog

from minionsd.clock import iso
from minionsd.errors import InvalidParams, NotFound
from minionsd.fileio import NAME_MAX_BYTES, fit_name
from minionsd.home import check_name

log = structlog.get_logger()

REASON_SUFFIX = ".reason.txt"
# A quarantined file's name leaves room for its reason file's suffix.
QUARANTINE_NAME_MAX_BYTES = NAME_MAX_BYTES - len(REASON_SUFFIX)
_MAX_REASON_CHARS = 2000
_MTIME_SETTLED_S = 2.0


def _is_note(name: str) -> bool:
    return not name.endswith(REASON_SUFFIX) and not name.startswith(".")


class QuarantineCount:
    """The number of quarantined files, relisted only when the directory's mtime moves.

    File systems stamp times with a coarse clock, so two changes a few milliseconds apart can
    leave one mtime: a listing is trusted only when it was taken well after that mtime.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._lock = threading.Lock()
        self._seen: tuple[int, int] | None = None
        self._count = 0

    def get(self) -> int:
        try:
            info = self.directory.stat()
        except FileNotFoundError:
            return 0
        signature = (info.st_mtime_ns, info.st_ino)
        with self._lock:
            if signature != self._seen:
                listed_at = time.time()
                self._count = sum(1 for e in os.scandir(self.directory) if _is_note(e.name))
                settled = listed_at - info.st_mtime > _MTIME_SETTLED_S
                self._seen = signature if settled else None
            return self._count


def _reason(directory: Path, name: str) -> tuple[str, float | None]:
    """The reason text (without the `<original name>: ` prefix) and when it was written."""
    path = directory / (name + REASON_SUFFIX)
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip()
        written = path.stat().st_mtime
    except OSError:
        return "no reason file", None
    first, sep, rest = text.partition(": ")
    if sep and "\n" not in first:
        text = rest
    return text[:_MAX_REASON_CHARS], written


def list_quarantined(directory: Path) -> list[dict[str, Any]]:
    """Every quarantined file, oldest first: {name, reason, at}."""
    try:
        entries = [e for e in os.scandir(directory) if _is_note(e.name)]
    except FileNotFoundError:
        return []
    rows = []
    for entry in entries:
        reason, written = _reason(directory, entry.name)
        if written is None:
            try:
                written = entry.stat(follow_symlinks=False).st_mtime
            except FileNotFoundError:
                continue
        rows.append((written, entry.name, reason))
    rows.sort()
    return [{"name": name, "reason": reason, "at": iso(datetime.fromtimestamp(at, UTC))}
            for at, name, reason in rows]


def _free_name(inbox: Path, name: str, taken: set[str]) -> str:
    stem, ext = os.path.splitext(name)
    candidate, n = name, 2
    while candidate in taken or os.path.lexists(inbox / candidate):
        candidate = fit_name(stem, f"-{n}{ext}")
        n += 1
    return candidate


# One requeue at a time: two moves of one file would both link it into the inbox.
_REQUEUE_LOCK = threading.Lock()


def requeue(directory: Path, inbox: Path, name: object, taken: set[str]) -> str:
    """Move quarantined `name` back into the inbox; returns the inbox name it got.

    `taken` are names the inbox must not reuse although no file holds them (names claimed by
    inbox.submit). The move is a hard link then an unlink, so an inbox file is never replaced.
    """
    name = check_name(name, "name", NAME_MAX_BYTES)  # any name a file can have
    with _REQUEUE_LOCK:
        return _requeue(directory, inbox, name, taken)


def _requeue(directory: Path, inbox: Path, name: str, taken: set[str]) -> str:
    if name.endswith(REASON_SUFFIX):
        raise InvalidParams(f"{name!r} is a reason file; requeue the file it explains",
                            param="name")
    source = directory / name
    if not os.path.lexists(source):
        raise NotFound(f"no file named {name!r} in notes/quarantine", name=name)
    inbox.mkdir(parents=True, exist_ok=True)
    while True:
        target = _free_name(inbox, name, taken)
        try:
            os.link(source, inbox / target, follow_symlinks=False)
        except FileExistsError:
            taken = taken | {target}  # another writer took it meanwhile: choose again
            continue
        except FileNotFoundError:
            raise NotFound(f"no file named {name!r} in notes/quarantine", name=name) from None
        except OSError:
            # No hard links on this file system: a rename to the name just found free.
            os.rename(source, inbox / target)
            break
        os.unlink(source)
        break
    reason = name + REASON_SUFFIX
    if len(reason.encode("utf-8")) <= NAME_MAX_BYTES:  # else it cannot exist
        (directory / reason).unlink(missing_ok=True)
    log.info("inbox.requeued", name=name, inbox_name=target)
    return target
