"""memory.search makes its page's snippets in an index of the page's bodies alone
(search_reads.page_index); each must be, byte for byte, the snippet a MATCH on memory_fts
gives for that record (FTS5's snippet() of the body column, 16 tokens, hits in [ ]): whatever
the body (sentences, headings, long or short, accents, identifiers), whichever phrases hit it,
also when only the title or the aux column holds them. And making them must not walk every
match of the query again."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minionsd.storage import record_fields, records, search
from minionsd.storage.database import migrate
from minionsd.text import ftsquery

NOW = datetime(2026, 6, 1, tzinfo=UTC)
WORDS = ("cache", "caching", "cached", "deploy", "worker", "timeout", "queue", "retry",
         "café", "naïve", "the", "a", "of", "token", "refresh", "pool", "build", "log")
IDENTS = ("ERR_DISK_FULL", "token_refresh", "RetryPolicy", "src/cache/pool.py",
          "TokenRefresher", "cache-pool")
PUNCT = (".", ":", ",", ";", "!", "?", " -", "\n", "\n\n# ", "\n## ")


def reference_snippet(conn: sqlite3.Connection, query: str, record_id: str) -> str | None:
    """The snippet as a MATCH on memory_fts makes it for this one record."""
    raw = conn.execute(
        "SELECT snippet(memory_fts, 1, '[', ']', '…', 16) FROM memory_fts WHERE memory_fts "
        "MATCH ? AND rowid = (SELECT seq FROM memory_records WHERE id = ?)",
        (ftsquery.search_expression(query), record_id)).fetchone()[0]
    return records.plain_snippet(raw)


def body_of(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(1, 80)):
        parts.append(rng.choice(WORDS) if rng.random() < 0.85 else rng.choice(IDENTS))
        if rng.random() < 0.15:
            parts[-1] += rng.choice(PUNCT)
    return " ".join(parts)


def new_record(body: str, title: str, paths: list[str] | None = None) -> dict[str, Any]:
    return record_fields.validate_new({
        "body": body, "title": title, "type": "semantic", "scope": "global",
        "trust": "agent", "source": "test", "paths": paths or []})


def memory_db() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.row_factory = sqlite3.Row
    migrate(conn)
    return conn


@pytest.fixture(scope="module")
def conn() -> Iterator[sqlite3.Connection]:
    conn = memory_db()
    rng = random.Random(27)
    conn.execute("BEGIN")
    for _ in range(400):
        title = " ".join(rng.choices(WORDS, k=rng.randint(0, 3))) or "note"
        paths = [rng.choice(IDENTS[3:])] if rng.random() < 0.1 else []
        records.insert(conn, new_record(body_of(rng), title, paths), NOW)
    # Bodies no phrase of a query hits: the title or the paths hold it.
    records.insert(conn, new_record("nothing to see here. at all", "zebra"), NOW)
    records.insert(conn, new_record("unrelated words only", "plain",
                                    ["lib/zebra_crossing.go"]), NOW)
    conn.execute("COMMIT")
    yield conn
    conn.close()


queries = st.lists(st.sampled_from((*WORDS, *IDENTS, "zebra", "zebra_crossing", "nothing"))
                   | st.text(max_size=10), min_size=1, max_size=6)


@settings(max_examples=400, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=queries, limit=st.sampled_from((1, 3, 20, 200)))
def test_every_snippet_is_the_one_a_match_on_memory_fts_makes(conn, words, limit):
    query = " ".join(words)
    found = search.search(conn, {"query": query, "limit": limit}, NOW)
    for record in found["records"]:
        assert record["snippet"] == reference_snippet(conn, query, record["id"])


@pytest.mark.parametrize("query", ["zebra", "zebra_crossing", "lib/zebra_crossing.go"])
def test_a_body_no_phrase_hits_gets_the_snippet_of_its_start(conn, query):
    found = search.search(conn, {"query": query, "limit": 5}, NOW)
    assert found["records"]
    for record in found["records"]:
        assert "[" not in record["snippet"]
        assert record["snippet"] == reference_snippet(conn, query, record["id"])


pieces = st.lists(st.sampled_from(WORDS + IDENTS) | st.sampled_from(PUNCT)
                  | st.text(min_size=1, max_size=8), min_size=1, max_size=60)


@settings(max_examples=150, deadline=None)
@given(bodies=st.lists(pieces, min_size=1, max_size=6),
       words=st.lists(st.sampled_from(WORDS + IDENTS) | st.text(min_size=1, max_size=8),
                      min_size=1, max_size=4))
def test_snippets_of_any_bodies_are_the_ones_a_match_makes(bodies, words):
    conn = memory_db()
    try:
        for i, body in enumerate(bodies):
            text = " ".join(body).strip() or "empty"
            records.insert(conn, new_record(text, f"title {i}"), NOW)
        query = " ".join(words)
        found = search.search(conn, {"query": query, "limit": 20}, NOW)
        for record in found["records"]:
            assert record["snippet"] == reference_snippet(conn, query, record["id"])
    finally:
        conn.close()


def test_the_page_is_made_without_looking_up_the_query_in_memory_fts():
    """The page's rows and snippets are made from the page's bodies alone: no statement
    FTS5 runs for them looks a term up in memory_fts's index (a MATCH on memory_fts, even
    with `rowid = ?`, looks every term of the query up again in every segment, per row)."""
    conn = memory_db()
    try:
        conn.execute("BEGIN")
        for i in range(60):
            records.insert(conn, new_record(f"cache entry {i}. osprey kestrel", "c"), NOW)
        conn.execute("COMMIT")
        seqs = [row[0] for row in conn.execute("SELECT seq FROM memory_records LIMIT 20")]
        query = "kestrel osprey ERR_DISK_FULL"
        binds = {"expr": ftsquery.search_expression(query), "now": NOW.isoformat()}
        statements: list[str] = []
        conn.set_trace_callback(statements.append)
        try:
            rows = search._page_rows(conn, [(seq, -1.0) for seq in seqs], binds)
        finally:
            conn.set_trace_callback(None)
        assert [row["snippet"] for row in rows] == [
            reference_snippet(conn, query, row["id"]) for row in rows]
        assert len(rows) == 20
        assert [s for s in statements if "memory_fts_" in s] == []
    finally:
        conn.close()
