"""Consolidation's shortcuts agree with the plain code they replace.

* notebooks.append_entries (one scan of the notebook, or none with the ids passed) ==
  append_entry folded over the entries;
* markdown.note_parts (split once, remembered) == parse_note + check_note_types, and callers
  cannot change what the next caller gets;
* the remembered gist.title_and_gist == a fresh computation.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minionsd.memory.consolidate import gist
from minionsd.memory.consolidate.filing import safe_meta
from minionsd.memory.consolidate.notebooks import (
    append_entries,
    append_entry,
    entry_ids,
    render_entry,
)
from minionsd.memory.consolidate.recording import note_body
from minionsd.text.markdown import (
    PARTS_CACHE_MAX_CHARS,
    FrontMatterError,
    check_note_types,
    note_parts,
    parse_note,
)

_IDS = st.sampled_from(["a1", "b2", "c3", "d4", "e5"])
_BODIES = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=80)


def _entry(entry_id: str, body: str) -> str:
    return render_entry(entry_id=entry_id, date="2026-12-04", title=f"Note {entry_id}",
                        body=body, source=f"notes/archive/{entry_id}.md")


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.none(), st.just(""), st.just("  \n"), st.lists(
           st.tuples(_IDS, _BODIES), max_size=4).map(
           lambda rows: append_entries(None, "dallas", [_entry(i, b) for i, b in rows]))),
       st.lists(st.tuples(_IDS, _BODIES), max_size=8))
def test_append_entries_is_append_entry_folded(current, rows):
    entries = [_entry(i, b) for i, b in rows]
    folded = current
    for entry in entries:
        folded = append_entry(folded, "dallas", entry)
    got = append_entries(current, "dallas", entries)
    # The caller that read the notebook's ids already passes them instead of a second scan.
    known = entry_ids(current) if current is not None else set()
    assert append_entries(current, "dallas", entries, known=known) == got
    if entries:
        assert got == folded
    else:
        assert got == (current if current and current.strip() else append_entries(
            None, "dallas", []))


def test_append_entries_refuses_an_entry_without_marker():
    with pytest.raises(ValueError, match="entry marker"):
        append_entries(None, "dallas", ["### no marker\n"])


NOTES = [
    "---\ntitle: Retry storm\ntags: [ci, flaky]\nimportance: 0.9\n---\n\n# Retry\n\nBody.\n",
    "---\ntitle: Fix: colon in title\nproject: web\n---\nBody after a line-read block\n",
    "---\n- a list\n---\nbody\n",  # not a mapping: FrontMatterError
    "---\ntitle: [unclosed\n---\nbody\n",  # not YAML, not key: value lines either
    "---\nimportance: 7\nhold: maybe\ntitle: 12\n---\nwrong types dropped\n",
    "no front matter at all\n",
    "\ufeff---\nauthor: dallas\n---\n\nBOM first\n",
]


@pytest.mark.parametrize("text", NOTES)
def test_note_parts_matches_parse_note(text):
    for _ in range(2):  # first split, then remembered
        parts = note_parts(text)
        try:
            meta, body = parse_note(text)
        except FrontMatterError as exc:
            assert (parts.meta, parts.checked, parts.body, parts.error) == ({}, {}, None,
                                                                             exc.detail)
            continue
        assert parts.error is None
        assert parts.meta == meta and parts.body == body
        assert parts.checked == check_note_types(meta)[0]


def test_callers_get_their_own_mappings():
    text = NOTES[0]
    first = safe_meta(text)
    first["title"] = "changed"
    first["tags"] = []
    assert safe_meta(text)["title"] == "Retry storm"
    split = gist.split(text)
    split.meta["title"] = "changed too"
    assert gist.split(text).meta["title"] == "Retry storm"


def test_a_long_note_is_split_without_the_cache():
    text = "---\ntitle: Long\n---\n\n" + "word " * (PARTS_CACHE_MAX_CHARS // 4)
    assert note_parts(text).checked == {"title": "Long"}
    assert note_body(text) == parse_note(text)[1].strip()


@pytest.mark.parametrize("text", NOTES)
def test_remembered_title_and_gist(text):
    fresh = gist.find_title_and_gist(text)
    assert gist.title_and_gist(text) == fresh
    assert gist.title_and_gist(text) == fresh


# --- render_note's block: written directly where the emitter's output is known -------------

_WORDS = st.sampled_from(["true", "null", "yes", "No", "on", "~", "1234", "0x1f", "1.5", "-3",
                          "2026-12-04", "12:30", ".inf", "dallas", "W-123", "a b", "x: y",
                          "a #b", "- x", "'q'", '"q"', "", " lead", "trail ", "…", "ünï",
                          "notes/archive/x.md", "---", "...", "a\nb", "@x", "%y", "`z`"])
_TEXT = st.one_of(_WORDS, st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)),
                                  max_size=30),
                  st.text(alphabet="abcXYZ019 _./-:#'\"", max_size=20))
_VALUE = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20),
                   st.floats(allow_nan=False), _TEXT, st.lists(_TEXT, max_size=4),
                   st.lists(st.integers(0, 9), max_size=2))
_KEY = st.one_of(st.sampled_from(["source", "agent", "title", "tags", "pr", "yes", "1",
                                  "note_date", "a b", "x:y"]), _TEXT)


@settings(max_examples=500, deadline=None)
@given(st.dictionaries(_KEY, _VALUE, min_size=1, max_size=8))
def test_block_writer_matches_the_emitter(meta):
    from minionsd.text.markdown import _plain_block, dump_block, render_note

    block = _plain_block(meta)
    if block is not None:
        assert block == dump_block(meta)
    assert render_note(meta, "body\n") == f"---\n{dump_block(meta)}---\n\nbody\n"


def test_block_writer_takes_the_usual_entry():
    from minionsd.text.markdown import _plain_block

    meta = {"source": "notes/archive/2026-12-04-dallas-x.md", "agent": "dallas",
            "category": "project-notes", "date": "2026-12-04", "entry_id": "0123abcd",
            "title": "Retry storm: the cache, again", "pr": "1234", "tags": ["ci", "flaky"],
            "importance": 0.9, "hold": False}
    assert _plain_block(meta) is not None


# --- the regex digest's duplicate search: lines compared only with equal-token lines ------

def _dedupe_plain(entries, existing):
    """The duplicate search written plainly: every line against every kept line."""
    from minionsd.memory.consolidate import regex_digest as rd

    def similar(a, b):  # two lines say the same thing (the rule the fast search keys on)
        return rd._same_key(a) == rd._same_key(b)

    existing_lower = existing.lower()
    existing_words = frozenset(rd._ASCII_WORD.findall(existing_lower))
    kept, lines, removed = [], [], 0
    for entry in entries:
        twin = next((k for k in kept if similar(entry.main, k.main)), None)
        if twin is not None:
            rd._credit(twin.main, entry.main)
            removed += 1
        else:
            kept.append(rd._Entry(entry.category, entry.main))
            lines.append(entry.main)
        owner = twin or kept[-1]
        for sub in entry.subs:
            near = next((k for k in lines if similar(sub, k)), None)
            if near is not None:
                rd._credit(near, sub)
                removed += 1
            elif rd._known(sub, existing_lower, existing_words):
                removed += 1
            else:
                owner.subs.append(sub)
                lines.append(sub)
    return kept, removed


_FACTS = st.sampled_from([
    "Always use port 3000 for the dev server", "Always use port 8080 for the dev server",
    "Never use var in strict mode code paths", "The cache in src/app.py must be cleared",
    "The cache in src/app.py must be cleared first", "Retry storm: the build cache leaks",
    "Important: the rule is to pin setup_8 before test-m13", "Tip: run make lint before push",
    "- **Cause**: the build cache leaks on CI runners", "1. **Fix** -- clear the build cache",
    "Note that UserCache must never be shared between workers",
])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["dallas", "alice", "bob"]),
                          st.lists(_FACTS, min_size=1, max_size=5)), min_size=1, max_size=12),
       st.sampled_from(["", "# Team Notes\n\nAlways use port 3000 for the dev server\n"]))
def test_duplicate_search_matches_the_plain_search(notes, existing):
    from minionsd.memory.consolidate import regex_digest as rd
    from minionsd.memory.consolidate.types import DigestNote

    batch = [DigestNote(f"{author}-{i}.md", author, "# " + lines[0] + "\n\n"
                        + "\n".join(lines) + "\n", f"knowledge/x/{i}.md")
             for i, (author, lines) in enumerate(notes)]
    fast = rd.regex_digest(batch, "2026-12-04", existing)
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(rd, "_dedupe", _dedupe_plain)
        plain = rd.regex_digest(batch, "2026-12-04", existing)
    assert fast == plain
