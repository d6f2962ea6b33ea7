"""storage/search_reads.py: a bm25 rank carried out of an aggregate as two integers must come
back as the very same double, and the one walk that ranks chosen rows and counts every match
must give what ranks_of and count_matches give on their own."""

from __future__ import annotations

import json
import math
import random
import sqlite3
import struct
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minionsd.storage import search_reads
from minionsd.text import ftsquery

WEIGHTS = "4.0, 1.0, 2.0"


def carried(conn: sqlite3.Connection, value: float) -> float | None:
    pair = conn.execute(f"SELECT {search_reads.exact_rank_sql(':v')}", {"v": value}).fetchone()[0]
    return search_reads.rank_from_exact(None if pair is None else json.loads(pair))


def bits(value: float) -> bytes:
    return struct.pack("<d", value)


@pytest.fixture(scope="module")
def memory() -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(":memory:")
    yield conn
    conn.close()


# Magnitudes the exact form covers: from 2**-80 to below 2**10.
covered = st.floats(min_value=2.0 ** -80, max_value=1024.0, exclude_max=True)


@given(size=covered)
def test_a_rank_comes_back_bit_for_bit(memory, size):
    assert bits(carried(memory, -size)) == bits(-size)


@pytest.mark.parametrize("size", [
    1.0, math.nextafter(1.0, 0), math.nextafter(1.0, 2), 2.0 ** -10, math.nextafter(2.0 ** -10, 0),
    2.0 ** -80, 1024.0 - 2.0 ** -42, 1e-6, 2.2e-6, 1 / 3, 29.999999999999996])
def test_rung_edges_come_back_bit_for_bit(memory, size):
    assert bits(carried(memory, -size)) == bits(-size)


@pytest.mark.parametrize("value", [0.0, 1.0, 1024.0, 5e9, -1024.0, -2.0 ** 40,
                                   -(2.0 ** -81), -1e-300])
def test_values_outside_the_form_are_refused(memory, value):
    """Not negative, or too large or too small in magnitude: None (the caller ranks the
    plain way), never a wrong number."""
    assert carried(memory, value) is None


@pytest.fixture(scope="module")
def index() -> Iterator[sqlite3.Connection]:
    """An FTS5 table named as the daemon's, 600 rows of a few words of differing spread."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE memory_fts USING fts5(title, body, search_aux, "
                 "tokenize = 'porter unicode61 remove_diacritics 2')")
    rng = random.Random(26)
    words = ["alpha"] * 9 + ["bravo"] * 5 + ["charlie"] * 2 + ["delta", "cache", "client"]
    for rowid in range(1, 601):
        body = " ".join(rng.choices(words, k=rng.randint(1, 30)))
        if rng.random() < 0.1:
            body += " src/cache_client.ts"
        conn.execute("INSERT INTO memory_fts (rowid, title, body, search_aux) VALUES (?, ?, ?, ?)",
                     (rowid, rng.choice(words), body, "cacheclient" if "cache_client" in body
                      else ""))
    yield conn
    conn.close()


@pytest.mark.parametrize("query", ["alpha", "delta charlie", "src/cache_client.ts bravo",
                                   "alpha bravo charlie delta", "nothinghere"])
@pytest.mark.parametrize("lookups", [0, 1000])
def test_one_walk_ranks_and_counts_as_the_two_reads_do(index, query, lookups):
    expression = ftsquery.search_expression(query) or '"nothinghere"'
    rng = random.Random(query)
    seqs = rng.sample(range(1, 601), 120)
    excluded = sorted(rng.sample(range(1, 601), 40))
    found = search_reads.ranks_and_count(index, expression, WEIGHTS, seqs, excluded, lookups)
    assert found is not None
    ranks, count = found
    alone = search_reads.ranks_of(index, expression, WEIGHTS, seqs)
    assert sorted((seq, bits(rank)) for seq, rank in ranks) == \
        sorted((seq, bits(rank)) for seq, rank in alone)
    assert count == search_reads.count_matches(index, expression, excluded, lookups)
    if expression != '"nothinghere"':
        assert ranks and count


@pytest.mark.parametrize(("query", "among"), [("alpha delta", '"delta"'),
                                              ("src/cache_client.ts bravo", '"cacheclient"'),
                                              ("alpha bravo charlie", '"charlie" OR "bravo"'),
                                              ("alpha", '"nothinghere"')])
def test_the_rows_to_rank_can_be_those_of_an_fts5_expression(index, query, among):
    """Given as an FTS5 expression, the rows ranked are those matching it and the query."""
    expression = ftsquery.search_expression(query)
    holders = [row[0] for row in index.execute(
        "SELECT rowid FROM memory_fts WHERE memory_fts MATCH ?", (among,))]
    found = search_reads.ranks_and_count(index, expression, WEIGHTS, among, [], 0)
    assert found is not None
    alone = search_reads.ranks_of(index, expression, WEIGHTS, holders)
    assert sorted((seq, bits(rank)) for seq, rank in found[0]) == \
        sorted((seq, bits(rank)) for seq, rank in alone)
    assert found[1] == search_reads.count_matches(index, expression, [], 0)
    assert bool(found[0]) == bool(holders)
