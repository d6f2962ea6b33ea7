"""KB classification, entry names and layout, archive names (ORIGINAL §3.7, §3.8, §9.7, §9.8)."""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minionsd.memory.consolidate import classify as classify_mod
from minionsd.memory.consolidate.classify import (
    CATEGORIES,
    archive_name,
    classify,
    entry_name,
    redacted_name,
    render_entry,
    title_slug,
    unique_path,
)
from minionsd.text.markdown import FrontMatterError, parse_note

D = "2026-05-07"


@pytest.mark.parametrize(
    ("name", "content", "category"),
    [
        ("review-summary.md", "architecture overview", "reviews"),
        ("build-log.md", "conventions and patterns", "build-reports"),
        ("generic.md", "the data flow through the system", "architecture"),
        ("notes.md", "how it works end to end", "architecture"),
        ("notes.md", "rule: always validate inputs", "conventions"),
        ("notes.md", "never use var in strict mode", "conventions"),
        ("x.md", "Status update\nAll items complete for plan X. Nothing special.", "project-notes"),
        ("a-feedback.md", "", "reviews"),
        ("a-pr-3.md", "", "reviews"),
        ("bt-2026-04-21-build.md", "", "build-reports"),
        ("x.md", "the Linter complains", "build-reports"),
        ("x.md", "Build passed after retry", "build-reports"),
        ("x.md", None, "project-notes"),
    ],
)
def test_classify(name, content, category):
    assert classify(name, content) == category
    assert category in CATEGORIES


def test_entry_name_from_heading():
    content = "# Review findings\n- nit: naming"
    assert entry_name(D, "ripley", "ripley-review-feedback.md", content) == (
        f"{D}-ripley-review-findings.md"
    )


def test_entry_name_without_heading_uses_title_then_first_sentence():
    assert entry_name(D, "dallas", "dallas-b.md", "no heading") == f"{D}-dallas-no-heading.md"
    assert entry_name(D, "alice", "alice-release-freeze.md",
                      "---\ntitle: Release freeze\n---\nNo merges.\n") == (
        f"{D}-alice-release-freeze.md")
    assert entry_name(D, "unknown", ".hidden.md", None) == f"{D}-unknown-hidden.md"


def test_entry_name_never_repeats_author_date_or_tag():
    # Only the file name is left to name the entry: its author, tag and date are not repeated.
    name = "dallas-npm-ci-fails-4477d56a-2026-12-01.md"
    assert entry_name(D, "dallas", name, "") == f"{D}-dallas-npm-ci-fails.md"
    assert entry_name(D, "alice", "alice-release-freeze.md", "") == f"{D}-alice-release-freeze.md"
    assert entry_name(D, "alice", "alice.md", "") == f"{D}-alice-alice.md"  # nothing else left
    assert entry_name(D, "ripley", "ripley-review-pr-7.md", "") == f"{D}-ripley-review-pr-7.md"


def test_title_slug_is_cut_and_never_empty():
    assert len(title_slug("x.md", "# " + "word " * 30)) <= 50
    assert title_slug("x-1.md", "# 日本語") == "x-1"
    fallback = title_slug("日本.md", "# 語")
    assert fallback.startswith("note-") and len(fallback) == len("note-") + 8


def test_author_is_made_file_name_safe():
    name = entry_name(D, "../../etc", "x.md", "# T")
    assert "/" not in name
    assert name.startswith(f"{D}-etc-")
    assert name.endswith("-t.md")


def test_render_entry_without_front_matter():
    body = "# Review findings\n- nit: naming"
    text = render_entry(
        body, source="ripley-review-feedback.md", agent="ripley", category="reviews", date=D
    )
    assert text == (
        "---\nsource: ripley-review-feedback.md\nagent: ripley\ncategory: reviews\n"
        f"date: {D}\n---\n\n{body}"
    )
    assert text.endswith(body)


def test_render_entry_merges_one_block():
    note = "---\nid: NOTE-1\nagent: dallas\ndate: 2026-05-01\ntitle: 'A: B'\n---\n\n# Body\ntext\n"
    text = render_entry(note, source="dallas-x.md", agent="dallas", category="conventions", date=D)
    assert text.count("---\n") == 2
    meta, body = parse_note(text)
    assert meta == {
        "source": "dallas-x.md",
        "agent": "dallas",
        "category": "conventions",
        "date": D,
        "id": "NOTE-1",
        "note_date": "2026-05-01",
        "title": "A: B",
    }
    assert body == "# Body\ntext\n"


def test_render_entry_extra_keys():
    text = render_entry(
        "# T", source="s.md", agent="a", category="reviews", date=D, extra={"record": "M-1"}
    )
    assert parse_note(text)[0]["record"] == "M-1"


def test_render_entry_rejects_broken_front_matter():
    with pytest.raises(FrontMatterError):
        render_entry("---\n[x\n---\n", source="s", agent="a", category="reviews", date=D)


def test_unique_path_suffixes():
    taken = {os.path.join("kb", "a.md"), os.path.join("kb", "a-2.md")}
    assert unique_path("kb", "a.md", taken.__contains__) == os.path.join("kb", "a-3.md")
    assert unique_path("kb", "b.md", taken.__contains__) == os.path.join("kb", "b.md")


def test_unique_path_goes_past_99():
    taken = {os.path.join("d", "x.md")} | {os.path.join("d", f"x-{i}.md") for i in range(2, 100)}
    assert unique_path("d", "x.md", taken.__contains__) == os.path.join("d", "x-100.md")


def test_archive_name_and_collision():
    name = archive_name(D, "one.md")
    assert name == f"{D}-one.md"
    assert archive_name(D, f"root-vpn-{D}.md") == f"{D}-root-vpn.md"
    assert archive_name(D, f"root-vpn-{D}-2.md") == f"{D}-root-vpn-2.md"
    assert archive_name(D, "root-vpn-2026-01-02.md") == f"{D}-root-vpn-2026-01-02.md"
    taken = {os.path.join("archive", name)}
    assert unique_path("archive", name, taken.__contains__) == os.path.join(
        "archive", f"{D}-one-2.md"
    )


@given(st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="/\0."),
               min_size=1, max_size=260).filter(lambda s: len(s.encode()) <= 252),
       st.integers(min_value=0, max_value=12))
def test_archive_names_and_their_numbered_forms_fit_a_file_name(stem, taken):
    """Inbox names go up to 255 bytes; the dated archive name and -2, -3, ... still fit."""
    name = classify_mod.archive_name("2026-05-01", stem + ".md")
    assert name.startswith("2026-05-01-") and name.endswith(".md")
    assert len(name.encode()) <= 255
    seen = {f"notes/archive/{name}"}
    for _ in range(taken):
        seen.add(classify_mod.unique_path("notes/archive", name, seen.__contains__))
    assert len(seen) == taken + 1
    assert all(len(p.rsplit("/", 1)[1].encode()) <= 255 for p in seen)


@pytest.mark.parametrize("name, expected", [
    ("dallas-AKIAQ7ZK4NDP2XWM8R5T-keys.md", "dallas-redacted-aws_access_key_id-keys.md"),
    ("dallas-ghp_R8fKq2ZtLw91XbNc4VyH7eJm3UaP0sDgQ6iT.md", "dallas-redacted-github_token.md"),
    ("AKIAQ7ZK4NDP2XWM8R5T.md", "redacted-aws_access_key_id.md"),
    ("dallas-fix-the-deploy-script-2026-12-04.md", "dallas-fix-the-deploy-script-2026-12-04.md"),
])
def test_a_token_anywhere_between_dashes_leaves_a_name(name, expected):
    assert redacted_name(name) == expected
