"""A long body's snippet is made from a bounded window of it (search_reads.page_index):
FTS5's snippet() costs the square of a row's hits, so a body over SNIPPET_WINDOW characters
goes into the page's index only as its piece that ranks best for the query. The pieces cover
the body and are cut between tokens; the index never holds more than one window of a body
whatever its size; the snippet shows a matching passage when the body has one (the piece
holding the most telling phrases, not merely the first hit), and where no phrase hits the
body it is exactly FTS5's own snippet of the whole body."""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minionsd.storage import records, search, search_reads
from minionsd.storage.search_reads import SNIPPET_WINDOW, page_index, window_spans, window_text
from minionsd.text import ftsquery
from tests.unit.test_search_snippets import NOW, memory_db, new_record, reference_snippet

texts = st.text(alphabet=st.sampled_from("ab \n.-é_"), max_size=400)


@settings(max_examples=300, deadline=None)
@given(text=texts, size=st.integers(min_value=1, max_value=60))
def test_the_pieces_cover_the_text_in_order_each_within_the_size(text, size):
    spans = window_spans(text, size)
    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    assert all(a[1] == b[0] for a, b in itertools.pairwise(spans))
    assert all(end - start <= size for start, end in spans)
    assert all(end > start for start, end in spans) or text == ""
    assert "".join(text[start:end] for start, end in spans) == text


@settings(max_examples=300, deadline=None)
@given(words=st.lists(st.text(alphabet="abcxyz", min_size=1, max_size=12), min_size=1,
                      max_size=80),
       size=st.integers(min_value=13, max_value=60))
def test_a_cut_never_splits_a_word_when_white_space_is_near(words, size):
    text = " ".join(words)
    for start, end in window_spans(text, size):
        assert end == len(text) or text[end - 1] == " "
        assert start == 0 or text[start - 1] == " "


def test_a_short_text_is_one_piece_and_its_own_window():
    assert window_spans("short body", 100) == [(0, 10)]
    assert window_text("short body", (0, 10)) == "short body"
    assert window_text("one two three", (4, 8)) == "… two  …"


@pytest.fixture
def conn() -> Iterator[sqlite3.Connection]:
    conn = memory_db()
    yield conn
    conn.close()


def _add(conn: sqlite3.Connection, body: str, title: str) -> str:
    return records.insert(conn, new_record(body, title), NOW)


def _snippet(conn: sqlite3.Connection, query: str) -> str:
    found = search.search(conn, {"query": query, "limit": 5}, NOW)["records"]
    assert len(found) == 1
    return found[0]["snippet"]


def test_the_page_index_holds_one_window_of_a_huge_body(conn):
    body = "word " * 200_000
    _add(conn, body, "huge")
    seq = conn.execute("SELECT seq FROM memory_records").fetchone()[0]
    with page_index(conn, [seq], ftsquery.search_expression("word")):
        held = conn.execute(f"SELECT length(body) FROM temp.{search_reads._PAGE_SOURCE} "
                            "WHERE seq = ?", (seq,)).fetchone()[0]
    assert held <= SNIPPET_WINDOW + 4
    snippet = _snippet(conn, "word")
    assert snippet.startswith("[word] [word]") and snippet.endswith("…")
    # Nothing is left behind in the connection's scratch tables.
    assert conn.execute(f"SELECT count(*) FROM temp.{search_reads._WINDOWS}").fetchone()[0] == 0


def test_a_body_up_to_the_window_is_indexed_whole(conn):
    body = ("alpha beta " * (SNIPPET_WINDOW // 11))[:SNIPPET_WINDOW - 8] + " omega"
    record_id = _add(conn, body, "whole")
    assert _snippet(conn, "omega") == reference_snippet(conn, "omega", record_id)


def test_the_window_is_the_piece_holding_the_rarer_phrases(conn):
    filler = "plain filler text " * 2000
    body = ("payment first. " + filler + "the payment retry hit a zebrafish bug. " + filler
            + "payment last.")
    _add(conn, body, "log")
    snippet = _snippet(conn, "payment zebrafish")
    assert "[payment] retry hit a [zebrafish] bug." in snippet
    assert snippet.startswith("…") and snippet.endswith("…")


def test_a_hit_deep_in_a_huge_body_is_shown(conn):
    body = "filler " * 120_000 + "the canary failed at step nine. " + "filler " * 20_000
    _add(conn, body, "deep")
    assert "the [canary] failed at step nine." in _snippet(conn, "canary")


def test_a_huge_body_no_phrase_hits_gets_fts5s_own_snippet_of_its_start(conn):
    body = "Intro line of the log.\n" + "PASSED case\n" * 60_000
    record_id = _add(conn, body, "Quokka report")
    snippet = _snippet(conn, "quokka")
    assert snippet == reference_snippet(conn, "quokka", record_id)
    assert snippet.startswith("Intro line of the log.") and "[" not in snippet
