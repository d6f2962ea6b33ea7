"""memory.search ranks a search of active records in the FTS index alone when it can
(records._rank_active); the page must be exactly the one the join over every match gives:
same records, same order (rank, then id), ties and inactive records included. A `type` filter
that every record passes takes the join path, so the two are compared on one database."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from minionsd.storage import record_fields, records
from minionsd.storage.database import Database

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def fields(body: str, title: str, expires: datetime | None = None) -> dict:
    raw = {"body": body, "title": title, "type": "semantic", "scope": "global",
           "trust": "agent", "source": "test"}
    if expires is not None:
        raw["expires_at"] = expires.isoformat()
    return record_fields.validate_new(raw)


@pytest.fixture
def db(tmp_path):
    database = Database(tmp_path / "state.db")
    rows = []
    for _ in range(30):  # identical text: one rank, ordered by id
        rows.append(fields("cache warmup before deploy", "Twin"))
    for i in range(120):
        words = " ".join(["cache"] * (1 + i % 5) + ["deploy"] * (i % 3) + [f"w{i}"])
        rows.append(fields(f"{words} notes about retry budget", f"Note {i}",
                           expires=NOW - timedelta(days=1) if i % 7 == 0 else None))
    ids = asyncio.run(database.write_each(records.insert, [(f, NOW) for f in rows]))
    for record_id in ids[::5]:
        database.write_blocking(records.retract, record_id, "wrong", NOW)
    yield database
    database.close()


@pytest.mark.parametrize("query", ["cache", "deploy", "cache deploy", "retry budget",
                                   "warmup", "w7 w14 w21 cache", "nothing matches this"])
@pytest.mark.parametrize("limit", [1, 5, 20, 200])
def test_the_fast_page_is_the_join_page(db, query, limit):
    fast = db.read_blocking(records.search, {"query": query, "limit": limit}, NOW)
    joined = db.read_blocking(records.search,
                              {"query": query, "limit": limit, "type": "semantic"}, NOW)
    assert fast == joined
    assert all(r["status"] == "active" for r in fast["records"])
