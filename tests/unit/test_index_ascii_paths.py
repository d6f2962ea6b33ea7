"""memory.add's fast paths for pure-ASCII text must store exactly what the general paths store:
term counts built in Python from remembered stems (stem_memo.StemMemo) against FTS5's own counts,
search_aux and its tokens (ftsquery.index_aux_and_tokens) against the definition, and the
phrase table the search_aux prefilter relies on against the phrase patterns themselves."""

from __future__ import annotations

import re
import sqlite3
from itertools import product

from hypothesis import given, settings
from hypothesis import strategies as st

from minionsd.storage import fts, records, stem_memo
from minionsd.text import ftsquery
from tests.unit.test_index_columns import WORDS, reference_aux, reference_counts

ASCII_WORDS = [w for w in WORDS if w.isascii()] + [
    "x" * 70, "Y" * 65 + "z", "a1" * 40, "timed out", "TIMED\tOUT", "backed off", "fell back",
    "log_in", "logged  in", "signing in", "setting up", "__init__", "snake_case_name",
    "kebab-case-name", "-lead", "trail-", "---", "___", "HTTPServer2Go", "x2Y", "Ab", "aB",
    "2024", "v2", "0x1F", "\x00", "a\x00b", "\t", "\n", "caching", "cached", "caches",
    "relational", "generalization", "ponies", "sky", "happily", "running", "ran"]
ASCII_TEXT = st.lists(
    st.tuples(st.one_of(st.sampled_from(ASCII_WORDS),
                        st.text(st.characters(max_codepoint=127), max_size=10)),
              st.sampled_from([" ", "", "_", "-", "/", ".", "\t", "\n", "  "])),
    max_size=30).map(lambda parts: "".join(word + glue for word, glue in parts))


@settings(max_examples=300, deadline=None)
@given(title=ASCII_TEXT, body=ASCII_TEXT, aux=ASCII_TEXT, limit=st.sampled_from([3, 50, 10**6]))
def test_counts_from_remembered_stems_match_fts5(title, body, aux, limit):
    """A small memo is emptied between and within records: the counts stay FTS5's."""
    scratch = sqlite3.connect(":memory:", isolation_level=None)
    checker = sqlite3.connect(":memory:", isolation_level=None)
    memo = stem_memo.StemMemo(limit)
    try:
        expected = reference_counts(checker, title, body, aux)
        assert fts.term_counts(scratch, title, body, aux, memo=memo) == expected
        # Again, with every stem remembered (or the memo emptied meanwhile).
        assert fts.term_counts(scratch, title, body, aux, memo=memo) == expected
        tokens = (stem_memo.ascii_tokens(title), stem_memo.ascii_tokens(body))
        assert fts.term_counts(scratch, title, body, aux, memo=memo, tokens=tokens) == expected
    finally:
        scratch.close()
        checker.close()


@settings(max_examples=150, deadline=None)
@given(title=st.one_of(ASCII_TEXT, st.text(max_size=20)), body=st.text(max_size=40))
def test_text_that_is_not_ascii_is_counted_by_fts5(title, body):
    scratch = sqlite3.connect(":memory:", isolation_level=None)
    checker = sqlite3.connect(":memory:", isolation_level=None)
    try:
        assert fts.term_counts(scratch, title, body, "", memo=stem_memo.StemMemo()) == \
            reference_counts(checker, title, body, "")
    finally:
        scratch.close()
        checker.close()


def test_the_memo_is_bounded_and_long_tokens_are_not_remembered():
    scratch = sqlite3.connect(":memory:", isolation_level=None)
    memo = stem_memo.StemMemo(limit=5)
    try:
        fts.term_counts(scratch, "", "caching " + "q" * 65, "", memo=memo)
        assert len(memo) == 1  # caching; the 65-letter token is asked again next time
        fts.term_counts(scratch, "", "one two three four five six", "", memo=memo)
        assert 0 < len(memo) <= 5
    finally:
        scratch.close()


COMPOUNDS: dict[str, tuple[str, ...]] = {}  # shared by the examples, as by a daemon's records


@settings(max_examples=300, deadline=None)
@given(title=ASCII_TEXT, body=ASCII_TEXT, paths=st.lists(ASCII_TEXT, max_size=3),
       tags=st.lists(ASCII_TEXT, max_size=3))
def test_ascii_search_aux_and_its_tokens_match_their_definition(title, body, paths, tags):
    aux, tokens = ftsquery.index_aux_and_tokens(title, body, paths, tags)
    assert aux == reference_aux(title, body, paths, tags)
    # With the identifiers' terms remembered from earlier examples, and again remembered now.
    for _ in range(2):
        assert ftsquery.index_aux_and_tokens(title, body, paths, tags, COMPOUNDS) == \
            (aux, tokens)
    assert tokens == ([t.lower() for t in ftsquery._TOKEN_RE.findall(title)],
                      [t.lower() for t in ftsquery._TOKEN_RE.findall(body)])


@settings(max_examples=300, deadline=None)
@given(text=ASCII_TEXT)
def test_ascii_compounds_match_the_general_cut(text):
    assert ftsquery._ascii_rich_compounds(text) == ftsquery._rich_compounds(text)


def test_non_ascii_text_gives_no_tokens():
    assert ftsquery.index_aux_and_tokens("caf\u00e9", "body", [], [])[1] is None
    assert ftsquery.index_aux_and_tokens("title", "body", ["p\u00e4th"], [])[1] is None


def _language(pattern: str) -> set[str]:
    """Every string a pattern made of literals, (?:a|b) groups and ? matches (the verb parts
    of ftsquery._PHRASES); raises on anything else, so a new construct is noticed."""
    if not pattern:
        return {""}
    if pattern.startswith("(?:"):
        depth, end = 0, 0
        while end == 0 or depth:
            depth += {"(": 1, ")": -1}.get(pattern[end], 0)
            end += 1
        end -= 1
        inner, rest = pattern[3:end], pattern[end + 1:]
        options = {alt for part in inner.split("|") for alt in _language(part)}
        if rest.startswith("?"):
            options.add("")
            rest = rest[1:]
        return {a + b for a, b in product(options, _language(rest))}
    if not pattern[0].isalpha():
        raise AssertionError(f"unexpected construct in {pattern!r}")
    return {pattern[0] + tail for tail in _language(pattern[1:])}


def test_the_phrase_token_table_is_the_phrase_patterns():
    """Each phrase is \\b<verb forms>[ \\t]+<particle>\\b: the table lists exactly those forms
    and that particle, in _PHRASES' order (the prefilter may never hide a phrase)."""
    assert len(ftsquery._PHRASE_TOKENS) == len(ftsquery._PHRASES)
    shape = re.compile(r"\\b(?P<verb>[a-z(?:|)?]+)\[ \\t\]\+(?P<particle>[a-z]+)\\b")
    for (pattern, _word), (verbs, particle) in zip(ftsquery._PHRASES, ftsquery._PHRASE_TOKENS,
                                                   strict=True):
        forms: set[str] = set()
        for alternative in pattern.pattern.split("|\\b"):
            found = shape.fullmatch(alternative if alternative.startswith("\\b")
                                    else "\\b" + alternative)
            assert found, pattern.pattern
            assert found["particle"] == particle
            forms |= _language(found["verb"])
        assert forms == verbs, pattern.pattern


def test_long_runs_are_cut_alike():
    """Runs of 100,000 characters (one word, one compound, a camelCase chain): the run finder
    takes each run once, however long."""
    for text in ("a" * 100_000, "a-" * 50_000, "aB" * 50_000, "x " + "9" * 100_000 + "_y"):
        assert ftsquery._ascii_rich_compounds(text) == ftsquery._rich_compounds(text)


class CountingMemo(stem_memo.StemMemo):
    def __init__(self) -> None:
        super().__init__()
        self.asked = 0

    def of(self, conn, tokens, stems):
        self.asked += 1
        return super().of(conn, tokens, stems)


def scratch_with(memo: stem_memo.StemMemo | None) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", isolation_level=None,
                           factory=stem_memo.ScratchConnection)
    conn.stem_memo = memo
    return conn


@settings(max_examples=100, deadline=None)
@given(texts=st.lists(st.tuples(ASCII_TEXT | st.text(max_size=15), ASCII_TEXT), min_size=1,
                      max_size=6))
def test_a_batch_derives_what_each_record_derives_alone(texts):
    many = [{"title": title, "body": body, "paths": ["src/x_y.py"], "tags": ["Tag"]}
            for title, body in texts]
    alone = sqlite3.connect(":memory:", isolation_level=None)
    memo = CountingMemo()
    batch = scratch_with(memo)
    try:
        expected = [records.derive(alone, fields) for fields in many]  # FTS5 counts them
        assert records.derive_many(batch, many) == expected
        words = [t for f in expected
                 for t in stem_memo.ascii_tokens(" ".join((f["title"], f["body"],
                                                           f["search_aux"])))]
        if all(len(word) <= 64 for word in words):  # longer ones are never remembered
            assert memo.asked <= 1  # the new tokens of all records asked of FTS5 at once
        assert records.derive_many(batch, many) == expected  # every stem remembered now
    finally:
        alone.close()
        batch.close()


def test_a_record_that_fails_fails_alone_in_a_batch():
    many = [{"title": "a", "body": "first body", "paths": [], "tags": []},
            {"title": "b", "body": "no paths given"},
            {"title": "c", "body": "third body", "paths": [], "tags": []}]
    conn = scratch_with(stem_memo.StemMemo())
    try:
        first, failed, third = records.derive_many(conn, many)
        assert isinstance(failed, KeyError)
        assert first["term_counts"].startswith("2 3 1\n")
        assert third["search_aux"] == "" and "third 1" in third["term_counts"]
    finally:
        conn.close()


def test_the_identifier_memo_is_bounded():
    memo: dict[str, tuple[str, ...]] = {}
    for i in range(ftsquery.MEMO_COMPOUNDS + 50):
        body = f"call fetch_item_{i} on TokenRefresher{i}"
        assert ftsquery.index_aux_and_tokens("", body, [], [], memo)[0] == \
            reference_aux("", body, [], [])
        assert len(memo) <= ftsquery.MEMO_COMPOUNDS


@settings(max_examples=200, deadline=None)
@given(number=st.from_regex(r"[0-9]{1,70}", fullmatch=True))
def test_a_plain_number_is_its_own_stem_in_fts5(number):
    """The memo takes a number (up to 64 digits) as its own stem without asking FTS5."""
    conn = sqlite3.connect(":memory:")
    try:
        assert fts.stems(conn, [number]) == {number: number}
        assert (stem_memo.StemMemo().known.get(number) is None
                and stem_memo._plain_number(number) == (len(number) <= 64))
    finally:
        conn.close()
