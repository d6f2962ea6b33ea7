"""Property: no text makes the tokeniser or the indexing path raise, and a record of any text
stays readable and findable by its other words.

Awkward text: long words in any script (past FTS5's 32 KiB token limit, cut mid-character
there), stacked combining marks, lone surrogates, NUL and other control characters, private
use characters, and mixtures of them."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minionsd.memory.retrieval.candidates import fetch_candidates
from minionsd.memory.retrieval.index import RecallIndex
from minionsd.memory.retrieval.scoring import parse_counts, parse_stored
from minionsd.storage import fts, record_fields, records
from minionsd.text.fence import scrub_surrogates

NOW = datetime(2026, 6, 1, tzinfo=UTC)
# First code points of scripts whose words have no spaces or use multi-byte UTF-8.
SCRIPTS = [0x4E00, 0x3040, 0xAC00, 0x0600, 0x0900, 0x0E00, 0x0400, 0x10A0, 0x1F600, 0x20000,
           0xE000, 0x0041]


@st.composite
def long_word(draw: st.DrawFn) -> str:
    start = draw(st.sampled_from(SCRIPTS))
    length = draw(st.sampled_from([1, 63, 64, 65, 5_000, 10_922, 10_923, 12_000, 33_000]))
    span = draw(st.integers(1, 200))
    return "".join(chr(start + i % span) for i in range(length))


COMBINING = st.builds(lambda base, marks: base + "".join(marks),
                      st.sampled_from("aeoẞЖ日"),
                      st.lists(st.sampled_from("\u0301\u0308\u0327\u20dd\u0489\u1ab0"),
                               max_size=60))
SURROGATES = st.integers(0xD800, 0xDFFF).map(chr)
CONTROLS = st.sampled_from(["\x00", "\x00\x00", "\x1c", "\x85", "\u2028", "\ufeff", "\u200b",
                            "\ufffd", "\U0010ffff", "\ue000"])
ANY_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=40)
PART = st.one_of(long_word(), COMBINING, SURROGATES, CONTROLS, ANY_TEXT)
AWKWARD = st.lists(PART, min_size=1, max_size=6).map("".join)
AWKWARD_SPACED = st.lists(PART, min_size=1, max_size=6).map(" ".join)


@settings(max_examples=150, deadline=None)
@given(title=AWKWARD, body=AWKWARD_SPACED, aux=AWKWARD)
def test_tokeniser_never_raises_and_counts_stay_parseable(title: str, body: str,
                                                         aux: str) -> None:
    conn = sqlite3.connect(":memory:")
    counts = fts.term_counts(conn, title, body, aux)
    stored = parse_stored("M-x", counts)
    assert stored is not None
    parsed = parse_counts(counts)
    assert parsed is not None
    assert all(" " not in stem and "\n" not in stem for stem in parsed)
    fts.stems(conn, [*body.split(), title, aux])


@settings(max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(title=AWKWARD, body=AWKWARD_SPACED, tag=AWKWARD, n=st.integers(0, 10**6))
def test_any_record_is_stored_readable_and_found(conn: sqlite3.Connection, title: str,
                                                 body: str, tag: str, n: int) -> None:
    marker = f"marker{n}qz"
    text = f"{body} {marker}"
    fields = record_fields.validate_new({
        "body": text, "type": "semantic", "scope": "global", "trust": "human",
        "source": "test:awkward", "title": title[:500], "tags": [tag[:300]],
        "meta": {"k": tag[:50]}})
    conn.execute("BEGIN IMMEDIATE")
    record_id = records.insert(conn, fields, NOW)
    conn.execute("COMMIT")
    record = records.fetch(conn, record_id, NOW)
    assert record["body"] == scrub_surrogates(text)
    assert record["title"] == scrub_surrogates(title[:500])
    assert record_id in [r["id"] for r in records.search(conn, {"query": marker}, NOW)[
        "records"]]
    index = RecallIndex()
    found = fetch_candidates(index, conn, [marker], project=None, agent=None,
                             now_iso="2026-06-02T00:00:00.000Z", limit=5)
    assert [r["id"] for r in found] == [record_id]
    # A row without stored counts (older rows; the reindex job) is counted at query time. (Its
    # score differs: the index statistics hold the lengths of rows with stored counts only.)
    conn.execute("UPDATE memory_records SET term_counts = NULL WHERE id = ?", (record_id,))
    again = fetch_candidates(index, conn, [marker], project=None, agent=None,
                             now_iso="2026-06-02T00:00:00.000Z", limit=5)
    assert [r["id"] for r in again] == [record_id]
    conn.execute("DELETE FROM memory_records WHERE id = ?", (record_id,))
