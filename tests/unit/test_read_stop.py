"""Database.close (the daemon's last step on SIGTERM) does not wait for a long read: a statement
running on a reader thread ends with "interrupted", and a read that starts after close began
is refused (see Database._read), so the stop stays inside SPEC's 10 s whatever a search is doing."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from minionsd.storage.database import Database

# Counts to a number that takes SQLite tens of seconds: a read close() would otherwise wait
# for to the end.
LONG = """WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000000)
          SELECT count(*) FROM n"""


def test_close_ends_a_read_that_is_running(tmp_path: Path):
    db = Database(tmp_path / "state.db")
    started = threading.Event()
    outcome: dict[str, object] = {}

    def long_read(conn: sqlite3.Connection) -> int:
        started.set()
        return conn.execute(LONG).fetchone()[0]

    def run() -> None:
        try:
            outcome["value"] = db.read_blocking(long_read)
        except Exception as exc:  # what the reader saw
            outcome["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    assert started.wait(30)
    db.close()
    thread.join()
    assert "value" not in outcome
    assert isinstance(outcome["error"], sqlite3.OperationalError)
    assert "interrupted" in str(outcome["error"])



def test_close_ends_a_read_made_of_many_short_statements(tmp_path: Path):
    """A read between two statements when close() interrupts starts its next one: that one
    is interrupted too."""
    db = Database(tmp_path / "state.db")
    started = threading.Event()
    outcome: dict[str, object] = {}
    short = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000) " \
            "SELECT count(*) FROM n"

    def many_reads(conn: sqlite3.Connection) -> int:
        started.set()
        return sum(conn.execute(short).fetchone()[0] for _ in range(3_000))

    def run() -> None:
        try:
            outcome["value"] = db.read_blocking(many_reads)
        except Exception as exc:  # what the reader saw
            outcome["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    assert started.wait(30)
    db.close()
    thread.join()
    assert "value" not in outcome
    assert "interrupted" in str(outcome["error"])
