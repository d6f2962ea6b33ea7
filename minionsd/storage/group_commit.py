"""Group commit on the single writer: writes queued while the writer is busy share one
transaction, and so one disk sync.

A grouped write is a function of the writer's connection that touches nothing but the database
(so running it a second time after a rollback is the same as running it once). The writer
thread takes every grouped write queued at that moment (up to a limit), runs them one after the
other in one `BEGIN IMMEDIATE … COMMIT`, and answers each with its own result. When any of them
fails, or the COMMIT does, the whole transaction is rolled back and each write is run again in a
transaction of its own, so one bad write fails alone and the others are committed as if they
had been sent one by one. No savepoints: a savepoint makes every FTS5 table flush its pending
changes, which would cost a segment per record.

While the writer syncs one group to disk the next one gathers, so concurrent single writes
share commits, and a JSON-RPC batch of writes submitted together costs one sync. A write is
answered only after its COMMIT returned, so every answered write is as durable as the
connection's `synchronous` setting makes it. Writes marked not durable (telemetry) commit with
`synchronous=NORMAL` when no durable write shares their group.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from typing import Any

# Calls per transaction: enough for a 500-request batch with room to spare, small enough that
# the writer never holds one transaction for long.
GROUP_LIMIT = 1000


@dataclass
class GroupedWrite:
    """fn(conn, *args) for each args of `calls`. With `each`, the future's result is the list
    of every call's outcome (its result, or the exception it raised); without, there is one
    call and the future carries its result or exception."""

    fn: Callable[..., Any]
    calls: list[tuple[Any, ...]]
    durable: bool = True
    each: bool = False
    future: Future[Any] = field(default_factory=Future)


def _run_all(conn: sqlite3.Connection, jobs: Sequence[GroupedWrite]) -> list[list[Any]]:
    return [[job.fn(conn, *args) for args in job.calls] for job in jobs]


class GroupCommit:
    """The queue of grouped writes in front of the writer thread (see the module docstring).

    `executor` is the writer's one-thread executor; `in_transaction(fn, *args)` runs fn in one
    write transaction on that thread and raises what fails; `set_durable(flag)` switches the
    writer connection between synchronous FULL and NORMAL.
    """

    def __init__(self, executor: Executor,
                 in_transaction: Callable[..., Any],
                 set_durable: Callable[[bool], None],
                 limit: int = GROUP_LIMIT) -> None:
        self._executor = executor
        self._in_transaction = in_transaction
        self._set_durable = set_durable
        self._limit = limit
        self._pending: list[GroupedWrite] = []
        self._lock = threading.Lock()
        self._scheduled = False
        self._closed = False
        self.groups = 0  # transactions committed or tried (for tests and the bench)

    def submit(self, writes: Sequence[GroupedWrite]) -> list[Future[Any]]:
        """Queue `writes` (in order, behind every write queued before) and return their
        futures. Writes submitted in one call go into the same group when they fit."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the database is closed; no write can be queued")
            self._pending.extend(writes)
            if not self._scheduled and self._pending:
                self._scheduled = True
                self._executor.submit(self._drain)
        return [write.future for write in writes]

    def close(self) -> None:
        """Refuse new writes; those already queued still run (the writer drains them)."""
        with self._lock:
            self._closed = True

    def _take(self) -> list[GroupedWrite]:
        with self._lock:
            size = count = 0
            for job in self._pending:  # whole jobs, up to the limit in calls (at least one)
                if count and size + len(job.calls) > self._limit:
                    break
                size += len(job.calls)
                count += 1
            taken, self._pending = self._pending[:count], self._pending[count:]
            if self._pending:
                self._executor.submit(self._drain)
            else:
                self._scheduled = False
        # A write whose caller gave up before it started is not run (as with an executor).
        return [job for job in taken if job.future.set_running_or_notify_cancel()]

    def _drain(self) -> None:
        jobs = self._take()
        if not jobs:
            return
        self.groups += 1
        durable = any(job.durable for job in jobs)
        if not durable:
            self._set_durable(False)
        try:
            if len(jobs) == 1 and len(jobs[0].calls) == 1:
                self._run_alone(jobs[0])
                return
            try:
                results = self._in_transaction(_run_all, jobs)
            except BaseException:  # every write is tried again on its own
                for job in jobs:
                    self._run_alone(job)
                return
            for job, result in zip(jobs, results, strict=True):
                job.future.set_result(result if job.each else result[0])
        finally:
            if not durable:
                self._set_durable(True)

    def _run_alone(self, job: GroupedWrite) -> None:
        outcomes: list[Any] = []
        for args in job.calls:
            try:
                outcomes.append(self._in_transaction(job.fn, *args))
            except BaseException as exc:  # handed to the caller
                outcomes.append(exc)
        if job.each:
            job.future.set_result(outcomes)
        elif isinstance(outcomes[0], BaseException):
            job.future.set_exception(outcomes[0])
        else:
            job.future.set_result(outcomes[0])
