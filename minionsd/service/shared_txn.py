"""Jobs from many threads that arrive together run in one write transaction.

inbox.submit places each note inside the transaction that claims its name, and syncs the
directory there: one transaction, one COMMIT sync and one directory sync per note, on the
writer thread every write waits for. Submissions that arrive while one is being written wait,
and then go together: the first to wait leads the next transaction, running every job queued
by then, then the end step once (the directory sync), then one COMMIT; each job still gets its
own outcome. (storage/group_commit.py cannot take these: its writes must touch only the
database, because a failed group is run again write by write.)

Each job runs inside `alone(conn)` (a savepoint): a job that raises fails alone, what it wrote
undone, and the others' writes stay. A failed end step or COMMIT fails every job of that
transaction, as it would have failed each one written alone.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

Job = Callable[[Any], Any]


class _Slot:
    __slots__ = ("failed", "job", "lead", "outcome", "ready")

    def __init__(self, job: Job) -> None:
        self.job = job
        self.outcome: Any = None
        self.failed = False
        self.lead = False
        self.ready = threading.Event()

    def result(self) -> Any:
        if self.failed:
            raise self.outcome
        return self.outcome


class SharedTransactions:
    """`write(fn)` runs fn(conn) in one write transaction and returns its result (the
    database's write_blocking); `alone(conn)` is the savepoint each job runs in;
    `end(conn, outcomes)` runs once per transaction after its jobs, inside it, with the
    outcomes of the jobs that did not fail."""

    def __init__(self, write: Callable[[Job], Any],
                 end: Callable[[Any, list[Any]], None],
                 alone: Callable[[Any], AbstractContextManager[Any]]) -> None:
        self._write = write
        self._end = end
        self._alone = alone
        self._lock = threading.Lock()
        self._waiting: list[_Slot] = []
        self._busy = False
        self.transactions = 0  # (for tests and the bench)

    def waiting(self) -> int:
        """Jobs queued behind the transaction under way."""
        with self._lock:
            return len(self._waiting)

    def run(self, job: Job) -> Any:
        """job(conn) in a transaction shared with the jobs that arrive meanwhile; its result,
        or the exception it (or its transaction) raised."""
        slot = _Slot(job)
        with self._lock:
            self._waiting.append(slot)
            slot.lead = not self._busy
            self._busy = True
        if not slot.lead:
            slot.ready.wait()
            if not slot.lead:
                return slot.result()
        with self._lock:
            batch, self._waiting = self._waiting, []
        try:
            self._commit(batch)
        finally:
            with self._lock:  # the first still waiting leads the next transaction
                if self._waiting:
                    self._waiting[0].lead = True
                    self._waiting[0].ready.set()
                else:
                    self._busy = False
        return slot.result()

    def _commit(self, batch: list[_Slot]) -> None:
        def all_jobs(conn: Any) -> list[tuple[bool, Any]]:
            outcomes: list[tuple[bool, Any]] = []
            for slot in batch:
                try:
                    with self._alone(conn):
                        outcomes.append((False, slot.job(conn)))
                except Exception as exc:  # this job's own failure: the others go on
                    outcomes.append((True, exc))
            self._end(conn, [value for failed, value in outcomes if not failed])
            return outcomes

        self.transactions += 1
        try:
            outcomes = self._write(all_jobs)
        except BaseException as exc:
            outcomes = [(True, exc)] * len(batch)
        for slot, (failed, value) in zip(batch, outcomes, strict=True):
            slot.failed, slot.outcome = failed, value
            if not slot.lead:
                slot.ready.set()
