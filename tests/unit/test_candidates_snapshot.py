"""Candidate search reads one consistent state: a document frequency never exceeds the row
count it is divided by, whether a writer commits between two of its statements or a df comes
from the cache of a larger table (both once made `math domain error` in the idf)."""

from __future__ import annotations

import math
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minionsd.memory.retrieval.candidates import fetch_candidates
from minionsd.memory.retrieval.index import DF_CACHE_SECONDS, RecallIndex
from minionsd.memory.retrieval.scoring import idf as _idf
from minionsd.storage import fts
from tests.unit.test_candidates import add, open_db

NOW = "2026-06-01T00:00:00.000Z"


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "state.db"
    conn = open_db(path)
    conn.execute("PRAGMA journal_mode=WAL")  # as the daemon runs it: readers keep snapshots
    for i in range(3):
        add(conn, f"M-{i}", f"alpha note number {i} about the cache")
    conn.close()
    yield path


def search(conn: sqlite3.Connection, terms: list[str],
           index: RecallIndex | None = None) -> list[dict]:
    return fetch_candidates(index or RecallIndex(), conn, terms, project=None, agent=None,
                            now_iso=NOW, limit=50)


@given(df=st.integers(0, 10**9), rows=st.integers(0, 10**9))
def test_idf_is_finite_and_positive_for_any_df(df: int, rows: int) -> None:
    value = _idf(df, rows)
    assert math.isfinite(value) and value > 0


def test_a_df_above_the_row_count_counts_as_a_term_in_every_row() -> None:
    assert _idf(7, 2) == _idf(2, 2) == 1e-6


def test_a_df_cached_from_a_larger_table_does_not_break_retrieval(db: Path) -> None:
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        rows = fts.index_stats(conn).rows
        # As if counted a moment ago in a snapshot with more rows (then some were deleted).
        index = RecallIndex()
        index._dfs["alpha"] = (rows + 2, rows, time.monotonic() + DF_CACHE_SECONDS, None)
        found = search(conn, ["alpha", "cache"], index)
        assert sorted(r["id"] for r in found) == ["M-0", "M-1", "M-2"]
    finally:
        conn.close()


def test_a_commit_between_two_statements_is_not_seen(db: Path) -> None:
    """A writer commits five more matching rows just before the df statement runs (from the
    reader's trace callback, so deterministically between the row count and the df read)."""
    reader = sqlite3.connect(db, isolation_level=None)
    writer = sqlite3.connect(db, isolation_level=None)
    fired = []
    outside = []

    def commit_more(sql: str) -> None:
        if not reader.in_transaction and not sql.startswith(("BEGIN", "COMMIT", "--")):
            outside.append(sql)
        if not fired and "(SELECT 1 FROM memory_fts WHERE memory_fts MATCH" in sql:
            fired.append(sql)
            writer.execute("BEGIN IMMEDIATE")
            for i in range(5):
                add(writer, f"M-new-{i}", f"alpha arrived later {i}")
            writer.execute("COMMIT")

    try:
        reader.set_trace_callback(commit_more)
        found = search(reader, ["alpha"])
        assert fired, "the df statement did not run"
        # Everything came from the snapshot taken before the writer committed.
        assert sorted(r["id"] for r in found) == ["M-0", "M-1", "M-2"]
        assert outside == []  # every statement of the search ran in the one read transaction
        reader.set_trace_callback(None)
        assert len(search(reader, ["alpha"])) == 8  # the next search sees the new rows
    finally:
        reader.close()
        writer.close()
