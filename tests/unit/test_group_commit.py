"""Group commit on the single writer (storage/group_commit.py), on a real SQLite file: writes
queued together share one transaction, a failing one fails alone, and the count of commits in
the WAL shows it."""

from __future__ import annotations

import asyncio
import sqlite3
import threading

import pytest

from minionsd.storage.database import Database
from tests.walframes import CommitCounter


@pytest.fixture
def db(tmp_path):
    database = Database(tmp_path / "state.db")
    database.write_blocking(lambda conn: conn.execute(
        "CREATE TABLE item (n INTEGER PRIMARY KEY CHECK (n < 1000))"))
    yield database
    database.close()


def add(conn: sqlite3.Connection, n: int) -> int:
    conn.execute("INSERT INTO item (n) VALUES (?)", (n,))
    return n


def items(conn: sqlite3.Connection) -> list[int]:
    return [row[0] for row in conn.execute("SELECT n FROM item ORDER BY n")]


def test_write_each_is_one_commit(db):
    counter = CommitCounter(db.path)
    outcomes = asyncio.run(db.write_each(add, [(n,) for n in range(50)]))
    assert outcomes == list(range(50))
    assert counter.count() == 1
    assert db.read_blocking(items) == list(range(50))


def test_a_failing_call_fails_alone_and_the_others_commit(db):
    calls = [(1,), (2,), (5000,), (3,), (2,)]  # 5000 breaks the CHECK, the second 2 the key
    outcomes = asyncio.run(db.write_each(add, calls))
    assert outcomes[:2] == [1, 2] and outcomes[3] == 3
    assert isinstance(outcomes[2], Exception) and "CHECK" in str(outcomes[2])
    assert isinstance(outcomes[4], Exception) and "UNIQUE" in str(outcomes[4])
    assert db.read_blocking(items) == [1, 2, 3]


def test_writes_queued_while_the_writer_is_busy_share_the_next_commit(db):
    release = threading.Event()
    started = threading.Event()

    def slow(conn: sqlite3.Connection) -> None:
        started.set()
        release.wait(10)
        add(conn, 999)

    async def scenario() -> list[int]:
        busy = asyncio.ensure_future(db.write(slow))
        await asyncio.get_running_loop().run_in_executor(None, started.wait, 10)
        singles = [asyncio.ensure_future(db.write_grouped(add, n)) for n in range(20)]
        await asyncio.sleep(0.05)  # every single call is queued behind the busy writer
        release.set()
        await busy
        return await asyncio.gather(*singles)

    counter = CommitCounter(db.path)
    assert asyncio.run(scenario()) == list(range(20))
    assert counter.count() == 2  # the slow write, then all twenty together


def test_one_bad_single_call_in_a_group_fails_alone(db):
    async def scenario() -> list[object]:
        futures = [db.write_grouped(add, n) for n in (10, 2000, 11)]
        return await asyncio.gather(*futures, return_exceptions=True)

    first, bad, last = asyncio.run(scenario())
    assert (first, last) == (10, 11)
    assert isinstance(bad, Exception)
    assert db.read_blocking(items) == [10, 11]


def test_unsynced_writes_are_grouped_and_visible(db):
    async def scenario() -> list[int]:
        return await asyncio.gather(*(db.write_unsynced(add, n) for n in range(5)))

    assert asyncio.run(scenario()) == list(range(5))
    assert db.read_blocking(items) == list(range(5))


def test_no_grouped_write_after_close(tmp_path):
    database = Database(tmp_path / "closed.db")
    database.close()
    with pytest.raises(RuntimeError, match="closed"):
        database.write_unsynced_nowait(add, 1)


def test_prepare_runs_on_its_own_connection(db):
    def tokens(conn: sqlite3.Connection, text: str) -> tuple[int, int]:
        conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.t USING fts5(x)")
        conn.execute("INSERT INTO temp.t (x) VALUES (?)", (text,))
        return threading.get_ident(), conn.execute("SELECT count(*) FROM temp.t").fetchone()[0]

    async def scenario() -> list[tuple[int, int]]:
        return [await db.prepare(tokens, f"word {n}") for n in range(8)]

    # Each preparing thread keeps its own scratch connection: the rows one thread inserted
    # are there on its next call (there may be more than one preparing thread).
    seen: dict[int, list[int]] = {}
    for thread, count in asyncio.run(scenario()):
        seen.setdefault(thread, []).append(count)
    for counts in seen.values():
        assert counts == list(range(1, len(counts) + 1))
