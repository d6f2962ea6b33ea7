"""What `status` shows from the database, kept in memory and read again after a commit that
changed it.

The writer thread calls refresh() right after each COMMIT, before any of that transaction's
callers hear back, so a client that saw its write answered sees it in `status` too; status
itself runs no SQL, so it waits neither behind the writer nor behind searches on the
readers, and gives up the interpreter lock for no statement.

Which figures a commit changed is known without reading them: temporary triggers, private to
the writer's connection, flag a kind in a temporary table when a row it depends on changes
(`records`: the stored counts and the expiry times of active records; `counters`: the
consolidation journal's counters; `jobs`: job results; `inbox`: holds and which notes open
batches hold). refresh() reads the flags (one small statement) and re-reads only the flagged
figures, so a commit of retrieval telemetry or of memory.search's bookkeeping costs one
statement, not four. The flags are rows of the same transaction: a rolled-back write leaves
none. `inbox_version` counts the commits that changed holds or batches, and `inbox` holds
what they are now (held names, names in open batches), for the inbox view status keeps
(service/inbox_view.py).

Records that expire at read time (SPEC §7) are counted at the time asked: the earliest
EXPIRING_HEAD expiry times of active records are kept, sorted, and the ones not after `now`
are moved from active to expired, with the comparison SQL makes (text, `expires_at <= now`).
Past the last kept time the count is not known from memory; records() then says so (None)
and the caller counts in SQL.
"""

from __future__ import annotations

import bisect
import dataclasses
import sqlite3
from dataclasses import dataclass
from typing import Any

from minionsd.storage import job_runs, journal, submissions

EXPIRING_HEAD = 256
STATUSES = ("active", "superseded", "retracted", "expired")
KINDS = ("records", "counters", "jobs", "inbox")
# (kind, table, the change that flags it). record_counts is kept by triggers on every insert,
# delete and status change of a record; an expiry time can change without those.
WATCHED = (
    ("records", "record_counts", "INSERT"), ("records", "record_counts", "UPDATE"),
    ("records", "record_counts", "DELETE"),
    ("records", "memory_records", "UPDATE OF expires_at"),
    ("counters", "counters", "INSERT"), ("counters", "counters", "UPDATE"),
    ("counters", "counters", "DELETE"),
    ("jobs", "job_runs", "INSERT"), ("jobs", "job_runs", "UPDATE"),
    ("jobs", "job_runs", "DELETE"),
    ("inbox", "inbox_holds", "INSERT"), ("inbox", "inbox_holds", "DELETE"),
    ("inbox", "inbox_holds", "UPDATE"),
    # Which names an open batch holds: a batch's state, a note's batch, name and done mark.
    ("inbox", "batches", "INSERT"), ("inbox", "batches", "UPDATE OF state"),
    ("inbox", "batches", "DELETE"),
    ("inbox", "batch_notes", "INSERT"), ("inbox", "batch_notes", "UPDATE OF batch_id, name, done"),
    ("inbox", "batch_notes", "DELETE"),
)


@dataclass(frozen=True)
class Figures:
    stored: dict[str, int]  # record_counts: records by stored status
    expiring: tuple[str, ...]  # the earliest expires_at of active records, sorted
    complete: bool  # `expiring` holds every active record that has an expiry
    counters: dict[str, str]  # the consolidation journal's counters
    job_runs: dict[str, dict[str, Any]]  # job_runs.last_runs
    version: int  # reads so far


def _record_figures(conn: sqlite3.Connection,
                    head: int) -> tuple[dict[str, int], tuple[str, ...], bool]:
    stored = dict.fromkeys(STATUSES, 0)
    for status, n in conn.execute("SELECT status, n FROM record_counts"):
        if status in stored:
            stored[status] = n
    expiring = tuple(row[0] for row in conn.execute(
        """SELECT expires_at FROM memory_records INDEXED BY memory_records_expiring
           WHERE status = 'active' AND expires_at IS NOT NULL
           ORDER BY expires_at LIMIT :head""", {"head": head + 1}))
    return stored, expiring[:head], len(expiring) <= head


def read_figures(conn: sqlite3.Connection, version: int, head: int = EXPIRING_HEAD) -> Figures:
    stored, expiring, complete = _record_figures(conn, head)
    return Figures(stored, expiring, complete, journal.counters(conn), job_runs.last_runs(conn),
                   version)


def install_flags(conn: sqlite3.Connection) -> None:
    """The temporary flag table and triggers on `conn` (outside a transaction; the tables
    they watch must exist). Temporary objects live and die with the connection."""
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS live_touched "
                 "(kind TEXT PRIMARY KEY, touched INTEGER NOT NULL)")
    conn.executemany("INSERT OR IGNORE INTO temp.live_touched (kind, touched) VALUES (?, 1)",
                     [(kind,) for kind in KINDS])
    for number, (kind, table, change) in enumerate(WATCHED):
        # Unqualified in the body (SQLite's rule for triggers); only temp has live_touched.
        conn.execute(f"CREATE TEMP TRIGGER IF NOT EXISTS live_touched_{number} "
                     f"AFTER {change} ON main.{table} BEGIN "
                     f"UPDATE live_touched SET touched = 1 "
                     f"WHERE kind = '{kind}' AND touched = 0; END")


def take_flags(conn: sqlite3.Connection) -> set[str]:
    """The kinds flagged since the last call, cleared (outside a transaction)."""
    kinds = {row[0] for row in conn.execute("SELECT kind FROM temp.live_touched WHERE touched")}
    if kinds:
        conn.execute("UPDATE temp.live_touched SET touched = 0 WHERE touched")
    return kinds


class LiveCounts:
    """The latest Figures: replaced whole by the writer thread, read by anyone."""

    def __init__(self, head: int = EXPIRING_HEAD) -> None:
        self.figures: Figures | None = None  # None until read, and after a failed read
        self.head = head
        self.inbox_version = 0  # commits that changed holds or batches (see the docstring)
        # (inbox_version, names held in state.db, names open batches hold); None until read
        self.inbox: tuple[int, frozenset[str], frozenset[str]] | None = None
        self.reads = 0  # statements refresh() ran, flags included (for tests and the bench)
        self._seen_changes = -1
        self._flagged: sqlite3.Connection | None = None  # the connection with the triggers

    def refresh(self, conn: sqlite3.Connection) -> None:
        """Read again, on the writer connection (outside a transaction), the figures a write
        since the last call changed. A failed read leaves no figures (status then reads SQL)
        and raises."""
        changes = conn.total_changes
        if changes == self._seen_changes and self.figures is not None:
            return
        first = self._flagged is not conn
        if first:  # first use of this connection: every figure is read
            install_flags(conn)
            self._flagged = conn
            self.figures = None
        kinds = take_flags(conn)
        self.reads += 1
        if "inbox" in kinds and not first:
            self.inbox_version += 1
        if "inbox" in kinds or self.inbox is None:
            self.inbox = None
            self.inbox = (self.inbox_version, frozenset(submissions.held_names(conn)),
                          frozenset(journal.names_in_open_batches(conn)))
            self.reads += 2
        old = self.figures
        if old is None:
            kinds = set(KINDS)
        elif not kinds & {"records", "counters", "jobs"}:
            self._seen_changes = conn.total_changes
            return
        self.figures = None
        version = old.version + 1 if old is not None else 1
        if old is None:
            self.figures = read_figures(conn, version, self.head)
            self.reads += 4
        else:
            changed: dict[str, Any] = {"version": version}
            if "records" in kinds:
                stored, expiring, complete = _record_figures(conn, self.head)
                changed |= {"stored": stored, "expiring": expiring, "complete": complete}
                self.reads += 2
            if "counters" in kinds:
                changed["counters"] = journal.counters(conn)
                self.reads += 1
            if "jobs" in kinds:
                changed["job_runs"] = job_runs.last_runs(conn)
                self.reads += 1
            self.figures = dataclasses.replace(old, **changed)
        self._seen_changes = conn.total_changes

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
