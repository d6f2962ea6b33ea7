"""Reads for the people who look inside (the web view, SPEC §5.3): records browsed with filters
and stable pagination, a record's supersede chain, the retrievals that selected a record and an
agent's latest retrievals.

Pagination is keyset, never OFFSET over a changing table: browsing pages newest first by the
record's row number (`cursor` "s<seq>": the rows older than it), so a page keeps its rows while
new records arrive; a text search with few enough matches ranks by bm25 and pages by position
("o<n>.<newest seq then>": later records are left out of its pages, though they can still
move the ranking a little), and one with more goes newest first.
Telemetry rows whose task id starts with `web-try:` were made by a person trying a task in the
view: they never count as an agent's recall.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from minionsd.clock import iso
from minionsd.errors import InvalidParams
from minionsd.storage import fts, records, telemetry
from minionsd.storage.record_fields import STATUSES, check_choice
from minionsd.storage.record_filters import field_filters
from minionsd.storage.search_reads import page_index
from minionsd.text import ftsquery

BROWSE_MAX_LIMIT = 200
# A total beyond this is shown as "1,000 or more": counting every one of 100,000 matches
# (each a row read) would cost more than the page itself.
COUNT_CAP = 1_000
# A text query with more matches than this lists them newest first instead of best first.
RANK_MAX = 5_000
CHAIN_MAX = 50
WEB_TRY_PREFIX = "web-try:"
# Record keys a list row carries: everything but the body and meta, plus an excerpt.
ROW_KEYS = tuple(k for k in records.WIRE_KEYS if k not in ("body", "meta"))
EXCERPT_CHARS = 240
_NOT_WEB = "(t.task_id IS NULL OR t.task_id NOT LIKE 'web-try:%')"


def _limit(value: Any, default: int, top: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= top:
        raise InvalidParams(f"'limit' must be an integer from 1 to {top}", param="limit")
    return value


def _status_condition(status: str) -> str:
    """Index-friendly effective status: an active record past expires_at reads as expired."""
    if status == "active":
        return "r.status = 'active' AND (r.expires_at IS NULL OR r.expires_at > :now)"
    if status == "expired":
        return ("(r.status = 'expired' OR (r.status = 'active' AND r.expires_at IS NOT NULL "
                "AND r.expires_at <= :now))")
    return "r.status = :status"


def _filters(params: Mapping[str, Any], now: datetime) -> tuple[list[str], dict[str, Any]]:
    where: list[str] = []
    binds: dict[str, Any] = {"now": iso(now)}
    status = params.get("status")
    if status is None:
        status = "active"
    if status != "all":
        binds["status"] = check_choice(status, "status", STATUSES)
        where.append(_status_condition(status))
    fields, field_binds = field_filters(params, trust=True, empty_names=False)
    return where + fields, binds | field_binds


def _cursor(value: Any, kind: str) -> int | None:
    if value is None or value == "":
        return None
    if (not isinstance(value, str) or len(value) > 24 or value[:1] != kind
            or not value[1:].isdigit()):
        raise InvalidParams("'cursor' must be the next_cursor of an earlier page of the same "
                            "listing", param="cursor")
    return int(value[1:])


def _rank_cursor(value: Any) -> tuple[int, int | None]:
    """(offset, newest row) of a ranked page's cursor "o<offset>.<seq>"."""
    if value is None or value == "":
        return 0, None
    if isinstance(value, str) and value[:1] == "o":
        offset, dot, upto = value[1:].partition(".")
        if offset.isdigit() and dot and upto.isdigit() and len(value) <= 40:
            return int(offset), int(upto)
    raise InvalidParams("'cursor' must be the next_cursor of an earlier page of the same "
                        "listing", param="cursor")


def _row(row: Mapping[str, Any], snippet: str | None = None) -> dict[str, Any]:
    record = records.to_wire(row)
    body = record["body"]
    excerpt = snippet if snippet else " ".join(body[:EXCERPT_CHARS * 2].split())[:EXCERPT_CHARS]
    return {key: record[key] for key in ROW_KEYS} | {"excerpt": excerpt}


def browse(conn: sqlite3.Connection, params: Mapping[str, Any],
           now: datetime) -> dict[str, Any]:
    """{records: [row], total, total_capped, order, next_cursor}: newest first, or for a
    `query` best first (see _matching); `total` stops at COUNT_CAP (then `total_capped`)."""
    query = params.get("query")
    if query is not None and not isinstance(query, str):
        raise InvalidParams("'query' must be a string", param="query")
    limit = _limit(params.get("limit"), 50, BROWSE_MAX_LIMIT)
    where, binds = _filters(params, now)
    expression = ftsquery.search_expression(query) if query and query.strip() else None
    if query and query.strip() and expression is None:
        return {"records": [], "total": 0, "total_capped": False, "order": "rank",
                "next_cursor": None}
    if expression is None:
        # Only a status (or nothing) to filter by: the total is in the kept counters.
        counted = None
        status = params.get("status") or "active"
        if len(where) <= 1 and (status == "all") == (not where):
            counts = records.status_counts(conn, now)
            counted = sum(counts.values()) if status == "all" else counts[status]
        return _newest(conn, where, binds, limit, _cursor(params.get("cursor"), "s"), counted)
    return _matching(conn, where, binds | {"expr": expression}, limit, params.get("cursor"))


def _newest(conn: sqlite3.Connection, where: list[str], binds: dict[str, Any], limit: int,
            before: int | None, total: int | None = None) -> dict[str, Any]:
    condition = " AND ".join(where) or "1"
    page_where = condition + (" AND r.seq < :before" if before is not None else "")
    rows = conn.execute(
        f"""SELECT r.*, {records.EFFECTIVE_STATUS} AS eff_status FROM memory_records r
            WHERE {page_where} ORDER BY r.seq DESC LIMIT :limit""",
        binds | {"before": before, "limit": limit + 1}).fetchall()
    more = len(rows) > limit
    rows = rows[:limit]
    capped = False
    if total is None:
        total = conn.execute(
            f"SELECT count(*) FROM (SELECT 1 FROM memory_records r WHERE {condition} "
            f"LIMIT {COUNT_CAP + 1})", binds).fetchone()[0]
        capped = total > COUNT_CAP
    return {"records": [_row(r) for r in rows], "total": min(total, COUNT_CAP) if capped
            else total, "total_capped": capped, "order": "newest",
            "next_cursor": f"s{rows[-1]['seq']}" if more else None}


def _matching(conn: sqlite3.Connection, where: list[str], binds: dict[str, Any], limit: int,
              cursor: Any) -> dict[str, Any]:
    """Records matching a text query: best first (bm25, as memory.search) when there are at
    most RANK_MAX matches, else newest first: ranking every one of 80,000 matches costs
    hundreds of milliseconds, walking the matches newest first stops after one page.

    CROSS JOIN keeps the FTS index the outer loop: without the planner's statistics (a new
    database, before its first PRAGMA optimize) SQLite would start from the status index and
    probe the FTS index once per active record (0.5 s at 100,000 records)."""
    condition = " AND ".join(where) or "1"
    matches = conn.execute(
        f"""SELECT count(*) FROM (SELECT 1 FROM memory_fts WHERE memory_fts MATCH :expr
            LIMIT {RANK_MAX + 1})""", binds).fetchone()[0]
    order = "rank" if matches <= RANK_MAX else "newest"
    if order == "rank":
        # The cursor is the position and the newest row of the first page's time, so records
        # that arrive later never push a row from one page onto the next.
        offset, upto = _rank_cursor(cursor)
        if upto is None:
            upto = conn.execute("SELECT coalesce(max(seq), 0) FROM memory_records").fetchone()[0]
        weights = ", ".join(str(w) for w in fts.BM25_WEIGHTS)
        found = conn.execute(
            f"""SELECT r.seq AS seq FROM memory_fts
                CROSS JOIN memory_records r ON r.seq = memory_fts.rowid
                WHERE memory_fts MATCH :expr AND memory_fts.rank MATCH 'bm25({weights})'
                  AND {condition} AND memory_fts.rowid <= :upto
                ORDER BY memory_fts.rank, r.id LIMIT :limit OFFSET :offset""",
            binds | {"limit": limit + 1, "offset": offset, "upto": upto}).fetchall()
        following = f"o{offset + limit}.{upto}"
    else:
        before = _cursor(cursor, "s")
        page = condition + (" AND memory_fts.rowid < :before" if before is not None else "")
        found = conn.execute(
            f"""SELECT r.seq AS seq FROM memory_fts
                CROSS JOIN memory_records r ON r.seq = memory_fts.rowid
                WHERE memory_fts MATCH :expr AND {page}
                ORDER BY memory_fts.rowid DESC LIMIT :limit""",
            binds | {"limit": limit + 1, "before": before}).fetchall()
        following = f"s{found[limit - 1]['seq']}" if len(found) > limit else ""
    more = len(found) > limit
    position = {row["seq"]: i for i, row in enumerate(found[:limit])}
    rows = []
    if position:
        # Snippets from an index of the page's bodies alone (search_reads.page_index): a
        # MATCH on memory_fts would look every term up again for each row of the page.
        with page_index(conn, list(position), binds["expr"]) as (table, expression):
            rows = conn.execute(
                f"""SELECT r.*, {records.EFFECTIVE_STATUS} AS eff_status,
                           snippet({table}, 0, '', '', '…', 24) AS snippet
                    FROM temp.{table} JOIN memory_records r ON r.seq = {table}.rowid
                    WHERE {table} MATCH :page""", binds | {"page": expression}).fetchall()
        rows = sorted((row for row in rows if row["seq"] in position),
                      key=lambda row: position[row["seq"]])
    total = conn.execute(
        f"""SELECT count(*) FROM (SELECT 1 FROM memory_fts
                CROSS JOIN memory_records r ON r.seq = memory_fts.rowid
                WHERE memory_fts MATCH :expr AND {condition} LIMIT {COUNT_CAP + 1})""",
        binds).fetchone()[0]
    return {"records": [_row(r, records.plain_snippet(r["snippet"])) for r in rows],
            "total": min(total, COUNT_CAP), "total_capped": total > COUNT_CAP, "order": order,
            "next_cursor": following if more else None}


# --- one record's neighbours ------------------------------------------------------------------

def _brief(conn: sqlite3.Connection, record_id: str, now: datetime) -> dict[str, Any] | None:
    row = conn.execute(
        f"""SELECT r.id, r.title, r.superseded_by, {records.EFFECTIVE_STATUS} AS status
            FROM memory_records r WHERE r.id = :id""", {"id": record_id, "now": iso(now)}
    ).fetchone()
    return None if row is None else dict(row)


def supersede_chain(conn: sqlite3.Connection, record_id: str,
                    now: datetime) -> dict[str, list[dict[str, Any]]]:
    """{superseded_by: newer records, nearest first; supersedes: older records, nearest
    first}, each {id, title, status}; a cycle or a missing id ends a chain."""
    newer: list[dict[str, Any]] = []
    seen = {record_id}
    start = _brief(conn, record_id, now)
    nxt = start["superseded_by"] if start else None
    while nxt and nxt not in seen and len(newer) < CHAIN_MAX:
        seen.add(nxt)
        brief = _brief(conn, nxt, now)
        if brief is None:
            newer.append({"id": nxt, "title": None, "status": "missing"})
            break
        newer.append({k: brief[k] for k in ("id", "title", "status")})
        nxt = brief["superseded_by"]
    older: list[dict[str, Any]] = []
    frontier = [record_id]
    while frontier and len(older) < CHAIN_MAX:
        found = conn.execute(
            f"""SELECT r.id, r.title, {records.EFFECTIVE_STATUS} AS status FROM memory_records r
                WHERE r.superseded_by = :id ORDER BY r.seq DESC""",
            {"id": frontier.pop(0), "now": iso(now)}).fetchall()
        for row in found:
            if row["id"] not in seen:
                seen.add(row["id"])
                older.append(dict(row))
                frontier.append(row["id"])
    return {"superseded_by": newer, "supersedes": older[:CHAIN_MAX]}


def selections(conn: sqlite3.Connection, record_id: str, limit: Any) -> dict[str, Any]:
    """The agents' retrievals that selected `record_id`, newest first: {rows, total}."""
    limit = _limit(limit, 50, telemetry.MAX_ROWS)
    rows = conn.execute(
        f"""SELECT t.* FROM retrieval_selections s
            JOIN retrieval_telemetry t ON t.seq = s.telemetry_seq
            WHERE s.record_id = ? AND {_NOT_WEB}
            ORDER BY s.telemetry_seq DESC LIMIT ?""", (record_id, limit)).fetchall()
    total = conn.execute(
        f"""SELECT count(*) FROM retrieval_selections s
            JOIN retrieval_telemetry t ON t.seq = s.telemetry_seq
            WHERE s.record_id = ? AND {_NOT_WEB}""", (record_id,)).fetchone()[0]
    return {"rows": [telemetry.to_wire(r) for r in rows], "total": total}


def agent_retrievals(conn: sqlite3.Connection, agent: str, limit: Any) -> list[dict[str, Any]]:
    """An agent's latest retrievals (its own, not the view's tries), newest first."""
    limit = _limit(limit, 20, telemetry.MAX_ROWS)
    rows = conn.execute(
        f"""SELECT t.* FROM retrieval_telemetry t INDEXED BY retrieval_telemetry_agent
            WHERE t.agent = ? AND {_NOT_WEB} ORDER BY t.seq DESC LIMIT ?""",
        (agent, limit)).fetchall()
    return [telemetry.to_wire(r) for r in rows]


def last_retrieval_at(conn: sqlite3.Connection, agents: list[str]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for agent in agents:
        row = conn.execute(
            f"""SELECT t.at FROM retrieval_telemetry t INDEXED BY retrieval_telemetry_agent
                WHERE t.agent = ? AND {_NOT_WEB} ORDER BY t.seq DESC LIMIT 1""",
            (agent,)).fetchone()
        out[agent] = row[0] if row else None
    return out
