"""Directory change events from Linux inotify, read without a thread of their own.

The descriptor and its watches come from watchdog's inotify bindings (the same ones its
observer uses); what differs is who reads: the descriptor is non-blocking and the event loop
reads it when it is readable (add_reader), so an event the kernel queued before a request
arrived is taken in before that request is handled. Elsewhere (no inotify) open() returns None
and callers fall back to looking.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from typing import Any

try:  # watchdog refuses to load its inotify module where libc has no inotify
    from watchdog.observers.inotify_c import InotifyConstants as _C
    from watchdog.observers.inotify_c import inotify_add_watch, inotify_init
except Exception:  # any failure to load means: no inotify here
    _C: Any = None

IN_Q_OVERFLOW = 0x4000  # inotify(7); also InotifyConstants.IN_Q_OVERFLOW
CHANGES = 0 if _C is None else (
    _C.IN_MODIFY | _C.IN_ATTRIB | _C.IN_CLOSE_WRITE | _C.IN_MOVED_FROM | _C.IN_MOVED_TO
    | _C.IN_CREATE | _C.IN_DELETE | _C.IN_DELETE_SELF | _C.IN_MOVE_SELF)
# The watched directory itself went away (deleted, moved, or its watch dropped).
GONE = 0 if _C is None else _C.IN_DELETE_SELF | _C.IN_MOVE_SELF | _C.IN_IGNORED
_HEADER = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len; then the name
READ_BYTES = 65536


@dataclass(frozen=True)
class Event:
    wd: int  # -1 for a queue overflow
    mask: int
    name: str  # "" for an event about the watched directory itself


def parse(data: bytes) -> list[Event]:
    """The events of one read of an inotify descriptor (whole `struct inotify_event`s)."""
    events = []
    offset = 0
    while offset + _HEADER.size <= len(data):
        wd, mask, _cookie, length = _HEADER.unpack_from(data, offset)
        offset += _HEADER.size
        raw = data[offset:offset + length].split(b"\0", 1)[0]
        offset += length
        events.append(Event(wd, mask, os.fsdecode(raw) if raw else ""))
    return events


class Inotify:
    """One inotify descriptor (non-blocking, not inherited by children) and its directory
    watches."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    @classmethod
    def open(cls) -> Inotify | None:
        if _C is None:
            return None
        fd = inotify_init()
        if fd < 0:
            return None
        os.set_blocking(fd, False)
        os.set_inheritable(fd, False)
        return cls(fd)

    def watch(self, directory: str) -> int | None:
        """Watch `directory` for changes to its entries: the watch descriptor, or None."""
        wd = inotify_add_watch(self.fd, os.fsencode(directory), CHANGES | _C.IN_ONLYDIR)
        return wd if wd >= 0 else None

    def read(self) -> list[Event]:
        """Every event queued now (none when the queue is empty)."""
        events: list[Event] = []
        while True:
            try:
                data = os.read(self.fd, READ_BYTES)
            except BlockingIOError:
                return events
            events.extend(parse(data))
            # A read returns whole events up to the buffer: room left means none were left.
            if len(data) < READ_BYTES - 4096:
                return events

    def close(self) -> None:
        os.close(self.fd)
