"""The single writer on a real SQLite file: a failed write or a failed COMMIT is rolled back,
reported as a StorageError, and the next write works."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest

from minionsd.errors import StorageError
from minionsd.storage.database import Database

SCHEMA = [
    "CREATE TABLE parent (id INTEGER PRIMARY KEY)",
    "CREATE TABLE child (id INTEGER PRIMARY KEY, parent INTEGER"
    " REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED)",
    "CREATE TABLE capped (n INTEGER)",
    "CREATE TRIGGER capped_guard BEFORE INSERT ON capped WHEN NEW.n > 9"
    " BEGIN SELECT RAISE(ABORT, 'n must be at most 9'); END",
]


@pytest.fixture
def db(tmp_path):
    database = Database(tmp_path / "state.db")
    def schema(conn: sqlite3.Connection) -> None:
        for statement in SCHEMA:
            conn.execute(statement)

    database.write_blocking(schema)
    yield database
    database.close()


def orphan(conn: sqlite3.Connection) -> None:
    # Passes the INSERT; the deferred foreign key fails only at COMMIT.
    conn.execute("INSERT INTO child (id, parent) VALUES (1, 42)")


def add_parent(conn: sqlite3.Connection, pid: int) -> int:
    conn.execute("INSERT INTO parent (id) VALUES (?)", (pid,))
    return pid


def count(conn: sqlite3.Connection, table: str) -> int:
    return conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def test_a_failed_commit_is_rolled_back_and_the_next_write_works(db):
    with pytest.raises(StorageError, match="FOREIGN KEY constraint failed") as caught:
        db.write_blocking(orphan)
    assert caught.value.code == -32000
    assert db.write_blocking(add_parent, 1) == 1
    assert db.write_blocking(add_parent, 2) == 2
    assert db.read_blocking(count, "child") == 0
    assert db.read_blocking(count, "parent") == 2


def test_the_async_paths_recover_too(db):
    async def scenario() -> None:
        with pytest.raises(StorageError):
            await db.write(orphan)
        with pytest.raises(StorageError):
            await db.write_unsynced(orphan)
        assert await db.write(add_parent, 7) == 7
        assert await db.write_unsynced(add_parent, 8) == 8

    asyncio.run(scenario())
    assert db.read_blocking(count, "parent") == 2


def test_a_trigger_abort_rolls_back_the_whole_write(db):
    def two_rows(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO capped (n) VALUES (1)")
        conn.execute("INSERT INTO capped (n) VALUES (10)")

    with pytest.raises(StorageError, match="at most 9"):
        db.write_blocking(two_rows)
    db.write_blocking(lambda conn: conn.execute("INSERT INTO capped (n) VALUES (3)") and None)
    assert db.read_blocking(count, "capped") == 1


def test_errors_of_the_write_function_itself_pass_through(db):
    def refuse(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO parent (id) VALUES (5)")
        raise ValueError("not this one")

    with pytest.raises(ValueError, match="not this one"):
        db.write_blocking(refuse)
    assert db.read_blocking(count, "parent") == 0
    assert db.write_blocking(add_parent, 5) == 5


def test_the_commit_failure_is_survived_on_the_file_after_reopening(tmp_path, db):
    with pytest.raises(StorageError):
        db.write_blocking(orphan)
    db.write_blocking(add_parent, 3)
    db.close()
    reopened = Database(db.path)
    try:
        assert reopened.read_blocking(count, "parent") == 1
        assert reopened.read_blocking(count, "child") == 0
    finally:
        reopened.close()
