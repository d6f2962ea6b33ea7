"""The digest's and notebooks' shortcuts agree with the plain code they replace:
gist.distinct_tokens (lower-case words skipped, a digit found without a step per character, a
kept token not checked again, no backtick count in a line without backticks),
gist.find_title_and_gist (only the first sentences are cut), regex_digest.fingerprint (ASCII
text cut by str.translate) and notebooks.entry_ids (the marker's text searched, then kept at
line starts)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from minionsd.memory.consolidate import gist, notebooks, regex_digest


def reference(text: str) -> frozenset[str]:
    found = set()
    for token in gist._TOKEN_RE.findall(text):
        token = token.strip("`").rstrip(".,;:!?)")
        if not token:
            continue
        if any(c.isdigit() for c in token) or gist._IDENT_INNER_RE.search(token) \
                or text.count(f"`{token}`"):
            found.add(token.lower())
    return frozenset(found)


# Letters, digits of every kind (Arabic-Indic, superscripts, fullwidth), the characters
# tokens and identifiers are made of, and backticks.
_PIECES = st.sampled_from([
    "port", "8080", "Port", "PORT", "test-m13", "setup_8", "src/app.py", "UserCache", "x",
    "`", "`code`", "`a b`", " ", "\n", ".", ",", ")", "²", "٣", "\uff18", "Ⅻ", "ǅ", "İ", "ß",
    "é", "v1.2", "a@b", "#12", "=", "+", "::", "ΣΑΣ", "ﬁ",
])


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.lists(_PIECES, max_size=30).map("".join),
                 st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)),
                         max_size=60)))
def test_distinct_tokens_matches_the_plain_rule(text):
    assert gist.distinct_tokens(text) == reference(text)


def test_the_usual_cases():
    assert gist.distinct_tokens("port 8080 on `cache` for UserCache in src/app.py") == \
        {"8080", "cache", "usercache", "src/app.py"}
    assert gist.distinct_tokens("release freeze on friday") == frozenset()
    assert gist.distinct_tokens("level ² and ٣ and Ⅻ") == reference("level ² and ٣ and Ⅻ")


def reference_title_and_gist(content: str) -> tuple[str, str]:
    note = gist.split(content)
    title = note.meta.get("title")
    title = gist._clean(title) if isinstance(title, str) and title.strip() else None
    title = title or gist.first_heading_any(note.body)
    lines = gist.content_lines(note.body)
    if title is None and lines:
        opening = gist._CHECKBOX_RE.sub("", gist._MARKER_RE.sub("", lines[0]))
        match = gist._BOLD_KEY_RE.match(opening)
        if match and opening[match.end():].strip():
            title = gist._clean(match.group(1))
            lines[0] = opening[match.end():]
    pieces = [s for line in lines for s in gist.sentences(gist.plain(line))]
    if title is None:
        if not pieces:
            return gist.UNTITLED, ""
        title = pieces.pop(0).rstrip(".") or gist.UNTITLED
    found = next((p for p in pieces if not gist._same(p, title)), "")
    return gist._cap(title, gist.TITLE_MAX), gist._cap(found, gist.GIST_MAX)


_LINES = st.sampled_from([
    "---", "title: Cache rules", "title: ''", "agent: dallas", "# Heading", "## Sub", "",
    "- **Key**: the value. Second sentence.", "- **Key**:", "* [x] done it. Then more!",
    "Plain sentence one. Plain sentence two? Yes.", "...", ".", "```", "code. Not prose.",
    "| a | b |", "|---|---|", "<!-- note -->", "> quoted. Text", "1. First. Second",
    "Same", "same.", "Same!", "e.g. this stays. Next One", "v1.2 is out. Then 2.0 came",
])


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.lists(_LINES, max_size=14).map("\n".join),
                 st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)),
                         max_size=120)))
def test_title_and_gist_match_the_eager_cut(content):
    assert gist.find_title_and_gist(content) == reference_title_and_gist(content)


def reference_fingerprint(text: str) -> str:
    kept = re.sub(r"[^a-z0-9 ]", "", text.lower())
    return re.sub(r" +", " ", kept).strip()[:regex_digest.FINGERPRINT_LEN]


_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=120)


@settings(max_examples=500, deadline=None)
@given(st.one_of(_TEXT, st.lists(_PIECES, max_size=40).map(" ".join),
                 st.text(st.sampled_from("aZ9 _-.!\tİ"), max_size=120)))
def test_fingerprint_matches_the_plain_rule(text):
    assert regex_digest.fingerprint(text) == reference_fingerprint(text)


_NOTEBOOK_PIECES = st.sampled_from([
    "<!-- minions:entry=a1 -->", "<!-- minions:entry=b.2:x-y -->", "<!-- minions:entry=-x -->",
    "<!-- minions:entry= -->", "<!-- minions:entry=c3 --> ", " <!-- minions:entry=d4 -->",
    "\n", "\n", "text", "### 2026-12-04: Title", "\r\n", "<!-- minions:entry=e5 -->x",
])


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.lists(_NOTEBOOK_PIECES, max_size=20).map("".join), _TEXT))
def test_entry_ids_match_the_line_rule(text):
    assert notebooks.entry_ids(text) == {m.group(1) for m in notebooks._ENTRY_RE.finditer(text)}
