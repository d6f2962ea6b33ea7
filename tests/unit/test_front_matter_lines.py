"""Front matter that is not YAML only because of an unquoted colon is read line by line, and
recognised keys of the wrong type are dropped with a warning naming the key (SPEC §2)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minionsd.text.markdown import (
    NOTE_KEYS,
    FrontMatterError,
    check_note_types,
    parse_note,
    read_lines,
    read_note,
)

TEXT_KEYS = ("id", "agent", "author", "date", "title", "kind", "project", "task", "pr")
# Characters str.splitlines() breaks on, which a one-line value can never hold.
_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
line_text = st.text(st.characters(blacklist_characters=_BREAKS, blacklist_categories=("Cs",)),
                    min_size=1, max_size=60).map(str.strip).filter(
    lambda v: v and not (len(v) >= 2 and v[0] == v[-1] and v[0] in "'\""))


def test_unquoted_colon_in_title_is_read_line_by_line():
    text = "---\ntitle: Gotcha 3: module m7 needs setup\nagent: dallas\n---\n\nbody\n"
    meta, body, warnings = read_note(text)
    assert meta == {"title": "Gotcha 3: module m7 needs setup", "agent": "dallas"}
    assert body == "body\n"
    assert len(warnings) == 1 and "line by line" in warnings[0] and "title" in warnings[0]
    assert parse_note(text) == (meta, body)


def test_line_values_keep_hashes_and_read_typed_keys():
    meta, _, _ = read_note("---\ntitle: Gotcha: Fix #12\nhold: true\nimportance: 0.8\n"
                           "tags: [retries, ci]\npr: 42\ntask: 'W-7: retry'\n---\nx")
    assert meta == {"title": "Gotcha: Fix #12", "hold": True, "importance": 0.8,
                    "tags": ["retries", "ci"], "pr": "42", "task": "W-7: retry"}


@pytest.mark.parametrize("block", [
    "title: a: b\nsomething else\n",        # a line that is not `key: value`
    "title: a: b\nwhy: because: reasons\n",  # a key the inbox does not recognise
    "title: a: b\ntitle: again\n",           # a repeated key
    "title: a: b\n  indented: x\n",
    "key: [unclosed\n",
])
def test_block_unreadable_both_ways_is_still_an_error(block):
    with pytest.raises(FrontMatterError, match="not valid YAML"):
        parse_note(f"---\n{block}---\nbody")


def test_valid_yaml_is_not_read_line_by_line():
    meta, _, warnings = read_note("---\ntitle: 'Fix: quoted'\ntags:\n  - a\n---\nx")
    assert meta == {"title": "Fix: quoted", "tags": ["a"]} and warnings == []


@given(st.dictionaries(st.sampled_from(TEXT_KEYS), line_text, min_size=1))
def test_line_reader_reads_back_every_text_value(meta):
    block = "".join(f"{key}: {value}\n" for key, value in meta.items())
    assert read_lines(block) == meta


@given(st.dictionaries(st.sampled_from(TEXT_KEYS), line_text, min_size=1), line_text)
def test_a_colon_in_any_text_value_never_quarantines(meta, tail):
    meta = dict(meta, title=f"Gotcha 3: {tail}")
    block = "".join(f"{key}: {value}\n" for key, value in meta.items())
    parsed, body, _warnings = read_note(f"---\n{block}---\n\nthe body\n")
    assert body == "the body\n"
    assert isinstance(parsed["title"], str) and parsed["title"].startswith("Gotcha 3")
    if _warnings:  # read line by line: every value exactly as written
        assert parsed == meta


def test_wrong_types_are_dropped_with_a_warning_naming_the_key():
    kept, warnings = check_note_types({"importance": "high", "hold": "yes please",
                                       "title": ["a", "list"], "tags": "a, b",
                                       "agent": "dallas", "why": {"free": "form"}})
    assert kept == {"tags": ["a", "b"], "agent": "dallas", "why": {"free": "form"}}
    assert [w.split("'")[1] for w in warnings] == ["importance", "hold", "title"]
    assert "'importance' ignored" in warnings[0] and "'high'" in warnings[0]


scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                    st.sampled_from(["", "high", "a, b", "0.5"]),
                    st.lists(st.sampled_from(["x", "y"]), max_size=2),
                    st.lists(st.integers(), max_size=2), st.just({"a": 1}))


@given(st.dictionaries(st.sampled_from(NOTE_KEYS), scalars, max_size=6))
def test_checked_meta_only_holds_values_of_the_right_type(meta):
    kept, warnings = check_note_types(meta)
    for key, value in kept.items():
        if key == "hold":
            assert isinstance(value, bool)
        elif key == "importance":
            assert isinstance(value, int | float) and not isinstance(value, bool)
            assert 0 <= value <= 1
        elif key == "tags":
            assert isinstance(value, list) and all(isinstance(t, str) for t in value)
        else:
            assert isinstance(value, str)
    assert {w.split("'")[1] for w in warnings} == set(meta) - set(kept)


@pytest.mark.parametrize(("block", "expected"), [
    ("title: Fix: retry storm\nproject:\n", {"title": "Fix: retry storm", "project": None}),
    ("title: Fix: retry storm\ntags:   \n", {"title": "Fix: retry storm", "tags": None}),
    ("title:\tFix: retry storm\nagent:\tdallas\n", {"title": "Fix: retry storm",
                                                    "agent": "dallas"}),
    ("# written by an agent\ntitle: Fix: retry storm\n", {"title": "Fix: retry storm"}),
    ("title: Fix: retry storm\r\nproject:\r\n", {"title": "Fix: retry storm", "project": None}),
])
def test_empty_values_tabs_and_comment_lines_are_read_like_yaml_reads_them(block, expected):
    """What YAML allows beside the unquoted colon (an empty value, a tab after the colon, a
    comment line) does not send the note to quarantine; an empty value is dropped with a
    warning naming the key, as it is from a YAML block."""
    meta, body, warnings = read_note(f"---\n{block}---\n\nbody\n")
    assert meta == expected and body == "body\n" and "line by line" in warnings[0]
    kept, type_warnings = check_note_types(meta)
    assert kept == {k: v for k, v in expected.items() if v is not None}
    assert len(type_warnings) == sum(v is None for v in expected.values())
