"""SQLite access: migrations, the single writer, and read connections.

One thread owns the only write connection; every write is a function run there inside
`BEGIN IMMEDIATE … COMMIT`, so "database is locked" cannot happen between our own writers.
Reads use separate connections (one per reader thread). WAL lets readers run during a write.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError, ThreadPoolExecutor
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

import structlog

from minionsd.errors import StorageError
from minionsd.storage import stem_memo
from minionsd.storage.group_commit import GroupCommit, GroupedWrite
from minionsd.storage.live_counts import LiveCounts

log = structlog.get_logger()
T = TypeVar("T")
_MIGRATION_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


class DatabaseTooNew(StorageError):
    pass


def migrations() -> list[tuple[int, str, str]]:
    """(version, file name, SQL) for every bundled migration, in order."""
    found = []
    for entry in resources.files("minionsd.storage").joinpath("migrations").iterdir():
        match = _MIGRATION_NAME.match(entry.name)
        if match:
            found.append((int(match.group(1)), entry.name, entry.read_text(encoding="utf-8")))
    found.sort()
    versions = [v for v, _, _ in found]
    if versions != list(range(1, len(found) + 1)):
        raise StorageError(f"migrations must be numbered 1..n without gaps, got {versions}")
    return found


def schema_version(conn: sqlite3.Connection) -> int:
    return conn.execute("PRAGMA user_version").fetchone()[0]


def migrate(conn: sqlite3.Connection) -> list[int]:
    """Apply pending migrations, each with its version bump in one transaction."""
    known = migrations()
    current = schema_version(conn)
    if current > len(known):
        raise DatabaseTooNew(
            f"database schema version {current} is newer than this minionsd "
            f"(knows up to {len(known)}); upgrade minionsd"
        )
    applied = []
    for version, name, sql in known[current:]:
        try:
            conn.executescript(
                f"BEGIN IMMEDIATE;\n{sql}\nPRAGMA user_version = {version};\nCOMMIT;"
            )
        except sqlite3.Error as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise StorageError(f"migration {name} failed: {exc}") from exc
        applied.append(version)
    return applied


def check_fts5() -> None:
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.probe USING fts5(x)")
    except sqlite3.OperationalError as exc:
        raise StorageError(f"this Python's SQLite lacks FTS5: {exc}") from exc
    finally:
        conn.close()


def make_private(path: Path) -> None:
    """Create the database file 0600 before SQLite opens it (SQLite gives its -wal and -shm
    files the database file's mode), and take group/other access off an existing one."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)  # a symlinked state.db is allowed
    try:
        if os.fstat(fd).st_mode & 0o077:
            os.fchmod(fd, 0o600)
    finally:
        os.close(fd)
    for suffix in ("-wal", "-shm"):
        side = path.with_name(path.name + suffix)
        with contextlib.suppress(FileNotFoundError):
            if side.lstat().st_mode & 0o077:
                os.chmod(side, 0o600)


def connect(path: Path, *, readonly: bool = False) -> sqlite3.Connection:
    if readonly:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None,
                               check_same_thread=False, timeout=5.0)
    else:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=5.0)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute("PRAGMA busy_timeout=5000")
    conn.row_factory = sqlite3.Row
    return conn


def answers(conn: sqlite3.Connection) -> bool:
    """True when the connection answers a trivial query (the health check)."""
    return conn.execute("SELECT 1").fetchone()[0] == 1


# Threads that prepare writes: a batch of memory.add is cut in as many parts, so one part's
# tokenising in SQLite (which lets go of the GIL) overlaps another's redaction in Python.
PREPARING_THREADS = 2


class Database:
    """Owns the writer thread/connection and hands out per-thread read connections."""

    def __init__(self, path: Path) -> None:
        check_fts5()
        self.path = path
        self._stopping = False  # set by close(): no read starts, running ones are interrupted
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="db-writer")
        self._readers = ThreadPoolExecutor(max_workers=4, thread_name_prefix="db-reader")
        # One more reader for small keyed reads (status, health): never queued behind searches.
        self._light = ThreadPoolExecutor(max_workers=1, thread_name_prefix="db-light")
        # Work that prepares a write off the writer (redaction, tokenising), each thread with a
        # private in-memory connection for FTS5's tokeniser: see prepare().
        self._prep = ThreadPoolExecutor(max_workers=PREPARING_THREADS,
                                        thread_name_prefix="db-prep")
        self._scratch = threading.local()
        self._scratches: list[sqlite3.Connection] = []
        self._stem_memo = stem_memo.StemMemo()  # shared by the preparing threads (fts.term_counts)
        self._local = threading.local()
        self._read_conns: list[sqlite3.Connection] = []
        self._read_lock = threading.Lock()
        # status's figures from the database, read on the writer after each commit.
        self.live = LiveCounts()
        try:
            self._write_conn = self._writer.submit(self._open_writer).result()
        except BaseException:
            self._writer.shutdown(wait=True)
            self._readers.shutdown(wait=True)
            self._light.shutdown(wait=True)
            self._prep.shutdown(wait=True)
            raise
        self._group = GroupCommit(self._writer, self._in_transaction, self._set_durable)
        self._closed = False

    def _open_writer(self) -> sqlite3.Connection:
        make_private(self.path)
        conn = connect(self.path)
        try:
            migrate(conn)
            self.live.refresh(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _in_transaction(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """BEGIN IMMEDIATE, fn, COMMIT. Whatever fails - fn, or the COMMIT itself (a deferred
        constraint, a full disk, an I/O error) - is rolled back, so the writer is never left
        inside a transaction and the next write starts clean. A SQLite error is reported as a
        StorageError naming it; fn's own errors pass through unchanged."""
        conn = self._write_conn
        if conn.in_transaction:  # only after a failed ROLLBACK; never build on its leftovers
            self._rollback("stale transaction")
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                result = fn(conn, *args, **kwargs)
                conn.execute("COMMIT")
            except BaseException as exc:
                self._rollback(f"{type(exc).__name__}: {exc}")
                raise
        except sqlite3.Error as exc:
            log.error("db.write_failed", function=getattr(fn, "__name__", repr(fn)),
                      error=f"{type(exc).__name__}: {exc}")
            raise StorageError(f"database write failed: {exc}") from exc
        self._refresh_live()
        return result

    def _refresh_live(self) -> None:
        """status's figures read again after a commit, before its callers hear back (so a
        client sees its own write there). The write itself succeeded whatever happens here;
        after a failed read status counts in SQL until a later commit reads them again."""
        try:
            self.live.refresh(self._write_conn)
        except sqlite3.Error as exc:
            log.error("db.live_counts_failed", error=f"{type(exc).__name__}: {exc}")

    def _rollback(self, reason: str) -> None:
        conn = self._write_conn
        if not conn.in_transaction:
            return  # SQLite already rolled back (it does so itself for some errors)
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error as exc:
            log.error("db.rollback_failed", reason=reason[:300], error=str(exc))

    def _set_durable(self, durable: bool) -> None:
        # WAL + NORMAL: a commit is not fsynced; the next FULL commit (or checkpoint) syncs it.
        self._write_conn.execute(f"PRAGMA synchronous={'FULL' if durable else 'NORMAL'}")

    async def write(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run fn(conn, *args, **kwargs) in one write transaction on the writer thread."""
        return await asyncio.wrap_future(
            self._writer.submit(self._in_transaction, fn, *args, **kwargs))

    async def write_grouped(self, fn: Callable[..., T], *args: Any) -> T:
        """:meth:`write` for a write that touches only the database (it may be run again
        after a rollback): it shares its transaction and disk sync with the other grouped
        writes queued meanwhile (storage/group_commit.py), and fails or succeeds on its own."""
        future, = self._group.submit([GroupedWrite(fn, [args])])
        return await asyncio.wrap_future(future)

    async def write_prepared(self, prepare: Callable[..., Any], prepare_args: tuple[Any, ...],
                             fn: Callable[..., T], *args: Any) -> T:
        """:meth:`write_grouped` of fn(conn, prepare(scratch, *prepare_args), *args): the
        preparing thread (see :meth:`prepare`) queues the write itself as soon as it is
        prepared, so the event loop hears back once, when the write is committed, instead of
        once after preparing and again after writing. What prepare raises is raised here."""
        future: Future[T] = Future()

        def prepare_then_queue() -> None:
            try:
                prepared = self._prepare(prepare, *prepare_args)
                self._group.submit([GroupedWrite(fn, [(prepared, *args)], future=future)])
            except BaseException as exc:  # the caller's to see, as if prepared on its own
                with contextlib.suppress(InvalidStateError):  # the caller gave up
                    future.set_exception(exc)

        self._prep.submit(prepare_then_queue)
        return await asyncio.wrap_future(future)

    async def write_each(self, fn: Callable[..., T],
                         calls: list[tuple[Any, ...]]) -> list[T | BaseException]:
        """fn(conn, *args) for every args of `calls`, committed together (one transaction and
        disk sync) as grouped writes; each outcome is its result or the exception it raised,
        in order, and one failing call does not fail the others."""
        if not calls:
            return []
        future, = self._group.submit([GroupedWrite(fn, calls, each=True)])
        return await asyncio.wrap_future(future)

    async def write_unsynced(self, fn: Callable[..., T], *args: Any) -> T:
        """A grouped write of data whose loss in a power cut is harmless (retrieval telemetry).

        Committed and visible at once, and safe from a process crash; unless a durable write
        shares its group, the fsync is left to the next durable commit.
        """
        return await asyncio.wrap_future(self.write_unsynced_nowait(fn, *args))

    def write_blocking(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """The same from a non-loop thread (jobs, consolidation)."""
        return self._writer.submit(self._in_transaction, fn, *args, **kwargs).result()

    def write_unsynced_nowait(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        """:meth:`write_unsynced` without waiting: the write is queued behind earlier ones.
        The caller reports failures from the returned future."""
        future, = self._group.submit([GroupedWrite(fn, [args], durable=False)])
        return future

    async def prepare(self, fn: Callable[..., T], *args: Any) -> T:
        """fn(scratch, *args) on the preparing thread, where `scratch` is an in-memory SQLite
        connection of its own (FTS5 tokenises there exactly as in state.db). CPU work for a
        write runs here, beside the writer: while the writer waits on SQLite or the disk, the
        next write is being prepared."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._prep, self._prepare, fn, *args)

    def prepare_blocking(self, fn: Callable[..., T], *args: Any) -> T:
        """prepare() from a non-loop thread (consolidation), waiting for the result."""
        return self._prep.submit(self._prepare, fn, *args).result()

    def _prepare(self, fn: Callable[..., T], *args: Any) -> T:
        scratch = getattr(self._scratch, "conn", None)
        if scratch is None:  # this preparing thread's own, closed with the database
            scratch = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False,
                                      factory=stem_memo.ScratchConnection)
            scratch.stem_memo = self._stem_memo
            self._scratch.conn = scratch
            with self._read_lock:
                self._scratches.append(scratch)
        return fn(scratch, *args)

    async def settled(self) -> None:
        """Wait until every write queued before this call has been committed (or failed)."""
        await asyncio.wrap_future(self._writer.submit(lambda: None))

    def reader(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = connect(self.path, readonly=True)
            self._local.conn = conn
            with self._read_lock:
                self._read_conns.append(conn)
        return conn

    def _read(self, fn: Callable[..., T], *args: Any) -> T:
        if self._stopping:
            raise StorageError("the database is closing: minionsd is stopping")
        return fn(self.reader(), *args)

    async def read(self, fn: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._readers, self._read, fn, *args)

    def read_blocking(self, fn: Callable[..., T], *args: Any) -> T:
        """A read from any non-loop thread; runs on the reader pool so connections stay few."""
        return self._read_on(self._readers, "db-reader", fn, *args)

    def _read_on(self, pool: Any, thread_prefix: str, fn: Callable[..., T], *args: Any) -> T:
        # Already on one of the pool's threads: run here (submitting would wait on itself).
        if threading.current_thread().name.startswith(thread_prefix):
            return self._read(fn, *args)
        return pool.submit(self._read, fn, *args).result()

    async def ping(self) -> bool:
        """True when a read connection answers a trivial query (the health check)."""
        return await self.read_light(answers)

    async def read_light(self, fn: Callable[..., T], *args: Any) -> T:
        """A read of a few rows by key (status counters, health) on a thread and connection
        of its own, so it answers at once while the reader pool is busy with searches and
        retrievals. Never use it for a scan or a search: its callers would wait for that."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._light, self._read, fn, *args)

    def read_light_blocking(self, fn: Callable[..., T], *args: Any) -> T:
        """The same from a non-loop thread."""
        return self._read_on(self._light, "db-light", fn, *args)

    def _stop_reads(self) -> None:
        """Shut the reader pools down without waiting for a long read (a search, a scan) to
        end: queued reads are refused (_read), and every read connection's running statement
        is interrupted, again until the pools' threads are done (a read that was between two
        statements starts its next one, which is interrupted in turn, every 50 ms)."""
        def shut_down() -> None:
            self._light.shutdown(wait=True)
            self._readers.shutdown(wait=True)

        waiter = threading.Thread(target=shut_down, name="db-close")
        waiter.start()
        while waiter.is_alive():
            with self._read_lock:
                for conn in self._read_conns:
                    conn.interrupt()
            waiter.join(0.05)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._stopping = True
        self._group.close()
        self._stop_reads()
        self._prep.shutdown(wait=True, cancel_futures=True)
        with self._read_lock:
            for scratch in self._scratches:
                scratch.close()
            self._scratches.clear()
        # Readers first: only the last connection to close checkpoints the WAL into state.db
        # and deletes it, and a read-only connection cannot, so the writer must be last.
        with self._read_lock:
            for conn in self._read_conns:
                conn.close()
            self._read_conns.clear()

        def _close_writer() -> None:
            try:
                self._write_conn.execute("PRAGMA optimize")
            except sqlite3.Error:
                pass
            self._write_conn.close()

        self._writer.submit(_close_writer).result()
        self._writer.shutdown(wait=True)
