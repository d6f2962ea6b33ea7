"""A batch of memory.add is stored by one INSERT … SELECT over a JSON text of its rows
(records.batch_rows / insert_batch); every column must come out exactly as records.insert()
stores the same fields one by one: awkward text, numbers, lists, nested meta, NULs."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from tempfile import TemporaryDirectory

from hypothesis import given, settings
from hypothesis import strategies as st

from minionsd.storage import record_fields, records
from minionsd.storage.database import connect, migrate

NOW = datetime(2026, 6, 1, 12, 30, 15, 123456, tzinfo=UTC)
AWKWARD = st.sampled_from(["", " ", "\x00", "a\x00b", "😀", "é\u0301", "\u2028", "\\u0000",
                           "\\", '"', "\n\t\r", "\x7f", "\ufeff", "[REDACTED:x]", "0.1",
                           "TokenRefresher token_refresh", "null", "{}", "İstanbul"])
TEXT = st.lists(st.one_of(AWKWARD, st.text(max_size=20)), max_size=6).map("".join)
BODY = TEXT.map(lambda t: t + " body")
UNIT = st.one_of(st.none(), st.floats(0, 1), st.sampled_from([0, 1, 0.1, 0.3, 1e-300]))
STAMP = st.one_of(st.none(), st.sampled_from(["2026-01-02T03:04:05Z",
                                              "2026-01-02T03:04:05.5+02:00"]))
META = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(-2**53, 2**53),
                              st.floats(allow_nan=False, allow_infinity=False), TEXT),
                    lambda inner: st.one_of(st.lists(inner, max_size=3),
                                            st.dictionaries(TEXT, inner, max_size=3)),
                    max_leaves=6)
PARAMS = st.fixed_dictionaries({
    "body": BODY, "type": st.sampled_from(record_fields.TYPES), "scope": st.just("global"),
    "trust": st.sampled_from(record_fields.TRUSTS), "source": BODY,
}, optional={
    # a project is a name retrieval can ask for (record_fields.check_project_name)
    "title": TEXT, "author": TEXT, "project": TEXT.map(lambda t: t.strip() or "p"), "task": TEXT,
    "pr": st.one_of(st.integers(0, 10**6), TEXT), "paths": st.lists(TEXT, max_size=3),
    "tags": st.lists(TEXT, max_size=3), "importance": UNIT, "confidence": UNIT,
    "expires_at": STAMP, "created_at": STAMP, "meta": st.dictionaries(TEXT, META, max_size=3),
})


@contextmanager
def two_databases() -> Iterator[tuple[sqlite3.Connection, sqlite3.Connection]]:
    with TemporaryDirectory() as tmp:
        one, many = connect(Path(tmp) / "one.db"), connect(Path(tmp) / "many.db")
        try:
            migrate(one)
            migrate(many)
            yield one, many
        finally:
            one.close()
            many.close()


def stored(conn: sqlite3.Connection) -> list[tuple]:
    """Every column of every record but the random id, in insertion order."""
    conn.row_factory = None
    try:
        rows = conn.execute("SELECT * FROM memory_records ORDER BY seq").fetchall()
        names = [d[0] for d in conn.execute("SELECT * FROM memory_records LIMIT 0").description]
    finally:
        conn.row_factory = sqlite3.Row
    keep = [i for i, name in enumerate(names) if name != "id"]
    return [tuple((row[i], type(row[i]).__name__) for i in keep) for row in rows]


@settings(max_examples=60, deadline=None)
@given(batch=st.lists(PARAMS, min_size=1, max_size=6))
def test_a_batch_stores_exactly_what_single_inserts_store(batch):
    scratch = sqlite3.connect(":memory:")
    try:
        prepared = [records.derive(scratch, record_fields.validate_new(p)) for p in batch]
    finally:
        scratch.close()
    with two_databases() as (one, many):
        for fields in prepared:
            records.insert(one, fields, NOW)
        ids, rows = records.batch_rows(prepared, NOW)
        if rows is None:  # a NUL in a text column: one by one
            assert any("\x00" in value for fields in prepared for value in fields.values()
                       if isinstance(value, str))
            return
        assert records.insert_batch(many, rows) == len(prepared)
        assert stored(many) == stored(one)
        assert [r[0] for r in many.execute("SELECT id FROM memory_records ORDER BY seq")] == ids
        # The index and the counters the triggers keep saw the same rows.
        for conn in (one, many):
            conn.execute("INSERT INTO memory_fts (memory_fts) VALUES ('integrity-check')")
        assert many.execute("SELECT * FROM fts_stats").fetchall() == \
            one.execute("SELECT * FROM fts_stats").fetchall()


def test_a_nul_in_any_value_sends_the_batch_one_by_one():
    fields = records.derive(sqlite3.connect(":memory:"), record_fields.validate_new(
        {"body": "a\x00b", "type": "semantic", "scope": "global", "trust": "agent",
         "source": "test"}))
    ids, rows = records.batch_rows([fields], NOW)
    assert rows is None and len(ids) == 1


def test_a_failing_row_fails_the_whole_statement():
    fields = records.derive(sqlite3.connect(":memory:"), record_fields.validate_new(
        {"body": "b", "type": "semantic", "scope": "global", "trust": "agent",
         "source": "test"}))
    with two_databases() as (conn, _):
        ids, rows = records.batch_rows([fields, fields], NOW)
        assert rows is not None
        doubled = rows.replace(ids[1], ids[0])  # the same id twice: UNIQUE fails
        conn.execute("BEGIN IMMEDIATE")
        try:
            records.insert_batch(conn, doubled)
        except sqlite3.IntegrityError:
            pass
        else:
            raise AssertionError("a duplicate id was stored")
        conn.execute("COMMIT")
        assert conn.execute("SELECT count(*) FROM memory_records").fetchone()[0] == 0


def test_text_that_spells_a_nul_escape_or_a_nul_in_meta_stays_in_one_statement():
    """Only a NUL in a column's own text sends the batch one by one: a body that quotes the
    escape `\\u0000` (code, logs) and a NUL inside meta (an escape in its JSON text) go
    through the one statement, and come out as records.insert() stores them. (A NUL in a tag
    or path is also copied into search_aux's plain text: that batch goes one by one.)"""
    scratch = sqlite3.connect(":memory:")
    try:
        prepared = [records.derive(scratch, record_fields.validate_new(
            {"body": body, "type": "semantic", "scope": "global", "trust": "agent",
             "source": "test", "meta": meta}))
            for body, meta in (("json.dumps gives \\u0000 for a NUL", {}),
                               ("a NUL in meta", {"k\x00": ["v\x00", {"\x00": 1}]}))]
    finally:
        scratch.close()
    _ids, rows = records.batch_rows(prepared, NOW)
    assert rows is not None
    with two_databases() as (one, many):
        for fields in prepared:
            records.insert(one, fields, NOW)
        assert records.insert_batch(many, rows) == 2
        assert stored(many) == stored(one)
