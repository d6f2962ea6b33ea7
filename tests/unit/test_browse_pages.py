"""memory.browse's pages (storage/browse.py): every record exactly once across the pages of a
listing or a search, newest first or best first, whatever arrives between two pages; a text
query with more than RANK_MAX matches goes newest first."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minionsd.storage import browse, record_fields, records

T0 = datetime(2026, 6, 1, tzinfo=UTC)


def add(conn: sqlite3.Connection, body: str, trust: str = "agent") -> str:
    fields = record_fields.validate_new({"body": body, "type": "semantic", "scope": "global",
                                         "trust": trust, "source": "test"})
    with conn:
        return records.insert(conn, fields, T0)


def walk(conn: sqlite3.Connection, params: dict, limit: int,
         between: list[str] | None = None) -> list[str]:
    seen: list[str] = []
    cursor = None
    while True:
        page = browse.browse(conn, params | {"limit": limit, "cursor": cursor},
                             T0 + timedelta(minutes=1))
        seen += [r["id"] for r in page["records"]]
        if between:
            add(conn, between.pop())
        cursor = page["next_cursor"]
        if cursor is None:
            return seen


@settings(max_examples=25, deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture])
@given(count=st.integers(0, 30), limit=st.integers(1, 7), rank_max=st.sampled_from([2, 1000]),
       query=st.sampled_from([None, "cache", "cache retry"]))
def test_pages_list_every_record_once(conn, monkeypatch, count, limit, rank_max, query):
    monkeypatch.setattr(browse, "RANK_MAX", rank_max)
    conn.execute("DELETE FROM memory_records")
    words = ["cache", "retry", "build"]
    for i in range(count):
        add(conn, f"note {i} about {words[i % 3]} and {words[(i + 1) % 3]}")
    params = {"query": query} if query else {}
    first = browse.browse(conn, params | {"limit": 200}, T0)
    expected = [r["id"] for r in first["records"]]
    ranked = first["order"] == "rank"
    arrivals = [f"a late {w} note" for w in words * 3]
    late = len(arrivals)
    seen = walk(conn, params, limit, between=arrivals)
    if not ranked:
        # newest first: whatever arrives is newer than the cursor, so the pages are exact
        assert seen == expected
        return
    # best first: later arrivals are left out by the cursor's snapshot; the order itself can
    # move a little as they change every term's weight, like any ranking
    arrived = {r["id"] for r in browse.browse(conn, {"status": "all", "limit": 200}, T0)[
        "records"][: late - len(arrivals)]}
    assert not arrived & set(seen)
    assert len(seen) == len(expected)
    # and with nothing arriving, the pages are exactly the ranking
    assert walk(conn, params, limit) == [
        r["id"] for r in browse.browse(conn, params | {"limit": 200}, T0)["records"]]


def test_many_matches_go_newest_first(conn, monkeypatch):
    monkeypatch.setattr(browse, "RANK_MAX", 3)
    ids = [add(conn, f"cache note {i}") for i in range(6)]
    page = browse.browse(conn, {"query": "cache", "limit": 4}, T0)
    assert page["order"] == "newest" and page["total"] == 6
    assert [r["id"] for r in page["records"]] == ids[::-1][:4]
    rest = browse.browse(conn, {"query": "cache", "limit": 4, "cursor": page["next_cursor"]},
                         T0)
    assert [r["id"] for r in rest["records"]] == ids[::-1][4:] and rest["next_cursor"] is None
    few = browse.browse(conn, {"query": "note 3"}, T0)
    assert few["order"] == "newest"  # "note" matches all six: over RANK_MAX
    monkeypatch.setattr(browse, "RANK_MAX", 100)
    ranked = browse.browse(conn, {"query": "cache"}, T0)
    assert ranked["order"] == "rank" and len(ranked["records"]) == 6


def test_totals_are_capped(conn, monkeypatch):
    monkeypatch.setattr(browse, "COUNT_CAP", 4)
    for i in range(6):
        add(conn, f"cache note {i}", trust="human")
    assert browse.browse(conn, {"trust": "human"}, T0)["total"] == 4
    assert browse.browse(conn, {"trust": "human"}, T0)["total_capped"] is True
    assert browse.browse(conn, {"query": "cache"}, T0)["total_capped"] is True
    exact = browse.browse(conn, {}, T0)  # status only: from the counters, never capped
    assert exact["total"] == 6 and exact["total_capped"] is False


def test_a_text_query_walks_the_index_first_without_statistics(conn):
    """Before its first PRAGMA optimize a database has no statistics, and SQLite would start
    a join from the status index, probing the FTS index once per active record (0.5 s at
    100,000 records): every statement of a text query starts from the FTS index."""
    for i in range(20):
        add(conn, f"cache note {i}")
    assert conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'sqlite_stat1'"
                        ).fetchone()[0] == 0
    traced: list[str] = []
    conn.set_trace_callback(traced.append)
    try:
        browse.browse(conn, {"query": "cache", "trust": "agent"}, T0)
    finally:
        conn.set_trace_callback(None)
    joins = [sql for sql in traced if "memory_fts" in sql and "memory_records r" in sql]
    assert joins
    for sql in joins:
        plan = [row[-1] for row in conn.execute("EXPLAIN QUERY PLAN " + sql)]
        first = next(step for step in plan if step.startswith(("SCAN", "SEARCH")))
        assert "memory_fts" in first, (sql, plan)
