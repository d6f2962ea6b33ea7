"""Fewer C heaps for the daemon's threads (glibc only).

glibc gives each new thread that calls malloc an arena of its own, up to eight per core, and an
arena keeps the memory it freed. The daemon has a dozen threads (readers, the writer, the
preparing threads, the worker pool) and SQLite allocates its page caches and FTS5 buffers with
malloc on all of them, so each one's high-water mark stays resident. Two arenas are enough for
a daemon that mostly holds the interpreter lock: on a 100,000-record bulk load the peak
resident size falls by about 3 MB with no change in speed (docs/performance.md).

The limit is set with mallopt(M_ARENA_MAX) before the first thread starts. A user who sets
MALLOC_ARENA_MAX in the environment has chosen already: glibc read it at start-up, and it is
left alone. Other C libraries (musl, macOS) are left alone too.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Mapping

ARENAS = 2
_M_ARENA_MAX = -8  # glibc's <malloc.h>


def limit(environ: Mapping[str, str], arenas: int = ARENAS) -> int | None:
    """Cap glibc's malloc arenas at `arenas` for threads created from now on; the cap set, or
    None when nothing was set (not glibc, or MALLOC_ARENA_MAX already chosen)."""
    if not sys.platform.startswith("linux") or "MALLOC_ARENA_MAX" in environ:
        return None
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the process's own C library
    except (OSError, AttributeError):
        return None
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    # glibc returns 1 when it took the setting; musl's mallopt is a stub returning 0.
    return arenas if mallopt(_M_ARENA_MAX, arenas) == 1 else None
