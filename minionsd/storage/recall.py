"""What retrieval reads from storage besides the FTS5 searches (:mod:`.fts`).

* one read snapshot for all the statements of a candidate search (:func:`snapshot`);
* the record_changes log (migration 0006) and the filter columns of the records it names,
  which retrieval's in-memory record view follows;
* the recall rule as an SQL condition, and the one-OR reference search that uses it.

The rule itself is retrieval's (memory/retrieval/eligibility.py makes a :class:`RecallRule`);
this module only renders it, so the in-memory checks and the SQL are built from one statement
of it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from minionsd.storage import fts, records
from minionsd.storage.read_txn import snapshot  # noqa: F401 - retrieval reads in one

# The columns the record view keeps of each record, in this order.
FILTER_COLUMNS = ("seq", "scope", "status", "type", "trust", "expires_at")


@dataclass(frozen=True)
class RecallRule:
    """A task may recall a record with this status, in one of these scopes, not expired at
    read time, and not of type `guarded_type` with one of the `untrusted` trusts."""

    status: str
    scopes: tuple[str, ...]
    guarded_type: str
    untrusted: tuple[str, ...]


def change_log_range(conn: sqlite3.Connection) -> tuple[int, int | None]:
    """(the newest change id ever given out, the oldest one still in the log or None).

    The newest is kept by AUTOINCREMENT even when the log has been pruned empty."""
    high, low = fts.plain_cursor(conn).execute(
        "SELECT (SELECT seq FROM sqlite_sequence WHERE name = 'record_changes'), "
        "(SELECT min(id) FROM record_changes)").fetchone()
    return high or 0, low


def filter_rows(conn: sqlite3.Connection) -> Iterator[tuple[Any, ...]]:
    """FILTER_COLUMNS of every record, largest seq first (streamed)."""
    return fts.plain_cursor(conn).execute(
        f"SELECT {', '.join(FILTER_COLUMNS)} FROM memory_records ORDER BY seq DESC")


def changed_filter_rows(conn: sqlite3.Connection, after: int,
                        upto: int) -> Iterator[tuple[Any, ...]]:
    """FILTER_COLUMNS of each record changed by the log entries after `after` up to `upto`,
    once per seq; a deleted record comes back as its seq and five NULLs."""
    columns = ", ".join(f"r.{c}" for c in FILTER_COLUMNS[1:])
    return fts.plain_cursor(conn).execute(
        f"""SELECT c.seq, {columns}
            FROM (SELECT DISTINCT seq FROM record_changes WHERE id > ? AND id <= ?) AS c
            LEFT JOIN memory_records AS r ON r.seq = c.seq""",
        (after, upto))


def rule_sql(rule: RecallRule, alias: str = "r") -> tuple[str, dict[str, Any]]:
    """`rule` as an SQL condition on memory_records `alias`, with its named binds (it reads the
    time from ``:now``, which the caller binds)."""
    scopes = {f"scope{i}": s for i, s in enumerate(rule.scopes)}
    untrusted = {f"untrusted{i}": t for i, t in enumerate(rule.untrusted)}
    binds: dict[str, Any] = {"recallable_status": rule.status, "guarded_type": rule.guarded_type,
                             **scopes, **untrusted}
    sql = (
        f"{alias}.status = :recallable_status "
        f"AND ({alias}.expires_at IS NULL OR {alias}.expires_at > :now) "
        f"AND {alias}.scope IN ({', '.join(':' + k for k in scopes) or 'NULL'}) "
        f"AND NOT ({alias}.type = :guarded_type "
        f"AND {alias}.trust IN ({', '.join(':' + k for k in untrusted) or 'NULL'}))"
    )
    return sql, binds


def one_or_search(conn: sqlite3.Connection, expr: str, rule: RecallRule, now_iso: str,
                  limit: int) -> list[tuple[Any, ...]]:
    """The reference search: records matching the MATCH expression `expr` that `rule` lets a
    task recall, best FTS5 bm25 first (ties by id); each row is records.WIRE_KEYS, then the
    score. Slow on large tables: it scores every matching row."""
    where, binds = rule_sql(rule)
    weights = ", ".join(str(w) for w in fts.BM25_WEIGHTS)
    return fts.plain_cursor(conn).execute(
        f"""SELECT {', '.join('r.' + c for c in records.WIRE_KEYS)},
                   bm25(memory_fts, {weights}) AS score
            FROM memory_fts JOIN memory_records AS r ON r.seq = memory_fts.rowid
            WHERE memory_fts MATCH :expr AND {where}
            ORDER BY score, r.id LIMIT :limit""",
        binds | {"expr": expr, "now": now_iso, "limit": limit},
    ).fetchall()
