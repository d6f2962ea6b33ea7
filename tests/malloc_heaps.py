"""Count a process's glibc malloc heaps (the arenas beyond the main one) from /proc/PID/maps.

glibc maps each such heap as a 64 MiB region aligned to 64 MiB: the part in use read-write,
the rest reserved without access. Nothing else a Python process maps looks like that.
"""

from __future__ import annotations

from pathlib import Path

HEAP_SPAN = 64 << 20


def heaps(pid: int) -> int:
    regions = []
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        fields = line.split()
        if len(fields) > 5:  # a file or a named mapping ([stack], [heap], ...)
            continue
        start, end = (int(part, 16) for part in fields[0].split("-"))
        regions.append((start, end, fields[1]))
    count = 0
    for index, (start, end, perms) in enumerate(regions):
        if start % HEAP_SPAN or perms != "rw-p":
            continue
        if end - start == HEAP_SPAN:
            count += 1
        elif index + 1 < len(regions):
            rest_start, rest_end, rest_perms = regions[index + 1]
            if rest_start == end and rest_perms == "---p" and rest_end == start + HEAP_SPAN:
                count += 1
    return count
