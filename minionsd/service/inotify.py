"""Directory change events from Linux inotify, read without a thread of their own.

The descriptor is non-blocking: the event loop reads it when it is readable (add_reader), so
an event the kernel queued before a request arrived is taken in before that request is
handled. Elsewhere (no inotify) open() returns None and callers fall back to looking.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import struct
import sys
from dataclasses import dataclass

IN_MODIFY = 0x2
IN_ATTRIB = 0x4
IN_CLOSE_WRITE = 0x8
IN_MOVED_FROM = 0x40
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ONLYDIR = 0x01000000
CHANGES = (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE
           | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF)
GONE = IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED  # the watched directory itself went away
_HEADER = struct.Struct("iIII")  # wd, mask, cookie, len (then len bytes of name)
READ_BYTES = 65536


@dataclass(frozen=True)
class Event:
    wd: int  # -1 for a queue overflow
    mask: int
    name: str  # "" for an event about the watched directory itself


def parse(data: bytes) -> list[Event]:
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
    """One inotify descriptor (non-blocking, close-on-exec) and its directory watches."""

    def __init__(self, fd: int, libc: ctypes.CDLL) -> None:
        self.fd = fd
        self._libc = libc

    @classmethod
    def open(cls) -> Inotify | None:
        if not sys.platform.startswith("linux"):
            return None
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        except (OSError, AttributeError):
            return None
        return cls(fd, libc) if fd >= 0 else None

    def watch(self, directory: str) -> int | None:
        """Watch `directory` for changes to its entries: the watch descriptor, or None."""
        wd = self._libc.inotify_add_watch(self.fd, os.fsencode(directory),
                                          CHANGES | IN_ONLYDIR)
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
