"""Free text to safe FTS5 MATCH expressions; identifier-aware aux text."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from minionsd.text.ftsquery import (
    STOP_WORDS,
    code_terms,
    index_aux_text,
    match_expression,
    quote_term,
    search_terms,
)

TOKENIZER = "porter unicode61 remove_diacritics 2"


@pytest.fixture(scope="module")
def fts() -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(title, body, aux, tokenize='{TOKENIZER}')")
    rows = [
        ("Token refresh", "TokenRefresher retries on ERR_CONN_RESET", ["src/auth/token_ref.py"]),
        ("Cache", "The LRU cache in lib/LRUCache.ts evicts too early", ["lib/LRUCache.ts"]),
        ("Flaky", "the integration test timed out on CI", []),
        ("Kebab", "use the retry-budget setting", []),
    ]
    for title, body, paths in rows:
        conn.execute(
            "INSERT INTO t (title, body, aux) VALUES (?, ?, ?)",
            (title, body, index_aux_text(title, body, paths, [])),
        )
    yield conn
    conn.close()


def _hits(conn: sqlite3.Connection, query: str) -> list[str]:
    expr = match_expression(search_terms(query))
    if expr is None:
        return []
    sql = "SELECT title FROM t WHERE t MATCH ? ORDER BY rank"
    return [r[0] for r in conn.execute(sql, (expr,))]


def test_quote_term_doubles_quotes() -> None:
    assert quote_term('say "hi"') == '"say ""hi"""'
    assert quote_term("") == '""'
    assert quote_term("a\x00b") == '"a b"'


def test_match_expression() -> None:
    assert match_expression([]) is None
    assert match_expression(["", ""]) is None
    assert match_expression(["a", "b c"]) == '"a" OR "b c"'


def test_search_terms_basic_rules() -> None:
    assert search_terms("The Cache and the CACHE, cache!") == ["cache"]
    assert search_terms("x cache y") == ["cache"]  # one-character tokens are dropped...
    assert search_terms("a b c") == ["a", "b", "c"]  # ...unless nothing else is left
    assert search_terms("the of and") == ["the", "of", "and"]  # only stop words: keep them
    assert search_terms("") == []
    assert search_terms("  ...  !!! ") == []
    assert len(search_terms(" ".join(f"word{i}" for i in range(100)))) == 32
    assert search_terms("alpha beta gamma", max_terms=2) == ["alpha", "beta"]


def test_search_terms_identifiers() -> None:
    assert search_terms("TokenRefresher") == ["tokenrefresher", "token", "refresher"]
    assert search_terms("ERR_CONN_RESET") == ["err", "conn", "reset", "errconnreset"]
    assert search_terms("src/auth/token_refresh.py") == [
        "src", "auth", "token", "refresh", "tokenrefresh", "py",
    ]
    assert search_terms("HTTPServerError") == ["httpservererror", "http", "server", "error"]
    assert search_terms("the request timed out") == ["request", "timeout"]


def test_stop_words_keep_code_words() -> None:
    for word in ("null", "none", "true", "false", "new", "get", "set", "test", "error", "run"):
        assert word not in STOP_WORDS


def test_code_terms_order() -> None:
    assert list(code_terms("getUser token-refresh")) == [
        "getuser", "get", "user", "token", "refresh", "tokenrefresh",
    ]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("refresher", "Token refresh"),
        ("token_refresher", "Token refresh"),
        ("ERR_CONN_RESET", "Token refresh"),
        ("errconnreset", "Token refresh"),
        ("token_ref.py", "Token refresh"),
        ("LRUCache", "Cache"),
        ("lru", "Cache"),
        ("timeouts", "Flaky"),
        ("retryBudget", "Kebab"),
    ],
)
def test_identifiers_are_findable_whole_and_by_parts(
    fts: sqlite3.Connection, query: str, expected: str
) -> None:
    hits = _hits(fts, query)
    assert hits and hits[0] == expected, hits


def test_index_aux_text_is_bounded_and_skips_plain_tokens() -> None:
    aux = index_aux_text("TokenRefresher", "plain words only", ["src/a_b/c.py"], ["flaky-test"])
    lines = aux.split("\n")
    assert lines[0] == "src/a_b/c.py"
    assert lines[1] == "flaky-test"
    extra = lines[2].split()
    assert "token" in extra and "refresher" in extra and "flakytest" in extra
    assert "plain" not in extra and "tokenrefresher" not in extra
    huge = index_aux_text(
        "t", " ".join(f"Camel{i}Case{i}" for i in range(5000)), [f"p/{i}" for i in range(500)], []
    )
    assert len(huge) < 40_000
    assert index_aux_text("", "", [], []) == ""


NASTY = st.sampled_from(
    ['"', "'", "-", ":", "*", "^", "NEAR(", "NEAR", "AND", "OR", "NOT", "(", ")", "{", "}",
     "+", "title:", "aux:", "col1:", "\\", "\x00", " ", "\n", "é", "ǅ", "\u0301", "²", "\ue000",
     "日本語", "😀", "_", "__", "a_b", "-x", "x*", "\"\"", "''"]
)
TEXTS = st.one_of(
    st.text(), st.lists(st.one_of(NASTY, st.text(max_size=4)), max_size=30).map("".join)
)


@settings(max_examples=500)
@given(TEXTS)
@example("")
@example('"unbalanced')
@example("foo-bar c++ one.two.three don't title:hello * AND NOT near a OR (fox")
def test_any_text_gives_valid_fts5_query(text: str) -> None:
    conn = _shared_conn()
    terms = search_terms(text)
    assert len(terms) <= 32
    assert len(set(terms)) == len(terms)
    expr = match_expression(terms)
    if expr is None:
        assert terms == []
        return
    conn.execute("SELECT count(*) FROM t WHERE t MATCH ?", (expr,)).fetchone()


@given(TEXTS, TEXTS)
def test_any_aux_text_indexes(title: str, body: str) -> None:
    conn = _shared_conn()
    aux = index_aux_text(title, body, [body[:20]], [title[:10]])
    conn.execute("INSERT INTO t (title, body, aux) VALUES (?, ?, ?)", (title, body, aux))
    conn.execute("DELETE FROM t WHERE rowid = last_insert_rowid()")


_CONN: sqlite3.Connection | None = None


def _shared_conn() -> sqlite3.Connection:
    global _CONN
    if _CONN is None:
        _CONN = sqlite3.connect(":memory:")
        _CONN.execute(
            f"CREATE VIRTUAL TABLE t USING fts5(title, body, aux, tokenize='{TOKENIZER}')"
        )
        _CONN.execute("INSERT INTO t VALUES ('retry', 'cache timeout', 'x')")
    return _CONN


@settings(max_examples=300)
@given(TEXTS)
@example("")
@example("src/auth/token_refresh.py ERR_CONN_RESET TokenRefresher NEAR( a OR (b")
def test_any_text_gives_valid_search_expression(text: str) -> None:
    from minionsd.text.ftsquery import search_expression

    expr = search_expression(text)
    if expr is not None:
        assert expr.count(" OR ") < 32
        _shared_conn().execute("SELECT count(*) FROM t WHERE t MATCH ?", (expr,)).fetchone()


def test_search_expression_keeps_identifiers_whole() -> None:
    from minionsd.text.ftsquery import search_expression

    assert search_expression("ERR_CONN_RESET") == '"err conn reset" OR "errconnreset"'
    assert search_expression("src/auth/token_refresh.py") == \
        '"src auth token refresh py" OR "tokenrefresh"'
    assert search_expression("the") == '"the"'  # only stop words: search them anyway
    # A list written without spaces is its words, not one identifier.
    assert search_expression("ECONNRESET,timeout") == '"econnreset" OR "timeout"'
    assert search_expression("(ERR_CONN_RESET);[retry]") == \
        '"err conn reset" OR "errconnreset" OR "retry"'
    assert search_expression("'src/app.py'") == search_expression("src/app.py")
    assert search_expression("  ") is None
