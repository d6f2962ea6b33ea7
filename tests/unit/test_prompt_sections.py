"""Prompt sections carry no bookkeeping (SPEC §3.4 v2): no `<!-- minions:… -->` markers from
notes.md or notebooks, no title repeated as a heading in a rendered record, no heading marks
in search snippets. The files keep their markers: a redo after a crash relies on them."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from minionsd.memory import prompt
from minionsd.memory.consolidate import notebooks
from minionsd.memory.retrieval.pack import min_size, render_item
from minionsd.storage.records import plain_snippet
from minionsd.text import notesfile

MARK = "<!-- minions:"
# Text that tries hard to look like bookkeeping, mixed with ordinary Markdown.
texty = st.lists(st.sampled_from([
    "plain words", "# Heading", "### 2026-01-01: x", "---", "", "<!-- minions:batch=B-1 -->",
    "<!-- minions:entry=abc -->", "<!-- other comment -->", "- **Key**: value", "\U0001f916",
]), max_size=8).map("\n".join) | st.text(max_size=120)
ids = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,20}", fullmatch=True)


def _notes_md(digests: list[tuple[str, str]]) -> str:
    text = None
    for batch_id, digest in digests:
        text = notesfile.append_section(text, notesfile.render_section(f"### T\n{digest}",
                                                                       batch_id))
    return text or ""


def _notebook(entries: list[tuple[str, str, str]]) -> str:
    text = None
    for entry_id, title, body in entries:
        entry = notebooks.render_entry(entry_id=entry_id, date="2026-12-01", title=title or "t",
                                       body=body, source="notes/archive/x.md")
        text = notebooks.append_entry(text, "dallas", entry)
    return text or ""


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(ids, texty), min_size=1, max_size=6),
       st.integers(256, 4096))
def test_no_marker_in_team_notes(digests, max_bytes):
    text = _notes_md(digests)
    assert MARK in text  # the file keeps them
    section = prompt.team_notes_section(text, max_bytes, 65536)
    assert section is not None and MARK not in section.rendered


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(ids, texty, texty), min_size=1, max_size=6),
       st.integers(256, 4096))
def test_no_marker_in_personal_memory(entries, max_bytes):
    text = _notebook(entries)
    assert MARK in text
    section = prompt.personal_section(text, "dallas", max_bytes, 65536)
    assert section is not None and MARK not in section.rendered


def test_markers_leave_readable_sections():
    text = _notes_md([("B-1", "- one _(a)_"), ("B-2", "- two _(b)_")])
    rendered = prompt.team_notes_section(text, 8192, 65536).rendered
    assert "- one _(a)_\n\n---\n\n### T\n- two _(b)_\n" in rendered
    book = _notebook([("e1", "First", "body one"), ("e2", "Second", "body two")])
    rendered = prompt.personal_section(book, "dallas", 8192, 65536).rendered
    assert "body one\n\n### 2026-12-01: Second\n" in rendered


def record(title: str, body: str) -> dict:
    return {"id": "M-1", "type": "semantic", "scope": "global", "trust": "agent",
            "created_at": "2026-12-01T00:00:00Z", "source": "notes/archive/x.md",
            "title": title, "body": body}


def test_a_rendered_record_does_not_repeat_its_title():
    text = render_item(record("Release freeze", "# Release freeze\n\nNo merges on Friday."))
    assert text.endswith("\nTitle: Release freeze\nNo merges on Friday.")
    kept = render_item(record("Release freeze", "# Something else\n\nbody"))
    assert "\n# Something else\n" in kept


@given(st.text(max_size=40), st.text(max_size=200), st.integers(1, 6))
def test_min_size_stays_a_lower_bound(title, body, level):
    item = record(title, f"{'#' * level} {title}\n{body}")
    assert len(render_item(item).encode()) >= min_size(item)


def test_snippets_carry_no_heading_marks():
    assert plain_snippet("# Release [freeze]\n\nNo merges") == "Release [freeze]\n\nNo merges"
    assert plain_snippet("…## Part two\nmore") == "…Part two\nmore"
    assert plain_snippet("a # b") == "a # b"
    assert plain_snippet(None) is None
