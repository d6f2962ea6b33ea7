"""Counting the commits SQLite wrote to a WAL file: how tests see, from the file itself, how
many transactions (and so disk syncs) a piece of work cost.

WAL format (sqlite.org/fileformat2.html#walformat): a 32-byte header (page size at 8..12,
salts at 16..24), then frames of a 24-byte header and one page; a frame whose bytes 4..8 are
not zero ends a transaction. Frames from before the last WAL reset carry other salts.
"""

from __future__ import annotations

from pathlib import Path


def wal_commits(db_path: Path) -> tuple[bytes, int]:
    """(the WAL's salts, commit frames written since the WAL was last reset)."""
    try:
        data = db_path.with_name(db_path.name + "-wal").read_bytes()
    except FileNotFoundError:
        return b"", 0
    if len(data) < 32:
        return b"", 0
    page_size = int.from_bytes(data[8:12], "big")
    salts = data[16:24]
    commits = 0
    offset = 32
    while offset + 24 + page_size <= len(data):
        header = data[offset:offset + 24]
        if header[8:16] != salts:
            break
        if int.from_bytes(header[4:8], "big"):
            commits += 1
        offset += 24 + page_size
    return salts, commits


class CommitCounter:
    """Commits written between start() and count(); fails if the WAL was reset meanwhile."""

    def __init__(self, db_path: Path) -> None:
        self.db_path = db_path
        self.salts, self.before = wal_commits(db_path)

    def count(self) -> int:
        salts, after = wal_commits(self.db_path)
        assert salts == self.salts, "the WAL was reset during the measurement"
        return after - self.before
