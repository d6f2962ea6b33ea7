"""The inbox's state in storage: holds, the names inbox.submit claimed, and findings per task.

Owns the tables `inbox_holds`, `inbox_submissions` and `findings` (migrations 0002, 0007).
Each function takes a connection and runs inside the caller's read or write (`db.read`,
`db.write`); the decisions (which name to claim, what counts as a duplicate, when a second
finding is refused) stay in inbox.py.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime

from minionsd.clock import iso


def held_names(conn: sqlite3.Connection) -> set[str]:
    return {row[0] for row in conn.execute("SELECT name FROM inbox_holds")}


def set_hold(conn: sqlite3.Connection, name: str, held: bool, now: datetime) -> None:
    if held:
        conn.execute("INSERT OR IGNORE INTO inbox_holds (name, held_at) VALUES (?, ?)",
                     (name, iso(now)))
    else:
        conn.execute("DELETE FROM inbox_holds WHERE name = ?", (name,))


def submitted_names(conn: sqlite3.Connection) -> frozenset[str]:
    """Names written by inbox.submit (complete on arrival). Old rows are harmless: submit
    never writes a second file under a name it has claimed before."""
    return frozenset(row[0] for row in conn.execute("SELECT name FROM inbox_submissions"))


def prune_submissions(conn: sqlite3.Connection, before: datetime) -> int:
    """Forget names inbox.submit claimed before `before` (names carry their day, so only
    same-day submissions can ever meet them again). The findings table, which keeps one
    finding per task for good, is separate and not pruned."""
    return conn.execute("DELETE FROM inbox_submissions WHERE at < ?", (iso(before),)).rowcount


@dataclass(frozen=True)
class Claim:
    """A name inbox.submit claimed; body_hash is None for claims older than migration 0007."""

    body_hash: str | None


def claim_of(conn: sqlite3.Connection, name: str) -> Claim | None:
    """The claim on `name`, or None when inbox.submit never claimed it."""
    row = conn.execute("SELECT body_hash FROM inbox_submissions WHERE name = ?",
                       (name,)).fetchone()
    return None if row is None else Claim(row[0])


def claim_name(conn: sqlite3.Connection, name: str, body_hash: str, now: datetime) -> None:
    conn.execute("INSERT INTO inbox_submissions (name, at, body_hash) VALUES (?, ?, ?)",
                 (name, iso(now), body_hash))


def finding_for(conn: sqlite3.Connection, task: str | None) -> tuple[str, str] | None:
    """(note name, agent) of the finding already kept for `task`, or None."""
    row = conn.execute("SELECT name, agent FROM findings WHERE task = ?", (task,)).fetchone()
    return None if row is None else (row[0], row[1])


def claim_finding(conn: sqlite3.Connection, task: str | None, name: str, agent: str,
                  now: datetime) -> None:
    conn.execute("INSERT INTO findings (task, name, agent, at) VALUES (?, ?, ?, ?)",
                 (task, name, agent, iso(now)))


def submitted_among(conn: sqlite3.Connection, names: list[str]) -> frozenset[str]:
    """Which of `names` inbox.submit wrote, looked up by name (the table of submitted names
    keeps growing, the inbox does not)."""
    return frozenset(row[0] for row in conn.execute(
        "SELECT name FROM inbox_submissions WHERE name IN (SELECT value FROM json_each(?))",
        (json.dumps(names),)))


@contextmanager
def alone(conn: sqlite3.Connection) -> Iterator[None]:
    """One submission's writes inside a transaction it shares with others: when the block
    raises, what it wrote is undone (a savepoint rolled back) and the others' writes stay."""
    conn.execute("SAVEPOINT submission")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK TO submission")
        raise
    finally:
        conn.execute("RELEASE submission")
