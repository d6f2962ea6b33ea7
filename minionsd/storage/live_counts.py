"""What `status` shows from the database, kept in memory and read again after every commit.

The writer thread calls refresh() right after each COMMIT that changed a row, before any of
that transaction's callers hear back, so a client that saw its write answered sees it in
`status` too; status itself runs no SQL, so it waits neither behind the writer nor behind
searches on the readers, and gives up the interpreter lock for no statement.

Records that expire at read time (SPEC §7) are counted at the time asked: the earliest
EXPIRING_HEAD expiry times of active records are kept, sorted, and the ones not after `now`
are moved from active to expired, with the comparison SQL makes (text, `expires_at <= now`).
Past the last kept time the count is not known from memory; records() then says so (None)
and the caller counts in SQL.
"""

from __future__ import annotations

import bisect
import sqlite3
from dataclasses import dataclass
from typing import Any

from minionsd.storage import job_runs, journal

EXPIRING_HEAD = 256
STATUSES = ("active", "superseded", "retracted", "expired")


@dataclass(frozen=True)
class Figures:
    stored: dict[str, int]  # record_counts: records by stored status
    expiring: tuple[str, ...]  # the earliest expires_at of active records, sorted
    complete: bool  # `expiring` holds every active record that has an expiry
    counters: dict[str, str]  # the consolidation journal's counters
    job_runs: dict[str, dict[str, Any]]  # job_runs.last_runs
    version: int  # reads so far


def read_figures(conn: sqlite3.Connection, version: int, head: int = EXPIRING_HEAD) -> Figures:
    stored = dict.fromkeys(STATUSES, 0)
    for status, n in conn.execute("SELECT status, n FROM record_counts"):
        if status in stored:
            stored[status] = n
    expiring = tuple(row[0] for row in conn.execute(
        """SELECT expires_at FROM memory_records INDEXED BY memory_records_expiring
           WHERE status = 'active' AND expires_at IS NOT NULL
           ORDER BY expires_at LIMIT :head""", {"head": head + 1}))
    return Figures(stored, expiring[:head], len(expiring) <= head,
                   journal.counters(conn), job_runs.last_runs(conn), version)


class LiveCounts:
    """The latest Figures: replaced whole by the writer thread, read by anyone."""

    def __init__(self, head: int = EXPIRING_HEAD) -> None:
        self.figures: Figures | None = None  # None until read, and after a failed read
        self.head = head
        self._seen_changes = -1

    def refresh(self, conn: sqlite3.Connection) -> None:
        """Read the figures again on the writer connection (outside a transaction) when
        anything was written since the last time. A failed read leaves no figures (status
        then reads SQL) and raises."""
        changes = conn.total_changes
        if changes == self._seen_changes and self.figures is not None:
            return
        version = self.figures.version + 1 if self.figures is not None else 1
        self.figures = None
        self.figures = read_figures(conn, version, self.head)
        self._seen_changes = changes

    def records(self, now_iso: str) -> dict[str, int] | None:
        """Records by status as a read at `now_iso` shows them; None when that is not known
        from memory (no figures, or more records expire by then than memory holds): count
        them in SQL then (records.status_counts)."""
        figures = self.figures
        if figures is None:
            return None
        due = bisect.bisect_right(figures.expiring, now_iso)
        if due == len(figures.expiring) and not figures.complete:
            return None
        counts = dict(figures.stored)
        counts["active"] -= due
        counts["expired"] += due
        return counts

    def counters(self) -> dict[str, str] | None:
        return None if self.figures is None else self.figures.counters

    def job_runs(self) -> dict[str, dict[str, Any]] | None:
        return None if self.figures is None else self.figures.job_runs
