"""The deterministic digest, exact output: the original's shape (ORIGINAL §3.4, §9.5) with
SPEC §3.1 v2's title, gist, link and distinct-facts rules."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minionsd.memory.consolidate.regex_digest import (
    digest_category,
    fingerprint,
    note_insights,
    regex_digest,
)
from minionsd.memory.consolidate.types import DigestNote, utf16_cut, utf16_len

D = "2026-05-07"
HEAD = "**By:** Engine (regex fallback)\n\n"


def note(name: str, content: str, author: str | None = None,
         kb: str | None = None) -> DigestNote:
    return DigestNote(name=name, author=author or name.split("-")[0], content=content,
                      kb_path=kb)


def test_review_note_exact_output():
    text = (
        "# Review\n1. **Lock scope** -- Always keep shared JSON read and write inside one "
        "file lock for dispatch safety."
    )
    kb = "knowledge/reviews/2026-05-07-ripley-review.md"
    digest = regex_digest([note("ripley-review-pr-7.md", text, kb=kb)], D)
    assert digest == (
        f"### {D}: Ripley: PR reviews (1 insights from 1 notes)\n"
        + HEAD
        + "#### PR Review Findings (1)\n"
        "- **Review**: Lock scope: Always keep shared JSON read and write inside one file lock "
        f"for dispatch safety. _(ripley)_ \u2192 [KB entry]({kb})\n"
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
        ("a-x.md", "prefix and debugging words", "learnings"),  # words, not substrings
        ("a-x.md", "---\ntitle: Release freeze\n---\nOnly fixes go in.", "process"),
        ("a-x.md", "# Staging DB weekly reset\nDon't debug there on Mondays.", "process"),
        ("a-x.md", "# Release build crashes\nSee the log.", "bugs-fixes"),
        ("a-x.md", "---\ntitle: fix everything\n---\nplain", "bugs-fixes"),
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
        note("dallas-pr-merge.md", f"# Merge\n{insight}\n", kb="k/d.md"),
        note("ralph-pr-merge.md", f"# Merge\n{insight}\n", kb="k/r.md"),
        note(
            "lambert-tokens.md",
            "# Tokens\nTokens are skipped when known.\n"
            "1. **Existing token skip** -- Existing token skip should already be present "
            "and therefore omitted.", kb="k/l.md",
        ),
    ]
    digest = regex_digest(notes, D, existing_notes=existing)
    assert digest == (
        f"### {D}: Dallas, Ralph, Lambert: PR reviews, learnings (2 insights from 3 notes)\n"
        + HEAD
        + "#### PR Review Findings (1)\n"
        "- **Merge**: Shared lock: Always hold the dispatch lock while merging pull requests. "
        "_(dallas, ralph)_ \u2192 [KB entry](k/d.md) [KB entry](k/r.md)\n"
        "\n"
        "#### Patterns & Conventions (1)\n"
        "- **Tokens**: Tokens are skipped when known. _(lambert)_ \u2192 [KB entry](k/l.md)\n"
        "\n"
        "_Deduplication: 2 duplicate(s) removed._\n"
    )
    assert "**Existing token skip**" not in digest


def test_long_insight_is_capped():
    content = "# Long\nFirst.\n1. **Long insight** -- " + "x" * 340
    digest = regex_digest([note("a-x.md", content)], D)
    assert "  - **Long insight**: " + "x" * 279 + "...\n" in digest


def test_cap_counts_utf16_and_keeps_pairs_whole():
    line = "- **K**: " + "\U0001f916" * 200  # 9 + 400 code units
    (insight,) = note_insights(note("a-x.md", line))
    assert insight.endswith("...")
    assert utf16_len(insight) <= 300
    assert "\ud83e" not in insight


def test_every_note_has_a_title_line_never_its_file_name():
    digest = regex_digest([note("a-x.md", "# Plain note\nshort line\nanother short line")], D)
    assert "- **Plain note**: short line _(a)_\n" in digest
    digest = regex_digest([note("a-y.md", "A first sentence. And the gist.\nmore")], D)
    assert "- **A first sentence**: And the gist. _(a)_\n" in digest
    digest = regex_digest([note("a-z.md", "---\ntitle: From front matter\n---\n\nBody.\n")], D)
    assert "- **From front matter**: Body. _(a)_\n" in digest
    digest = regex_digest([note("a-w.md", "---\ntitle: Only a title\n---\n")], D)
    assert "- **Only a title** _(a)_\n" in digest
    assert "a-x.md" not in digest and "a-y" not in digest


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


def test_near_duplicates_collapse_only_when_numbers_match():
    notes = [
        note(
            f"n{i}-x.md",
            f"- **Key {i % 2} thing**: Always do thing number {i % 2} carefully because "
            f"reasons {i % 2}.",
        )
        for i in range(5)
    ]
    digest = regex_digest(notes, D)
    assert digest.count("\n- ") == 2
    assert "- **Key 0 thing**: Always do thing number 0 carefully because reasons 0. " \
        "_(n0, n2, n4)_" in digest
    assert "_(n1, n3)_" in digest
    assert "_Deduplication: 3 duplicate(s) removed._" in digest


def test_reworded_duplicates_still_merge():
    a = note("a-x.md", "# Cache\nThe user cache must be flushed after every schema migration.")
    b = note("b-x.md", "# Cache\nThe user cache must be flushed after each schema migration.")
    digest = regex_digest([a, b], D)
    assert digest.count("\n- ") == 1 and "_(a, b)_" in digest


@given(st.integers(0, 10_000), st.integers(0, 10_000),
       st.sampled_from(["test-m{}", "setup_{}", "src/mod{}.py", "port {}", "v{}.0"]))
def test_lines_differing_in_a_number_identifier_or_path_never_merge(x, y, shape):
    if x == y:
        return
    texts = [f"# Shard order\nThe runner must start {shape.format(n)} before the others."
             for n in (x, y)]
    digest = regex_digest([note("a-x.md", texts[0]), note("b-x.md", texts[1])], D)
    assert digest.count("\n- ") == 2
    assert shape.format(x) in digest and shape.format(y) in digest
    assert "Deduplication" not in digest


def test_a_note_already_in_notes_md_still_gets_its_line():
    existing = "Retry: the dispatch queue retries failed webhooks twice"
    content = "# Retry\nWebhooks.\n- **Retry**: the dispatch queue retries failed webhooks twice"
    digest = regex_digest([note("dallas-x.md", content)], D, existing_notes=existing)
    assert digest == (
        f"### {D}: Dallas: bug findings (1 insights from 1 notes)\n"
        + HEAD
        + "#### Bugs & Gotchas (1)\n"
        "- **Retry**: Webhooks. _(dallas)_\n"
        "\n"
        "_Deduplication: 1 duplicate(s) removed._\n"
    )


def test_dash_key_is_cleaned():
    (insight,) = note_insights(note("a-x.md", "- **Dash key** - text after the dash"))
    assert insight == "**Dash key**: text after the dash"


def test_front_matter_is_never_scanned():
    content = ("---\ntitle: Alembic migrations must be reversible\ntags: [always, important]\n"
               "---\n\nEvery migration needs a downgrade step.\n")
    assert note_insights(note("a-x.md", content)) == []
    digest = regex_digest([note("a-x.md", content)], D)
    assert "title:" not in digest and "tags" not in digest
    assert "- **Alembic migrations must be reversible**: Every migration needs a downgrade " \
        "step. _(a)_\n" in digest


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


def test_an_insight_opening_with_the_gist_gives_only_what_follows():
    body = ("Gotcha: token lc0001x must be handled before deploy step 1. "
            "Set RETRY_MAX=3 for the deploy queue.\n")
    out = regex_digest([note("bob-1.md", f"---\ntitle: Lifecycle note\n---\n{body}")], "D")
    assert "- **Lifecycle note**: Gotcha: token lc0001x must be handled before deploy step 1." \
        in out
    assert "\n  - Set RETRY_MAX=3 for the deploy queue." in out
    assert out.count("must be handled before deploy step 1") == 1


def test_an_insight_that_is_only_the_gist_gives_no_sub_bullet():
    out = regex_digest([note("bob-1.md", "---\ntitle: T\n---\n"
                                         "Gotcha: token lc0001x must be handled first. ok\n")], "D")
    assert out.count("lc0001x") == 1
    assert "\n  - " not in out


@settings(max_examples=200, deadline=None)
@given(first=st.text(alphabet="abcdefgh xyz0123", min_size=12, max_size=60).filter(
           lambda t: len(t.split()) >= 3),
       rest=st.lists(st.sampled_from(["Set", "port", "8080", "retry", "x.py", "is", "safe."]),
                     max_size=8))
def test_no_sub_bullet_repeats_its_notes_gist(first, rest):
    body = f"---\ntitle: T\n---\nGotcha: {first.strip()}. {' '.join(rest)}\n"
    out = regex_digest([note("bob-1.md", body)], "D")
    main = next(line for line in out.splitlines() if line.startswith("- "))
    gist_text = main.split(": ", 1)[1].rsplit(" _(", 1)[0]
    assert not any(line.startswith("  - " + gist_text)
                   for line in out.splitlines() if gist_text)
