"""The inbox: which notes are there, which are eligible, quarantine and holds.

A note is eligible when it is a regular `*.md` file directly in notes/inbox/, not hidden or an
editor temp file, settled (unchanged for `engine.inbox_settle_ms`), not held (front matter
`hold: true` or a hold in state.db) and not part of a running batch. Files that can never be
processed (symlinks, invalid UTF-8, too large, empty, unparsable front matter) are moved to
notes/quarantine/ with a `<name>.reason.txt` beside them; nothing is deleted.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import structlog

from minionsd.fileio import atomic_write_text, fit_name, open_for_writing
from minionsd.home import Home
from minionsd.memory.filewarn import FileWarnings
from minionsd.memory.identity import note_author
from minionsd.memory.quarantine import QUARANTINE_NAME_MAX_BYTES, REASON_SUFFIX
from minionsd.text.markdown import (
    FrontMatterError,
    check_note_types,
    read_note,
)

log = structlog.get_logger()

KINDS = ("note", "finding", "feedback", "alert")

_AHEAD = "its modification time is ahead of the clock"
_OPEN = "still open for writing"
_TEMP_SUFFIXES = ("~", ".swp", ".swx", ".tmp", ".part", ".crdownload")


def is_candidate_name(name: str) -> bool:
    """A name the inbox considers at all: `*.md`, not hidden, not an editor temp file."""
    if name.startswith((".", "#", "~")) or not name.endswith(".md"):
        return False
    return not name.endswith(_TEMP_SUFFIXES)


def _is_utf8(name: str) -> bool:
    """False for a name the file system gave as bytes that are not UTF-8 (surrogate escapes)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def note_project(meta: dict[str, Any]) -> str | None:
    """The project a note's or knowledge entry's front matter names, else None."""
    value = meta.get("project")
    return str(value) if isinstance(value, str | int) and str(value).strip() else None


def note_kind(meta: dict[str, Any]) -> str:
    """The kind a note's front matter names, `note` for anything that is not one of KINDS."""
    kind = meta.get("kind")
    return kind if kind in KINDS else "note"


@dataclass(frozen=True)
class InboxNote:
    name: str
    path: Path
    size: int
    mtime: float
    meta: dict[str, Any]
    content: str
    author: str
    held: bool
    settled: bool

    @property
    def kind(self) -> str:
        return note_kind(self.meta)


class WouldMove(Exception):
    """examine(may_move=False) met a file that a look would quarantine."""


class _Named:
    """What _examine reads of an os.DirEntry, for a name looked up on its own."""

    __slots__ = ("name", "path")

    def __init__(self, directory: str, name: str) -> None:
        self.name = name
        self.path = os.path.join(directory, name)

    def stat(self, *, follow_symlinks: bool = True) -> os.stat_result:
        return os.stat(self.path, follow_symlinks=follow_symlinks)


class Inbox:
    """Scans notes/inbox/; caches parsed notes by (size, mtime) so rescans stay cheap."""

    def __init__(self, home: Home, warnings: FileWarnings | None = None) -> None:
        self.home = home
        # Files the inbox cannot judge (a directory or FIFO named *.md, a time ahead of the
        # clock) are named once in the log and in status.warnings while they are there.
        self._warnings = warnings
        self._warned: dict[str, str] = {}  # name -> reason
        # A note whose time is ahead of the clock settles by how long it has been seen
        # unchanged: name -> ((size, mtime_ns), wall time first seen so).
        self._seen_since: dict[str, tuple[tuple[int, int], float]] = {}
        self._cache: dict[str, tuple[tuple[int, int], dict[str, Any], str]] = {}
        self.quarantined_here = 0  # files this object moved to quarantine so far

    def scan(self, *, max_bytes: int, settle_ms: int, held_names: set[str],
             configured_agents: Iterable[str], wall_now: float | None = None,
             complete_names: frozenset[str] = frozenset()) -> list[InboxNote]:
        """Every processable note, oldest first (mtime, then name); quarantines bad files.

        `complete_names` are notes minionsd wrote itself (atomically, via inbox.submit): they
        cannot be half-written, so they need no settling time.
        """
        wall_now = time.time() if wall_now is None else wall_now
        agents = list(configured_agents)
        notes = []
        try:
            entries = list(os.scandir(self.home.inbox))
        except FileNotFoundError:
            return []
        for entry in entries:
            if not is_candidate_name(entry.name):
                continue
            settle = 0 if entry.name in complete_names else settle_ms
            note = self._examine(entry, max_bytes, settle, held_names, agents, wall_now)
            if note is not None:
                notes.append(note)
        live = {n.name for n in notes}
        for name in list(self._cache):
            if name not in live:
                self._cache.pop(name, None)  # another thread may have dropped it
        present = {entry.name for entry in entries}
        for name in [n for n in self._warned if n not in present]:
            self._unwarn(name)
        for name in [n for n in self._seen_since if n not in present]:
            self._seen_since.pop(name, None)
        notes.sort(key=lambda n: (n.mtime, n.name))
        return notes

    def examine(self, name: str, *, max_bytes: int, settle_ms: int, held_names: set[str],
                configured_agents: Iterable[str], wall_now: float | None = None,
                complete: bool = False, may_move: bool = True) -> InboxNote | None:
        """One name of the inbox as scan() would see it (None: not a processable note now,
        quarantined if it never can be), without listing the directory. With may_move
        False a file that would be quarantined raises WouldMove instead (and stays)."""
        if not is_candidate_name(name):
            return None
        wall_now = time.time() if wall_now is None else wall_now
        return self._examine(_Named(str(self.home.inbox), name), max_bytes,
                             0 if complete else settle_ms, held_names, list(configured_agents),
                             wall_now, may_move)

    def _examine(self, entry: os.DirEntry[str] | _Named, max_bytes: int, settle_ms: int,
                 held_names: set[str], agents: list[str], wall_now: float,
                 may_move: bool = True) -> InboxNote | None:
        try:
            info = entry.stat(follow_symlinks=False)
        except FileNotFoundError:
            self._unwarn(entry.name)
            return None
        if not _is_utf8(entry.name):
            # SQLite text (the journal, records) is UTF-8: such a name could never be processed.
            shown = os.fsencode(entry.name).decode("utf-8", "backslashreplace")
            self._set_aside(may_move, entry.name, f"file name is not valid UTF-8 (it was {shown})")
            return None
        if stat.S_ISLNK(info.st_mode):
            self._set_aside(may_move, entry.name, "symlinks are not accepted in the inbox")
            return None
        if not stat.S_ISREG(info.st_mode):
            what = "a directory" if stat.S_ISDIR(info.st_mode) else \
                "a FIFO" if stat.S_ISFIFO(info.st_mode) else "not a regular file"
            self._warn(entry.name, f"is {what}, not a note file: the inbox leaves it alone "
                                   "(rename or remove it)")
            return None
        settled = self._settled(entry.name, info, settle_ms, wall_now)
        if settled and settle_ms > 0:
            settled = self._closed(entry, info)
        if info.st_size > max_bytes:
            if settled:
                self._set_aside(may_move, entry.name, f"file is {info.st_size} bytes, over "
                                f"engine.inbox_max_note_bytes ({max_bytes})")
            return None
        if not settled:
            return InboxNote(entry.name, Path(entry.path), info.st_size, info.st_mtime, {}, "",
                             "unknown", entry.name in held_names, False)
        parsed = self._parse(entry, info, may_move)
        if parsed is None:
            return None
        meta, content = parsed
        held = entry.name in held_names or meta.get("hold") is True
        return InboxNote(entry.name, Path(entry.path), info.st_size, info.st_mtime, meta,
                         content, note_author(meta, entry.name, agents), held, True)

    def _settled(self, name: str, info: os.stat_result, settle_ms: int,
                 wall_now: float) -> bool:
        """Unchanged for settle_ms. A time further ahead of the clock than that cannot be
        judged by age (clock skew, `tar x`, `cp -p` from another machine): such a note has
        settled once this inbox has seen it unchanged for settle_ms, with a warning."""
        age_ms = (wall_now - info.st_mtime) * 1000
        if settle_ms <= 0 or age_ms >= -settle_ms:
            self._seen_since.pop(name, None)
            if self._warned.get(name, "").startswith(_AHEAD):
                self._unwarn(name)
            return age_ms >= settle_ms or settle_ms <= 0
        signature = (info.st_size, info.st_mtime_ns)
        seen = self._seen_since.get(name)
        if seen is None or seen[0] != signature:
            seen = (signature, wall_now)
            self._seen_since[name] = seen
        stamp = datetime.fromtimestamp(info.st_mtime, UTC).isoformat(timespec="seconds")
        self._warn(name, f"{_AHEAD} ({stamp}): the note is taken once it has been unchanged "
                         "for engine.inbox_settle_ms; check the clock of whatever wrote it")
        return (wall_now - seen[1]) * 1000 >= settle_ms

    def _closed(self, entry: os.DirEntry[str] | _Named, info: os.stat_result) -> bool:
        """Not held open for writing: a writer that pauses longer than the settle time while
        writing a note in place has not finished it. Such a note waits (named in
        status.warnings) until its writer closes it; where that cannot be told (no file
        leases: another OS or file system, a file another user owns) settling alone decides.
        A note already parsed as it is now was found closed then: it is not asked again."""
        cached = self._cache.get(entry.name)
        if cached is not None and cached[0] == (info.st_size, info.st_mtime_ns):
            return True
        if open_for_writing(Path(entry.path)):
            self._warn(entry.name, f"{_OPEN} by another process: the note is taken once "
                                   "it is closed (write notes to a temporary name and rename "
                                   "them into the inbox)")
            return False
        if self._warned.get(entry.name, "").startswith(_OPEN):
            self._unwarn(entry.name)
        return True

    def clock_time(self, note: InboxNote) -> float:
        """The note's time for waiting bounds: its mtime, or, for one dated ahead of the clock,
        when this inbox first saw it as it is."""
        seen = self._seen_since.get(note.name)
        return min(note.mtime, seen[1]) if seen is not None else note.mtime

    def _warn(self, name: str, reason: str) -> None:
        if self._warned.get(name) == reason:
            return
        self._warned[name] = reason
        if self._warnings is not None:
            self._warnings.replaced(self.home.inbox / name, reason, event="inbox.file_warning")
        else:
            log.warning("inbox.file_warning", file=name, reason=reason)

    def _unwarn(self, name: str) -> None:
        if self._warned.pop(name, None) is not None and self._warnings is not None:
            self._warnings.forget(self.home.inbox / name)

    def _parse(self, entry: os.DirEntry[str] | _Named,
               info: os.stat_result, may_move: bool = True) -> tuple[dict[str, Any], str] | None:
        signature = (info.st_size, info.st_mtime_ns)
        cached = self._cache.get(entry.name)
        if cached and cached[0] == signature:
            return cached[1], cached[2]
        try:
            fd = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW)
            with os.fdopen(fd, "rb") as handle:
                raw = handle.read()
        except FileNotFoundError:
            return None
        except OSError as exc:
            self._set_aside(may_move, entry.name, f"cannot read the file: {exc}")
            return None
        reason = None
        try:
            content = raw.decode("utf-8")
            meta, body, warnings = read_note(content)
            meta, type_warnings = check_note_types(meta)
            for warning in warnings + type_warnings:
                log.warning("inbox.front_matter", name=entry.name, detail=warning)
            if not content.strip():
                reason = "file is empty"
            elif not body.strip():
                reason = "file has front matter but no body"
        except UnicodeDecodeError as exc:
            reason = f"not valid UTF-8 ({exc.reason} at byte {exc.start})"
        except FrontMatterError as exc:
            reason = f"front matter cannot be parsed: {exc.detail}"
        if reason:
            self._set_aside(may_move, entry.name, reason)
            return None
        self._cache[entry.name] = (signature, meta, content)
        return meta, content

    def _set_aside(self, may_move: bool, name: str, reason: str) -> None:
        if not may_move:
            raise WouldMove(name)
        self.quarantine(name, reason)

    def quarantine(self, name: str, reason: str) -> Path | None:
        """Move an inbox file to notes/quarantine/ (unique name) with a reason file."""
        source = self.home.inbox / name
        target_dir = self.home.quarantine
        target_dir.mkdir(parents=True, exist_ok=True)
        # A UTF-8 name (so it can be listed and requeued), short enough that
        # `<target>.reason.txt` is still a legal file name; the reason file names the original.
        raw_name = os.fsencode(name)
        shown = raw_name.decode("utf-8", "backslashreplace")
        readable = raw_name.decode("utf-8", "replace")
        stem, suffix = Path(readable).stem, Path(readable).suffix
        target = target_dir / fit_name(stem, suffix, QUARANTINE_NAME_MAX_BYTES)
        counter = 2
        while target.exists() or target.is_symlink():
            target = target_dir / fit_name(stem, f"-{counter}{suffix}",
                                           QUARANTINE_NAME_MAX_BYTES)
            counter += 1
        try:
            os.rename(source, target)
        except FileNotFoundError:
            return None
        except OSError as exc:
            log.error("inbox.quarantine_failed", name=name, error=str(exc))
            return None
        try:
            atomic_write_text(target.with_name(target.name + REASON_SUFFIX),
                              f"{shown}: {reason}\n")
        except OSError as exc:  # the file is out of the inbox either way; say why here
            log.error("inbox.quarantine_reason_failed", name=shown, reason=reason,
                      error=str(exc))
        self._cache.pop(name, None)
        self.quarantined_here += 1
        log.warning("inbox.quarantined", name=shown, reason=reason, path=str(target))
        return target
