"""Retrieval telemetry rows: one per memory.retrieve / prompt.assemble retrieval."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import structlog

from minionsd.errors import InvalidParams

log = structlog.get_logger()
KEYS = ("at", "task_id", "project", "agent", "terms", "candidates", "selected_ids", "bytes",
        "duration_ms", "shadow", "fallback_reason", "error")
MAX_ROWS = 1000


def insert(conn: sqlite3.Connection, row: dict[str, Any]) -> None:
    conn.execute(_INSERT, _bound(row))


def insert_each(conn: sqlite3.Connection, rows: list[dict[str, Any]]) -> int:
    """Insert `rows`, each in its own savepoint, so that one row that cannot be stored does not
    lose the others; returns how many failed (logged)."""
    failed = 0
    for row in rows:
        conn.execute("SAVEPOINT telemetry_row")
        try:
            conn.execute(_INSERT, _bound(row))
        except (sqlite3.Error, ValueError) as exc:
            conn.execute("ROLLBACK TO telemetry_row")
            failed += 1
            log.error("telemetry.row_failed", task=repr(row.get("task_id"))[:200],
                      error=f"{type(exc).__name__}: {exc}")
        conn.execute("RELEASE telemetry_row")
    return failed


_INSERT = """INSERT INTO retrieval_telemetry (at, task_id, project, agent, terms, candidates,
               selected_ids, bytes, duration_ms, shadow, fallback_reason, error)
           VALUES (:at, :task_id, :project, :agent, :terms, :candidates, :selected_ids,
               :bytes, :duration_ms, :shadow, :fallback_reason, :error)"""


def _bound(row: dict[str, Any]) -> dict[str, Any]:
    return row | {"terms": json.dumps(row["terms"]),
                  "selected_ids": json.dumps(row["selected_ids"]), "shadow": int(row["shadow"])}


def recent(conn: sqlite3.Connection, limit: Any) -> dict[str, Any]:
    if limit is None:
        limit = 50
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_ROWS:
        raise InvalidParams(f"'limit' must be an integer from 1 to {MAX_ROWS}", param="limit")
    rows = conn.execute(
        "SELECT * FROM retrieval_telemetry ORDER BY seq DESC LIMIT ?", (limit,)).fetchall()
    return {"rows": [to_wire(row) for row in rows]}


def to_wire(row: sqlite3.Row) -> dict[str, Any]:
    """A stored row as the API shows it: exactly KEYS, lists and booleans decoded."""
    item = {key: row[key] for key in KEYS}
    item["terms"] = json.loads(item["terms"])
    item["selected_ids"] = json.loads(item["selected_ids"])
    item["shadow"] = bool(item["shadow"])
    return item


def prune(conn: sqlite3.Connection, keep: int = 100_000) -> int:
    cursor = conn.execute(
        "DELETE FROM retrieval_telemetry WHERE seq <= (SELECT max(seq) FROM retrieval_telemetry)"
        " - ?", (keep,))
    return cursor.rowcount
