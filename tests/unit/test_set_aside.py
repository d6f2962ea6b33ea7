"""Which record-write failures set one note aside (the note's own) and which keep the whole
batch open for a later try (the database or the disk), told apart on real SQLite errors."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from minionsd.errors import StorageError
from minionsd.memory.consolidate.recording import not_the_notes_fault as _not_the_notes_fault
from minionsd.memory.consolidate.types import Abandoned


def _error(tmp_path: Path, setup: str, statement: str) -> sqlite3.Error:
    conn = sqlite3.connect(tmp_path / "x.db", isolation_level=None)
    try:
        conn.executescript(setup)
        with pytest.raises(sqlite3.Error) as caught:
            conn.execute(statement)
        return caught.value
    finally:
        conn.close()


def test_a_full_database_is_not_the_notes_fault(tmp_path: Path) -> None:
    exc = _error(tmp_path, "CREATE TABLE t (x TEXT); PRAGMA max_page_count = 3;",
                 "INSERT INTO t VALUES (zeroblob(100000))")
    assert "full" in str(exc)
    assert _not_the_notes_fault(exc)


def test_a_refused_row_is_the_notes_fault(tmp_path: Path) -> None:
    exc = _error(tmp_path, "CREATE TABLE t (x TEXT CHECK (x != 'bad'));",
                 "INSERT INTO t VALUES ('bad')")
    assert not _not_the_notes_fault(exc)


def test_other_failures() -> None:
    assert _not_the_notes_fault(Abandoned("sql"))
    assert _not_the_notes_fault(OSError(28, "No space left on device"))
    assert _not_the_notes_fault(RuntimeError("cannot schedule new futures after shutdown"))
    assert not _not_the_notes_fault(UnicodeEncodeError("utf-8", "\ud800", 0, 1, "surrogate"))
    assert not _not_the_notes_fault(RecursionError())


def test_a_wrapped_sqlite_error_is_judged_by_its_cause(tmp_path: Path) -> None:
    full = _error(tmp_path, "CREATE TABLE t (x TEXT); PRAGMA max_page_count = 3;",
                  "INSERT INTO t VALUES (zeroblob(100000))")
    refused = _error(tmp_path, "CREATE TABLE u (x TEXT CHECK (x != 'bad'));",
                     "INSERT INTO u VALUES ('bad')")
    for cause, expected in ((full, True), (refused, False)):
        wrapper = StorageError("the write failed")
        wrapper.__cause__ = cause
        assert _not_the_notes_fault(wrapper) is expected
