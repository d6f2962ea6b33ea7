"""The regex digest merges two notes' lines only when they say the same thing (SPEC §3.1.2):
lines that differ in one ordinary word ("staging" / "production") stay two lines, each with
its own title, gist and author; rewordings in filler words still merge."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from minionsd.memory.consolidate.regex_digest import FILLER_WORDS, regex_digest, same_words
from minionsd.memory.consolidate.types import DigestNote

D = "2026-05-07"


def note(author: str, title: str, body: str) -> DigestNote:
    return DigestNote(name=f"{author}-x.md", author=author,
                      content=f"---\ntitle: {title}\n---\n{body}\n", kb_path=f"k/{author}.md")


def mains(digest: str) -> list[str]:
    return [line for line in digest.splitlines() if line.startswith("- ")]


def test_one_different_word_keeps_both_notes_lines():
    notes = [
        note("ripley", "Staging migrations: disable the cache first",
             "Before running migrations on staging, disable the cache layer first."),
        note("dallas", "Production migrations: disable the cache first",
             "Before running migrations on production, disable the cache layer first."),
    ]
    digest = regex_digest(notes, D)
    lines = mains(digest)
    assert len(lines) == 2 and "Deduplication" not in digest
    assert lines[0].startswith("- **Staging migrations") and "_(ripley)_" in lines[0]
    assert lines[1].startswith("- **Production migrations") and "_(dallas)_" in lines[1]
    assert "on production" in lines[1]


def test_a_same_title_with_a_different_late_gist_stays_apart():
    """The 80-character fingerprint does not decide: the words after it count too."""
    title = "A long shared title that fills the whole fingerprint of the digest line easily"
    digest = regex_digest([note("a", title, "Use the blue runner."),
                           note("b", title, "Use the green runner.")], D)
    assert len(mains(digest)) == 2


def test_negations_and_prepositions_are_never_filler():
    pairs = [("The cache must be flushed after a migration.",
              "The cache must not be flushed after a migration."),
             ("Flush the cache before the migration.", "Flush the cache after the migration."),
             ("Turn the flag on for the canary.", "Turn the flag off for the canary.")]
    for one, other in pairs:
        digest = regex_digest([note("a", "Cache", one), note("b", "Cache", other)], D)
        assert len(mains(digest)) == 2, (one, other)


def test_filler_rewordings_and_punctuation_still_merge():
    digest = regex_digest([
        note("a", "Cache", "The user cache must be flushed after every schema migration."),
        note("b", "Cache", "User cache must be flushed after each schema migration!"),
    ], D)
    (line,) = mains(digest)
    assert "_(a, b)_" in line and "[KB entry](k/a.md) [KB entry](k/b.md)" in line
    assert "_Deduplication: 1 duplicate(s) removed._" in digest


def test_same_words_keeps_order_and_drops_filler_only():
    assert same_words("**Flush** the cache: before EVERY migration.") == \
        ("flush", "cache", "before", "migration")
    assert same_words("The it is") == ("the", "it", "is")  # all filler: all its words


_WORDS = st.sampled_from(["staging", "production", "cache", "flush", "the", "every", "each",
                          "not", "before", "after", "runner", "blue", "green", "a", "is"])


@settings(max_examples=300, deadline=None)
@given(st.lists(_WORDS, min_size=1, max_size=8), st.lists(_WORDS, min_size=1, max_size=8))
def test_two_lines_merge_only_when_their_non_filler_words_match(one, other):
    digest = regex_digest([note("a", "T", " ".join(one)), note("b", "T", " ".join(other))], D)
    merged = len(mains(digest)) == 1

    def said(words: list[str]) -> list[str]:
        return [w for w in ["t", *words] if w not in FILLER_WORDS]

    assert merged == (said(one) == said(other))
