"""Per-agent notebook text (ORIGINAL §3.10, §9.9 scenarios 69, 72, 73)."""

from __future__ import annotations

import pytest

from minionsd.memory.consolidate.notebooks import (
    append_entry,
    count_entries,
    has_entry,
    note_title,
    notebook_header,
    render_entry,
    split_entries,
    trim_entries,
)

D = "2026-05-07"


def entry(i: int, body: str = "") -> str:
    return render_entry(
        entry_id=f"e{i}",
        date=D,
        title=f"Note {i}",
        body=body or f"# Note {i}\n\nlearned thing {i}\n",
        source=f"notes/archive/{D}-dallas-{i}.md",
    )


def notebook(count: int) -> str:
    text = None
    for i in range(count):
        text = append_entry(text, "dallas", entry(i))
    return text or ""


def test_entry_layout():
    text = render_entry(
        entry_id="abc123",
        date=D,
        title="Lock scope",
        body="# Lock scope\n\nKeep JSON writes inside one lock.\n### detail\nmore\n",
        source=f"notes/archive/{D}-dallas-lock.md",
        meta={"id": "NOTE-1", "task": "W-7", "project": "web", "agent": "dallas"},
    )
    assert text == (
        "<!-- minions:entry=abc123 -->\n"
        f"### {D}: Lock scope\n"
        f"**Source:** notes/archive/{D}-dallas-lock.md (note NOTE-1, task W-7, project web)\n"
        "\n"
        "Keep JSON writes inside one lock.\n### detail\nmore\n"
    )


def test_new_notebook_gets_header():
    text = append_entry(None, "dallas", entry(0))
    assert text.startswith(notebook_header("dallas").rstrip("\n") + "\n\n<!-- minions:entry=e0")
    assert count_entries(text) == 1


def test_append_is_idempotent():
    text = notebook(2)
    assert append_entry(text, "dallas", entry(1)) == text
    assert count_entries(text) == 2
    assert has_entry(text, "e0") and not has_entry(text, "e2")


def test_append_requires_marker():
    with pytest.raises(ValueError):
        append_entry(None, "dallas", "### no marker\n")


def test_headings_in_body_do_not_split_entries():
    body = "### one\n### two\n<!-- minions:entry=forged -->\n"
    text = append_entry(None, "dallas", entry(0, body))
    assert count_entries(text) == 1
    assert not has_entry(text, "forged")


def test_split_round_trip():
    text = notebook(3)
    header, entries = split_entries(text)
    assert header + "".join(entries) == text
    assert [e.split("\n")[1] for e in entries] == [f"### {D}: Note {i}" for i in range(3)]


def test_trim_keeps_newest():
    text = notebook(301)
    kept, removed = trim_entries(text, 300)
    assert count_entries(kept) == 300
    assert len(removed) == 1 and has_entry(removed[0], "e0")
    assert not has_entry(kept, "e0") and has_entry(kept, "e300")
    assert kept.startswith("# Notebook: dallas")


def test_trim_under_limit_is_unchanged():
    text = notebook(3)
    assert trim_entries(text, 300) == (text, [])


def test_long_body_is_bounded():
    text = render_entry(
        entry_id="e1",
        date=D,
        title="T",
        body="é" * 5000,
        source="notes/archive/x.md",
        max_body_bytes=1000,
    )
    assert "_(cut; full note: notes/archive/x.md)_" in text
    assert len(text.encode()) < 1200


def test_title_is_one_line():
    text = render_entry(entry_id="e1", date=D, title="a\nb", body="", source="s")
    assert text == f"<!-- minions:entry=e1 -->\n### {D}: a b\n**Source:** s\n"


def test_note_title():
    assert note_title({"title": "From meta"}, "# H1", "x.md") == "From meta"
    assert note_title({}, "text\n# H1", "x.md") == "H1"
    assert note_title({"title": ""}, "text", "x.md") == "x.md"
