"""notes.md text handling (ORIGINAL §3.5, §3.6, §9.6 scenarios 52 and 55; SPEC §3.1 item 4)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minionsd.text.notesfile import (
    HISTORY_HEADER,
    NOTES_HEADER,
    append_history,
    append_section,
    bound_notes,
    contains_entry,
    history_addition,
    render_section,
    split_sections,
)

D = "2026-05-07"


def digest(n: int, size: int = 0) -> str:
    return f"### {D}: digest {n}\n**By:** Engine (regex fallback)\n\n" + "x" * size + "\n"


def build(count: int, size: int = 0) -> str:
    text = None
    for i in range(count):
        text = append_section(text, render_section(digest(i, size), f"b{i}"))
    return text


def test_first_append_creates_header_then_separator():
    text = append_section(None, render_section(digest(1), "b1"))
    assert text.startswith(NOTES_HEADER.rstrip("\n"))
    assert f"\n\n---\n\n### {D}: digest 1\n" in text
    assert text.endswith("<!-- minions:batch=b1 -->\n")


def test_second_append_is_last():
    text = build(2)
    assert text.index("digest 0") < text.index("digest 1")
    assert text.count("\n\n---\n\n### ") == 2


def test_existing_text_is_kept():
    text = append_section("# Our notes\n\nhand written\n", render_section(digest(1), "b1"))
    assert text.startswith("# Our notes\n\nhand written\n\n---\n\n### ")


def test_contains_entry():
    text = build(2)
    assert contains_entry(text, "b0") and contains_entry(text, "b1")
    assert not contains_entry(text, "b2")
    assert not contains_entry(text, "b")  # whole ids only


def test_digest_cannot_forge_a_marker():
    section = render_section(digest(1) + "<!-- minions:batch=other -->", "b1")
    assert not contains_entry(section, "other")
    assert contains_entry(section, "b1")


@pytest.mark.parametrize("bad", ["", "a b", "x-->", "-a", "a\nb"])
def test_entry_ids_are_checked(bad):
    with pytest.raises(ValueError):
        render_section(digest(1), bad)


def test_split_round_trip():
    text = build(3)
    header, sections = split_sections(text)
    assert header + "".join(sections) == text
    assert header.startswith("# Team Notes")
    assert [s.split("\n")[2] for s in sections] == [f"### {D}: digest {i}" for i in range(3)]
    assert all(s.startswith("---\n\n### ") for s in sections)


def test_split_original_layout_and_category_headers():
    text = "\n\n---\n\n### a\n#### Bugs\n---\n\n#### not a section\n\n---\n\n### b\n"
    header, sections = split_sections(text)
    assert header == "\n\n"
    assert len(sections) == 2
    assert header + "".join(sections) == text


def test_split_without_sections():
    assert split_sections("just a header\n") == ("just a header\n", [])


def test_bound_keeps_header_and_newest_moves_oldest():
    text = build(12, size=4200)  # about 51 KB
    assert len(text.encode()) > 50_000
    kept, moved = bound_notes(text, 50_000)
    assert len(kept.encode()) <= 50_000
    assert kept.startswith(NOTES_HEADER.rstrip("\n"))
    assert "digest 11" in kept and contains_entry(kept, "b11")
    assert "digest 0\n" in moved and "digest 0\n" not in kept
    header, sections = split_sections(text)
    _, kept_sections = split_sections(kept)
    assert kept_sections == sections[-len(kept_sections) :]
    assert header + moved + "".join(kept_sections) == text  # nothing dropped


def test_bound_counts_utf8_bytes():
    big = append_section(build(3), render_section(digest(9) + "é" * 100, "b9"))
    limit = len(big.encode()) - 1
    assert len(big) < limit  # would fit if characters were counted
    _kept, moved = bound_notes(big, limit)
    assert moved


def test_bound_under_limit_changes_nothing():
    text = build(3)
    assert bound_notes(text, 1_000_000) == (text, "")


def test_bound_never_moves_the_newest_section():
    text = build(2, size=10_000)
    kept, moved = bound_notes(text, 100)
    assert "digest 1" in kept and "digest 0\n" in moved
    assert len(kept.encode()) > 100


def test_append_history_and_redo_is_idempotent():
    text = build(5, size=1000)
    _kept, moved = bound_notes(text, 3000)
    history = append_history(None, moved)
    assert history.startswith(HISTORY_HEADER.rstrip("\n"))
    for i in range(len(split_sections(moved)[1])):
        assert contains_entry(history, f"b{i}")
    assert append_history(history, moved) == history
    older = append_history(history, "")
    assert older == history


def test_history_grows_oldest_first():
    history = append_history(None, bound_notes(build(3, 500), 1200)[1])
    more = build(6, 500)
    _, moved = bound_notes(more, 1200)
    history = append_history(history, moved)
    positions = [history.index(f"batch=b{i} ") for i in range(4)]
    assert positions == sorted(positions)
    assert history.count("batch=b0 ") == 1


def _history_then_moved(first: int, then: int, size: int) -> tuple[str, str]:
    """A history holding the sections the first `first` batches moved out, and the sections
    the next bound moves (notes.md of `first + then` batches bound to 1,200 bytes)."""
    history = append_history(None, bound_notes(build(first, size), 1200)[1])
    _kept, moved = bound_notes(build(first + then, size), 1200)
    moved = "".join(s for s in split_sections(moved)[1]
                    if s.strip("\n") not in history)
    return history, moved


def test_the_history_addition_is_what_a_whole_rewrite_would_append():
    history, moved = _history_then_moved(3, 4, 300)
    addition = history_addition(history.encode(), moved)
    assert addition and history.encode() + addition == append_history(history, moved).encode()
    # Done: nothing more, whether the window holds the whole file or only its end.
    done = history.encode() + addition
    assert history_addition(done, moved) == b""
    assert history_addition(done[-(2 * len(moved.encode()) + 10):], moved) == b""


@given(st.integers(1, 4), st.integers(1, 5), st.integers(0, 400), st.floats(0, 1),
       st.booleans())
def test_an_append_a_crash_cut_short_is_completed_not_repeated(
        first: int, then: int, size: int, share: float, window: bool) -> None:
    history, moved = _history_then_moved(first, then, size)
    whole = history.encode() + history_addition(history.encode(), moved)
    # The crash left the history plus any beginning of the addition (a multi-byte
    # character cut in two included): the redo appends exactly the rest.
    cut = len(history.encode()) + int(share * (len(whole) - len(history.encode())))
    torn = whole[:cut]
    tail = torn[-(2 * len(moved.encode()) + 4096):] if window else torn
    assert torn + history_addition(tail, moved) == whole


def test_a_torn_section_in_other_scripts_is_completed_byte_for_byte():
    history = append_history(None, bound_notes(build(2, 50), 300)[1])
    moved = render_section("### Ünïcödé — 日本語 digest\n" + "é" * 301, "bx")
    whole = history.encode() + history_addition(history.encode(), moved)
    for cut in range(len(history.encode()), len(whole)):
        assert whole[:cut] + history_addition(whole[:cut], moved) == whole
