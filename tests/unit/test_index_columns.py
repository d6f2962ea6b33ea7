"""The derived index columns are computed faster but must not change: term_counts (built by
SQLite in one statement) against a row-by-row reference, and search_aux (which skips plain
tokens and texts without phrasal verbs) against the straightforward rule it implements."""

from __future__ import annotations

import sqlite3
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from minionsd.storage import fts
from minionsd.text import ftsquery
from minionsd.text.textcut import scrub_surrogates

WORDS = ["TokenRefresher", "token_refresher", "token-refresher", "HTTPServer", "timed out",
         "set up", "Setting   up", "rolled back", "fell back", "log in", "logs out", "x2Y",
         "été", "ÉCOLE", "naïve", "straße", "İstanbul", "ß", "ﬁle", "a_b_c_d_e_f_g_h_i_j",
         "src/auth/token_refresh.py", "v1.2.3", "ERR_AUTH_CORRUPT", "cache", "the", "π",
         "_lead", "trail_", "--flag", "mixedCASEWord", "ABC123def", "é\u0301", "\u212a"]
TEXT = st.lists(st.one_of(st.sampled_from(WORDS), st.text(max_size=12)), max_size=25).map(
    lambda parts: " ".join(parts))


def reference_counts(conn: sqlite3.Connection, title: str, body: str, aux: str) -> str:
    """term_counts the long way: FTS5's per-column counts read row by row, summed in Python."""
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.ref USING "
                 f"fts5(title, body, aux, tokenize='{fts.TOKENIZER}')")
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.ref_col USING "
                 "fts5vocab(temp, ref, 'col')")
    conn.execute("DELETE FROM temp.ref")
    conn.execute("INSERT INTO temp.ref (rowid, title, body, aux) VALUES (1, ?, ?, ?)",
                 tuple(scrub_surrogates(t) for t in (title, body, aux)))
    weight = dict(zip(("title", "body", "aux"), fts.BM25_WEIGHTS, strict=True))
    weighted: dict[str, float] = {}
    length = 0
    for term, col, cnt in conn.execute("SELECT CAST(term AS BLOB), col, cnt FROM temp.ref_col"):
        stem = term.decode("utf-8", "replace")
        weighted[stem] = weighted.get(stem, 0.0) + cnt * weight[col]
        length += cnt
    lines = [f"2 {length} 1"] + [f"{s} {int(f) if f == int(f) else f!r}"
                                 for s, f in weighted.items()]
    return "\n".join(lines) + "\n"


@settings(max_examples=150, deadline=None)
@given(title=TEXT, body=TEXT, aux=TEXT)
def test_term_counts_match_the_row_by_row_reference(title, body, aux):
    scratch = sqlite3.connect(":memory:", isolation_level=None)
    checker = sqlite3.connect(":memory:", isolation_level=None)
    try:
        assert fts.term_counts(scratch, title, body, aux) == \
            reference_counts(checker, title, body, aux)
        # The scratch table is empty again: a second record is counted on its own.
        assert fts.term_counts(scratch, "", body, "") == reference_counts(checker, "", body, "")
    finally:
        scratch.close()
        checker.close()


def test_term_counts_of_empty_text():
    conn = sqlite3.connect(":memory:")
    try:
        assert fts.term_counts(conn, "", "", "") == "2 0 1\n"
    finally:
        conn.close()


def reference_aux(title: str, body: str, paths: list[str], tags: list[str]) -> str:
    """search_aux by its definition: every code term and phrase form of every source that is
    not one of their plain tokens, first seen first, bounded as index_aux_text bounds it."""
    paths = [p[:300] for p in paths[:50]]
    tags = [t[:300] for t in tags[:50]]
    sources = [*paths, *tags, title, body]
    plain = {t.lower() for s in sources
             for t in ftsquery._TOKEN_RE.findall(unicodedata.normalize("NFC", s))}
    extra: dict[str, None] = {}
    for source in sources:
        phrases = [word for pattern, word in ftsquery._PHRASES if pattern.search(source)]
        for term in (*ftsquery.code_terms(source), *phrases):
            if term not in plain and len(term) <= ftsquery.MAX_TERM_CHARS:
                extra.setdefault(term)
        if len(extra) >= 300:
            break
    words = list(extra)[:300]
    return "\n".join(p for p in (" ".join(paths), " ".join(tags), " ".join(words)) if p)


@settings(max_examples=300, deadline=None)
@given(title=TEXT, body=TEXT, paths=st.lists(TEXT, max_size=3), tags=st.lists(TEXT, max_size=3))
def test_search_aux_matches_its_definition(title, body, paths, tags):
    assert ftsquery.index_aux_text(title, body, paths, tags) == \
        reference_aux(title, body, paths, tags)


# Code-like text: words glued by '_', '-', '/', '.' or nothing, so compounds start and end
# everywhere (the fast path picks compounds with one regular expression).
GLUE = st.sampled_from(["", "_", "-", "__", "-_", " ", "/", ".", "\n", "é", "_ "])
CODE_TEXT = st.lists(st.tuples(st.one_of(st.sampled_from(WORDS), st.text(max_size=6),
                                         st.from_regex(r"[A-Za-z0-9]{1,8}", fullmatch=True)),
                               GLUE), max_size=30).map(
    lambda parts: "".join(word + glue for word, glue in parts))


@settings(max_examples=500, deadline=None)
@given(title=CODE_TEXT, body=CODE_TEXT, paths=st.lists(CODE_TEXT, max_size=2))
def test_search_aux_of_glued_identifiers_matches_its_definition(title, body, paths):
    assert ftsquery.index_aux_text(title, body, paths, []) == \
        reference_aux(title, body, paths, [])


@settings(max_examples=300, deadline=None)
@given(text=TEXT)
def test_the_phrase_prefilter_never_hides_a_phrase(text):
    expected = [word for pattern, word in ftsquery._PHRASES if pattern.search(text)]
    assert ftsquery.phrase_forms(text) == expected


PHRASE_WORDS = ["time", "timed", "timing out", "set", "sets", "setting", "up", "out", "in",
                "back", "off", "roll", "rolled back off", "fall", "fell", "log", "logging",
                "sign", "start", "look", "clean", "shut", "down", "Timed", "OUT",
                "\u017fet", "\u212aeep"]
PHRASE_TEXT = st.lists(st.tuples(st.sampled_from(PHRASE_WORDS),
                                 st.sampled_from([" ", "  ", "\t", "_", "-", "", ".", "\n"])),
                       max_size=12).map(lambda parts: "".join(w + g for w, g in parts))


@settings(max_examples=500, deadline=None)
@given(text=st.one_of(PHRASE_TEXT, CODE_TEXT))
def test_phrase_forms_of_dense_phrases_match_their_definition(text):
    """Overlapping candidates ("rolled back off" holds two phrases) are all found."""
    expected = [word for pattern, word in ftsquery._PHRASES if pattern.search(text)]
    assert ftsquery.phrase_forms(text) == expected



def test_phrase_forms_see_letters_that_fold_to_ascii():
    """Under IGNORECASE a long s matches 's': the prefilter must not hide that phrase."""
    text = "we \u017fet up the cache"
    assert ftsquery.phrase_forms(text) == ["setup"]
    assert "setup" in ftsquery.index_aux_text("", text, [], [])
