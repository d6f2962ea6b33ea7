"""The deterministic digest, exact output (ORIGINAL §3.4, §9.5 scenarios 41-51)."""

from __future__ import annotations

import pytest

from minionsd.consolidate.regex_digest import (
    digest_category,
    fingerprint,
    note_insights,
    regex_digest,
)
from minionsd.consolidate.types import DigestNote, utf16_cut, utf16_len

D = "2026-05-07"
HEAD = "**By:** Engine (regex fallback)\n\n"


def note(name: str, content: str, author: str | None = None) -> DigestNote:
    return DigestNote(name=name, author=author or name.split("-")[0], content=content)


def test_review_note_exact_output():
    text = (
        "# Review\n1. **Lock scope** -- Always keep shared JSON read and write inside one "
        "file lock for dispatch safety."
    )
    digest = regex_digest([note("ripley-review-pr-7.md", text)], D)
    assert digest == (
        f"### {D}: Ripley: PR reviews (1 insights from 1 notes)\n"
        + HEAD
        + "#### PR Review Findings (1)\n"
        "- **Lock scope**: Always keep shared JSON read and write inside one file lock for "
        "dispatch safety. _(ripley)_\n"
        "\n"
    )


@pytest.mark.parametrize(
    ("name", "content", "category"),
    [
        ("a-review.md", "bug", "reviews"),
        ("a-pr-1.md", "", "reviews"),
        ("a-pr412.md", "", "reviews"),
        ("a-feedback.md", "bug", "feedback"),
        ("a-build.md", "fix", "build-results"),
        ("a-bt-12.md", "", "build-results"),
        ("a-explore-x.md", "bug", "exploration"),
        ("a-x.md", "Found a BUG here", "bugs-fixes"),
        ("a-x.md", "prefix", "bugs-fixes"),  # substring match, as in the original
        ("a-x.md", "plain", "learnings"),
    ],
)
def test_digest_category(name, content, category):
    assert digest_category(name, content) == category


def test_labels_and_counts_per_category():
    notes = [
        note("a-feedback.md", "- **Naming**: rename the helper to something clearer"),
        note("b-build.md", "- **CI**: build passes on main after the cache fix"),
        note("c-explore.md", "- **Layout**: the engine folder holds the tick loop code"),
        note("d-x.md", "- **Crash**: the bug appears when the queue file is empty"),
        note("e-x.md", "- **Style**: prefer small modules with one clear owner"),
    ]
    digest = regex_digest(notes, D)
    assert digest.startswith(
        f"### {D}: A, B, C, D, E: review feedback, build/test results, codebase exploration, "
        "bug findings, learnings (5 insights from 5 notes)\n"
    )
    for label in (
        "Review Feedback",
        "Build & Test Results",
        "Codebase Exploration",
        "Bugs & Gotchas",
        "Patterns & Conventions",
    ):
        assert f"#### {label} (1)\n" in digest
    assert "_Deduplication" not in digest


def test_merged_authors_and_existing_notes_dedup():
    insight = "1. **Shared lock** -- Always hold the dispatch lock while merging pull requests."
    existing = "Existing token skip should already be present and therefore omitted.\n"
    notes = [
        note("dallas-pr-merge.md", f"# Merge\n{insight}\n"),
        note("ralph-pr-merge.md", f"# Merge\n{insight}\n"),
        note(
            "lambert-tokens.md",
            "1. **Existing token skip** -- Existing token skip should already be present "
            "and therefore omitted.",
        ),
    ]
    digest = regex_digest(notes, D, existing_notes=existing)
    assert digest == (
        f"### {D}: Dallas, Ralph, Lambert: PR reviews (1 insights from 3 notes)\n"
        + HEAD
        + "#### PR Review Findings (1)\n"
        "- **Shared lock**: Always hold the dispatch lock while merging pull requests. "
        "_(dallas, ralph)_\n"
        "\n"
        "_Deduplication: 2 duplicate(s) removed._\n"
    )
    assert "**Existing token skip**" not in digest


def test_long_insight_is_capped():
    digest = regex_digest([note("a-x.md", "# Long\n1. **Long insight** -- " + "x" * 340)], D)
    assert "- **Long insight**: " + "x" * 279 + "... _(a)_\n" in digest


def test_cap_counts_utf16_and_keeps_pairs_whole():
    line = "- **K**: " + "\U0001f916" * 200  # 9 + 400 code units
    (insight,) = note_insights(note("a-x.md", line))
    assert insight.endswith("...")
    assert utf16_len(insight) <= 300
    assert "\ud83e" not in insight


def test_pointer_when_no_insight():
    digest = regex_digest([note("a-x.md", "# Plain note\nshort line\nanother short line")], D)
    assert "- See full note: Plain note _(a)_\n" in digest
    digest = regex_digest([note("a-y.md", "short line")], D)
    assert "- See full note: a-y.md _(a)_\n" in digest


def test_keyword_line_bounds_and_headings():
    content = "\n".join(
        [
            "must do x",  # too short
            "You must always run the formatter before pushing.",  # 48 chars
            "# Always use the important pattern in headings here",
            "### Always skipped as a section heading line",
            "## Never an insight because it starts with a hash",
            "Mustard is tasty but this line has no keyword at all.",
        ]
    )
    assert note_insights(note("a-x.md", content)) == [
        "You must always run the formatter before pushing."
    ]


def test_keyword_line_upper_bound():
    long_line = "always " + "y" * 493  # 500 chars: not < 500
    assert note_insights(note("a-x.md", long_line)) == []
    assert note_insights(note("a-x.md", long_line[:-1])) == [long_line[:297] + "..."]


def test_near_duplicates_collapse():
    notes = [
        note(
            f"n{i}-x.md",
            f"- **Key {i} thing**: Always do thing number {i} carefully because reasons {i}.",
        )
        for i in range(5)
    ]
    digest = regex_digest(notes, D)
    assert digest.count("\n- ") == 1
    assert "- **Key 0 thing**: Always do thing number 0 carefully because reasons 0. " in digest
    assert "_(n0, n1, n2, n3, n4)_" in digest
    assert "_Deduplication: 4 duplicate(s) removed._" in digest


def test_zero_kept_insights_title():
    existing = "Retry: the dispatch queue retries failed webhooks twice"
    content = "- **Retry**: the dispatch queue retries failed webhooks twice"
    digest = regex_digest([note("dallas-x.md", content)], D, existing_notes=existing)
    assert digest == (
        f"### {D}: Dallas:  (0 insights from 1 notes)\n"
        + HEAD
        + "_Deduplication: 1 duplicate(s) removed._\n"
    )


def test_dash_key_quirk():
    (insight,) = note_insights(note("a-x.md", "- **Dash key** - text after the dash"))
    assert insight == "**Dash key**: - text after the dash"


def test_numbered_separators():
    lines = ["1. **A** \u2014 em dash", "2. **B** \u2013 en dash", "3. **C**: colon"]
    lines.append("4. **D** - x")
    assert note_insights(note("a-x.md", "\n".join(lines))) == [
        "**A**: em dash",
        "**B**: en dash",
        "**C**: colon",
        "**D**: x",
    ]


def test_authors_in_file_order_capitalised_and_unknown():
    notes = [note("x.md", "a", author="unknown"), note("r-1.md", "b"), note("r-2.md", "c")]
    assert regex_digest(notes, D).startswith(f"### {D}: Unknown, R: learnings ")


def test_crlf_lines_are_trimmed():
    assert note_insights(note("a-x.md", "- **K**: value\r\n")) == ["**K**: value"]


def test_fingerprint():
    assert fingerprint("**Port** 8080:\tUse   Ünïcode!") == "port 8080use ncode"
    assert len(fingerprint("word " * 40)) == 80


def test_utf16_helpers():
    assert utf16_len("a\U0001f916") == 3
    assert utf16_cut("a\U0001f916b", 2) == "a"
    assert utf16_cut("a\U0001f916b", 3) == "a\U0001f916"
    assert utf16_cut("abc", 10) == "abc"
