"""The quick forms of a new record's stored values equal the general ones: paths, tags and
meta as json.dumps writes them, and timestamps as clock.iso(parse_iso(...)) writes them (or
the same error for text that is not a timestamp)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minionsd.clock import iso, parse_iso
from minionsd.errors import InvalidParams
from minionsd.storage import record_fields, record_rows
from minionsd.storage.record_rows import json_text

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12)


@settings(max_examples=400, deadline=None)
@given(value=st.one_of(st.lists(st.text()), JSON))
def test_json_text_is_json_dumps(value):
    assert json_text(value) == json.dumps(value)


def test_json_text_of_awkward_strings():
    for value in ([], {}, [""], ["\ud800", "\x00", "é😀", 'q"\\\n\u2028'], [["nested"]]):
        assert json_text(value) == json.dumps(value)


def general(value: str) -> str:
    return iso(parse_iso(value))


STAMPS = st.one_of(
    st.datetimes().map(lambda d: d.strftime("%Y-%m-%dT%H:%M:%S") + "Z"),
    st.datetimes().map(lambda d: d.strftime("%Y-%m-%dT%H:%M:%S.%f")[:23] + "Z"),
    st.from_regex(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?Z?",
                  fullmatch=True),
    st.sampled_from(["0999-01-01T00:00:00Z", "2026-02-30T00:00:00Z", "2026-01-02T24:00:00Z",
                     "2026-01-02T03:04:05+02:00", "2026-01-02", "2026-01-02T03:04:60Z",
                     "2026-01-02T03:04:05.123Z", "2026-01-02T03:04:05.12Z"]))


@settings(max_examples=400, deadline=None)
@given(value=STAMPS)
def test_timestamps_are_stored_as_iso_of_their_parse(value):
    try:
        expected = general(value)
    except ValueError:
        with pytest.raises(InvalidParams) as caught:
            record_fields._timestamp({"created_at": value}, "created_at")
        assert caught.value.data["param"] == "created_at"
        return
    assert record_fields._timestamp({"created_at": value}, "created_at") == expected


ROW_TEXT = st.lists(st.sampled_from(["\\", "\\\\", "u0000", "\\u0000", "\x00", "a", "\"", "é",
                                     "\\\\u0000", "u", "0"]), max_size=8).map("".join)


@settings(max_examples=500, deadline=None)
@given(rows=st.lists(st.lists(st.one_of(ROW_TEXT, st.text(max_size=5), st.integers(),
                                        st.none()), max_size=4), max_size=4))
def test_an_escaped_nul_is_found_in_the_json_text_exactly_when_a_value_holds_one(rows):
    text = json.dumps(rows, ensure_ascii=False, separators=(",", ":"))
    held = any("\x00" in value for values in rows for value in values if isinstance(value, str))
    assert record_rows.has_escaped_nul(text) == held


def test_ids_of_a_batch_look_like_single_ids_and_differ():
    now = datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
    ids = record_rows.new_ids(now, 500)
    single = record_rows.new_id(now)
    assert len(set(ids)) == 500
    assert all(re.fullmatch(r"M-[0-9a-f]{23}", i) and i[:13] == single[:13] for i in ids)
