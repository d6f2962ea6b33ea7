"""memory.search finds its page from the rare terms' records when it can (storage/search.py,
the bounded page); the page must be exactly the plain query's: every match ranked by
bm25(memory_fts, 4, 1, 2), sorted by (rank, id), cut at `limit`, with the same ranks,
snippets, statuses and `total`, under every filter. The reference below is that plain query,
written out here on its own."""

from __future__ import annotations

import math
import random
import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minionsd.clock import iso
from minionsd.storage import record_fields, records, search
from minionsd.storage.database import migrate
from minionsd.text import ftsquery
from tests.search_reference import reference

NOW = datetime(2026, 6, 1, tzinfo=UTC)
# Words by the share of records that hold them: some in most records (their idf is clamped),
# some in a few, identifiers and paths in a few more.
TIERS = {"alpha": 0.9, "bravo": 0.6, "charlie": 0.35, "delta": 0.15, "echo": 0.05,
         "foxtrot": 0.02, "golf": 0.005}
IDENTS = ("ERR_DISK_FULL", "token_refresh", "RetryPolicy", "src/cache/pool.py")
FILLER = ("note", "deploy", "service", "timeout", "queue", "worker", "build", "log")
PROJECTS = ("atlas", "beacon", None)
AGENTS = ("kane", "ash", None)


def _record(rng: random.Random, index: int) -> dict[str, Any]:
    words = [w for w, share in TIERS.items() for _ in range(rng.randint(1, 4))
             if rng.random() < share]
    words += [i for i in IDENTS if rng.random() < 0.03]
    words += rng.choices(FILLER, k=rng.randint(3, 40))
    rng.shuffle(words)
    title_words = [w for w in TIERS if rng.random() < TIERS[w] / 4] + [rng.choice(FILLER)]
    project = rng.choice(PROJECTS)
    agent = rng.choice(AGENTS)
    raw: dict[str, Any] = {
        "body": " ".join(words) + f" r{index}", "title": " ".join(title_words),
        "type": rng.choice(("semantic", "episodic", "procedural")),
        "scope": f"project:{project}" if project else "global", "trust": "agent",
        "source": "test", "project": project, "agent": agent,
        "paths": [IDENTS[3]] if rng.random() < 0.02 else [],
        "tags": ["delta"] if rng.random() < 0.05 else []}
    roll = rng.random()
    if roll < 0.05:
        raw["expires_at"] = (NOW - timedelta(days=1)).isoformat()  # expired at read time
    elif roll < 0.1:
        raw["expires_at"] = (NOW + timedelta(days=1)).isoformat()
    return record_fields.validate_new({k: v for k, v in raw.items() if v is not None})


@pytest.fixture(autouse=True)
def small_index(monkeypatch: pytest.MonkeyPatch) -> None:
    """This index holds 712 records: the bounded page is tried from a phrase held by 20 (the
    daemon waits for 2,000, below which the plain query costs little)."""
    monkeypatch.setattr(search, "CHEAP", 20)


@pytest.fixture(scope="module")
def conn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sqlite3.Connection]:
    path: Path = tmp_path_factory.mktemp("search") / "state.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.row_factory = sqlite3.Row
    migrate(conn)
    rng = random.Random(24)
    conn.execute("BEGIN")
    ids = [records.insert(conn, _record(rng, i), NOW) for i in range(700)]
    twin = _record(rng, 0) | {"body": "alpha golf echo twin", "title": "Twin"}
    ids += [records.insert(conn, twin, NOW) for _ in range(12)]  # equal ranks: by id
    for record_id in rng.sample(ids, 40):
        records.retract(conn, record_id, "wrong", NOW)
    for record_id in rng.sample(ids, 20):
        if records.fetch(conn, record_id, NOW)["status"] == "active":
            records.expire(conn, record_id, NOW)
    conn.execute("COMMIT")
    yield conn
    conn.close()


WORDS = (*TIERS, *IDENTS, *FILLER, "r17", "r402", "nothinghere", "the")
queries = st.lists(st.sampled_from(WORDS) | st.text(max_size=12), min_size=1, max_size=5)
filters = st.fixed_dictionaries({}, optional={
    "status": st.lists(st.sampled_from(sorted(record_fields.STATUSES)), max_size=3,
                       unique=True),
    "type": st.sampled_from(sorted(record_fields.TYPES)),
    "scope": st.sampled_from(("global", "project:atlas", "project:beacon")),
    "project": st.sampled_from(("atlas", "beacon")),
    "agent": st.sampled_from(("kane", "ash"))})


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=queries, limit=st.sampled_from((1, 2, 3, 5, 12, 20, 50, 500)), extra=filters)
def test_the_page_is_the_plain_querys_page(conn, words, limit, extra):
    params = {"query": " ".join(words), "limit": limit, **extra}
    assert search.search(conn, params, NOW) == reference(conn, params, NOW)


@pytest.mark.parametrize("query", ["golf alpha", "foxtrot bravo alpha", "foxtrot charlie",
                                   "ERR_DISK_FULL alpha bravo", "twin alpha", "golf echo",
                                   "src/cache/pool.py delta alpha"])
@pytest.mark.parametrize("limit", [1, 5, 10])
def test_rare_terms_decide_the_page_without_the_plain_query(conn, query, limit):
    """These queries are answered by the bounded page (not the plain query as a fallback),
    and it is the reference's page."""
    phrases = ftsquery.search_phrases(query)
    binds = {"expr": " OR ".join(phrases), "now": iso(NOW), "s0": "active"}
    condition = f"{records.EFFECTIVE_STATUS} IN (:s0)"
    page = search._bounded_page(conn, phrases, binds, condition, limit)
    assert page is not None
    expected = reference(conn, {"query": query, "limit": limit}, NOW)["records"]
    assert [(seq_id(conn, seq), rank) for seq, rank in page] == \
        [(r["id"], r["rank"]) for r in expected]


def seq_id(conn: sqlite3.Connection, seq: int) -> str:
    return conn.execute("SELECT id FROM memory_records WHERE seq = ?", (seq,)).fetchone()[0]


def test_common_terms_alone_take_the_plain_query(conn):
    phrases = ftsquery.search_phrases("alpha bravo")
    binds = {"expr": " OR ".join(phrases), "now": iso(NOW), "s0": "active"}
    condition = f"{records.EFFECTIVE_STATUS} IN (:s0)"
    assert search._bounded_page(conn, phrases, binds, condition, 20) is None


@pytest.mark.parametrize("word", [*TIERS, *IDENTS])
def test_no_record_scores_above_its_phrase_bound(conn, word):
    """What one phrase adds to a record's score (FTS5's own bm25 of that phrase alone) stays
    below phrase_bound for the index's size and the phrase's holders."""
    phrase = ftsquery.search_expression(word).split(" OR ")[0]
    rows = conn.execute("SELECT count(*) FROM memory_records").fetchone()[0]
    scores = [-row[0] for row in conn.execute(
        "SELECT rank FROM memory_fts WHERE memory_fts MATCH ? "
        "AND rank MATCH 'bm25(4.0, 1.0, 2.0)'", (phrase,))]
    assert scores
    assert max(scores) < search.phrase_bound(rows, len(scores))


@given(rows=st.integers(1, 10**7), share=st.floats(0, 1), freq=st.floats(0, 1e6),
       length=st.integers(0, 10**6), avg=st.floats(0.1, 1e5))
def test_phrase_bound_holds_for_any_frequency_and_length(rows, share, freq, length, avg):
    holders = max(1, min(rows, round(rows * share)))
    idf = max(math.log((rows - holders + 0.5) / (holders + 0.5)), 1e-6)
    k1, b = 1.2, 0.75
    score = idf * (freq * (k1 + 1)) / (freq + k1 * (1 - b + b * length / avg))
    assert score < search.phrase_bound(rows, holders) or score == 0


@pytest.mark.parametrize("query", ["alpha", "golf echo", "twin", "nothinghere", "bravo delta"])
def test_inactive_matches_are_told_apart_alike_one_by_one_or_in_one_pass(conn, query):
    expression = ftsquery.search_expression(query)
    inactive = sorted(search._inactive(conn, iso(NOW)))
    assert len(inactive) > 50
    one_by_one = search.count_matches(conn, expression, inactive, lookups=len(inactive))
    one_pass = search.count_matches(conn, expression, inactive, lookups=0)
    assert one_by_one == one_pass == reference(conn, {"query": query}, NOW)["total"]


@pytest.mark.parametrize("query", ["golf alpha", "foxtrot bravo alpha", "foxtrot charlie",
                                   "ERR_DISK_FULL alpha bravo", "twin alpha", "golf echo",
                                   "src/cache/pool.py delta alpha"])
@pytest.mark.parametrize("limit", [1, 5, 10])
@pytest.mark.parametrize("lookups", [0, 100])
def test_a_search_of_active_records_ranks_the_rare_records_and_counts_in_one_walk(
        conn, monkeypatch, query, limit, lookups):
    """A search of active records: the page comes from the records holding rare phrases,
    ranked under the whole query, with the total counted in the same walk (the inactive
    records told apart one by one, or in that walk), both the reference's."""
    monkeypatch.setattr(search, "_LOOKUPS", lookups)
    phrases = ftsquery.search_phrases(query)
    binds = {"expr": " OR ".join(phrases), "now": iso(NOW), "s0": "active"}
    condition = f"{records.EFFECTIVE_STATUS} IN (:s0)"
    found = search._bounded(conn, phrases, binds, condition, limit,
                            search._inactive(conn, iso(NOW)))
    assert found is not None
    page, total = found
    expected = reference(conn, {"query": query, "limit": limit}, NOW)
    assert [(seq_id(conn, seq), rank) for seq, rank in page] == \
        [(r["id"], r["rank"]) for r in expected["records"]]
    assert total == expected["total"]


@pytest.mark.parametrize("query", ["alpha bravo", "golf alpha", "foxtrot bravo alpha",
                                   "src/cache/pool.py delta alpha", "golf foxtrot"])
def test_each_phrase_is_counted_once(conn, query):
    """The phrases' holders are counted in one statement, each to where its bound stops
    changing, not first to CHEAP and then again for the phrases that reach it; the page is
    still the plain query's."""
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    try:
        found = search.search(conn, {"query": query, "limit": 10}, NOW)
    finally:
        conn.set_trace_callback(None)
    counts = [s for s in statements if s.startswith("SELECT (SELECT count(*) FROM (SELECT 1")]
    assert len(counts) == 1
    assert found == reference(conn, {"query": query, "limit": 10}, NOW)
