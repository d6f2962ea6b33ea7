"""memory.search's page written out as the plain query, on its own: every match ranked by
bm25(memory_fts, 4, 1, 2), sorted by (rank, id), cut at `limit`; `total` counts every match
that passes the filters. Tests compare storage/search.py's answers with it."""

from __future__ import annotations

import sqlite3
from datetime import datetime
from typing import Any

from minionsd.clock import iso
from minionsd.storage import records
from minionsd.text import ftsquery


def reference(conn: sqlite3.Connection, params: dict[str, Any],
              now: datetime) -> dict[str, Any]:
    """The plain query: rank every match, sort by (rank, id), cut; count every match."""
    expression = ftsquery.search_expression(params["query"])
    if expression is None:
        return {"records": [], "total": 0}
    statuses = params.get("status") or ["active"]
    where = [f"{records.EFFECTIVE_STATUS} IN ({', '.join('?' * len(statuses))})"]
    binds: list[Any] = list(statuses)
    for column in ("type", "scope", "project", "agent"):
        if params.get(column) is not None:
            where.append(f"r.{column} = ?")
            binds.append(params[column])
    condition = " AND ".join(where).replace(":now", f"'{iso(now)}'")
    rows = conn.execute(
        f"""SELECT r.*, {records.EFFECTIVE_STATUS.replace(':now', f"'{iso(now)}'")}
                       AS eff_status, memory_fts.rank AS rank,
                   snippet(memory_fts, 1, '[', ']', '…', 16) AS snippet
            FROM memory_fts JOIN memory_records r ON r.seq = memory_fts.rowid
            WHERE memory_fts MATCH ? AND memory_fts.rank MATCH 'bm25(4.0, 1.0, 2.0)'
              AND {condition}
            ORDER BY memory_fts.rank, r.id LIMIT ?""",
        [expression, *binds, params.get("limit", 20)]).fetchall()
    total = conn.execute(
        f"""SELECT count(*) FROM memory_fts JOIN memory_records r ON r.seq = memory_fts.rowid
            WHERE memory_fts MATCH ? AND {condition}""", [expression, *binds]).fetchone()[0]
    return {"records": [records.to_wire(row) | {"snippet": records.plain_snippet(row["snippet"]),
                                                "rank": row["rank"]} for row in rows],
            "total": total}
