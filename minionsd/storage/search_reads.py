"""The FTS5 reads memory.search is made of (storage/search.py puts them together): capped
phrase counts, bm25 scores of every match or of chosen rows, the best few matches, and counts
that leave some rows out, and the small index a page's snippets are made in. Plain tuples,
through documented FTS5 interfaces only.

bm25 ranks are REALs, and an aggregate can carry a REAL out only as text, which keeps 15
significant digits (JSON's and group_concat's conversion): not enough to sort ranks that differ
in their last bits, or to hand them back unchanged. So :func:`ranks_and_count` sends each rank as
two integers (k, m) with ``-rank == m / 2**k`` exactly: multiplying a double by a power of two
and casting an integral double to an integer are both exact.
"""

from __future__ import annotations

import json
import math
import sqlite3
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from minionsd.storage import fts


def phrase_counts(conn: sqlite3.Connection, phrases: Sequence[str], cap: int) -> list[int]:
    """Rows matching each quoted FTS5 string of `phrases` (as ftsquery quotes them), each
    counted to at most `cap`, in one statement."""
    sub = "(SELECT count(*) FROM (SELECT 1 FROM memory_fts WHERE memory_fts MATCH ? LIMIT ?))"
    binds: list[Any] = []
    for phrase in phrases:
        binds += [phrase, cap]
    return list(fts.plain_cursor(conn).execute("SELECT " + ", ".join([sub] * len(phrases)),
                                           binds).fetchone())


def ranks_of(conn: sqlite3.Connection, expression: str, weights: str,
             seqs: list[int]) -> list[tuple[int, float]]:
    """(rowid, rank) under ``bm25(memory_fts, weights)`` for the rows of `seqs` that match
    `expression`, exactly as a search of every match ranks them.

    The rowid test is written `+rowid` so SQLite does not hand it to FTS5 as a lookup per
    value (each lookup would count every phrase's rows again for its idf): FTS5 walks the
    matches once, and bm25 runs only for the rows that pass."""
    if not seqs:
        return []
    return fts.plain_cursor(conn).execute(
        f"""SELECT rowid, rank FROM memory_fts
            WHERE memory_fts MATCH ? AND rank MATCH 'bm25({weights})'
              AND +rowid IN (SELECT value FROM json_each(?))""",
        (expression, json.dumps(seqs))).fetchall()


def best(conn: sqlite3.Connection, expression: str, weights: str,
         count: int) -> list[tuple[int, float]]:
    """The `count` best (rowid, bm25) rows matching `expression`, best (lowest) first; rows
    of equal score at the edge are cut in no particular order. SQLite's sorter keeps only
    `count` rows (FTS5's own ORDER BY rank would sort every match)."""
    return fts.plain_cursor(conn).execute(
        f"""SELECT rowid, bm25(memory_fts, {weights}) AS score FROM memory_fts
            WHERE memory_fts MATCH ? ORDER BY score LIMIT ?""", (expression, count)).fetchall()


def count_matches(conn: sqlite3.Connection, expression: str, excluded: list[int],
                  lookups: int) -> int:
    """Rows matching `expression`, not counting those of `excluded`: up to `lookups` of them
    are looked up in the index one by one, more are told apart in the same pass that counts
    (`+rowid`: a test on each match, not a lookup per value)."""
    cur = fts.plain_cursor(conn)
    if len(excluded) > lookups:
        return cur.execute(
            """SELECT count(*) - count(*) FILTER (WHERE +rowid IN
                   (SELECT value FROM json_each(?)))
               FROM memory_fts WHERE memory_fts MATCH ?""",
            (json.dumps(excluded), expression)).fetchone()[0]
    matches = cur.execute("SELECT count(*) FROM memory_fts WHERE memory_fts MATCH ?",
                          (expression,)).fetchone()[0]
    return matches - _count_among(conn, expression, excluded) if excluded else matches


def _count_among(conn: sqlite3.Connection, expression: str, seqs: list[int]) -> int:
    """How many of the rows `seqs` match `expression`, each looked up in the index."""
    return fts.plain_cursor(conn).execute(
        """SELECT count(*) FROM memory_fts WHERE memory_fts MATCH ?
             AND rowid IN (SELECT value FROM json_each(?))""",
        (expression, json.dumps(seqs))).fetchone()[0]


# The exact form covers magnitudes from 2**(-10 * RUNGS) to below 2**10; bm25 ranks lie far
# inside (each phrase adds less than idf * (k1 + 1): about 30 for a phrase held once in
# millions of records, and at least 1e-6 * (k1 + 1) / (1 + k1 * (1 - b + b * len / avglen))).
_RUNGS = 8
_BELOW = 2 ** 62


def _times_power_of_two(expr: str, power: int) -> str:
    """SQL for `expr` times 2**power (power >= 0): a product of integer powers of two, each
    exactly a double, so the product of a REAL is exact."""
    factors = []
    while power > 0:
        step = min(power, 62)
        factors.append(str(2 ** step))
        power -= step
    return " * ".join([expr, *factors])


def exact_rank_sql(value: str) -> str:
    """SQL giving, for a negative REAL `value`, a JSON array [k, m] of integers with
    ``-value == m / 2**k`` exactly when m < 2**62 (see the module docstring and
    :func:`rank_from_exact`); NULL when `value` is not negative or below 2**(-10 * RUNGS) in
    magnitude.

    Rung L (0, -10, -20, ...) holds magnitudes a >= 2**L (below 2**(L + 10) but for the
    first): a = c * 2**(e - 52) with a 53-bit integer c and e >= L, so a * 2**(52 - L) is an
    integer, below 2**62 when e < L + 10. The first rung is tried first (one comparison and
    one product: `value` is read twice) as the ranks memory.search compares are mostly there;
    a magnitude of 2**10 or more gives m >= 2**62, which rank_from_exact refuses."""
    size = f"(-{value})"
    whens = []
    for rung in range(_RUNGS + 1):
        low = -10 * rung
        reached = (f"{size} >= 1" if low == 0
                   else f"{_times_power_of_two(size, -low)} >= 1")
        scaled = _times_power_of_two(size, 52 - low)
        whens.append(f"WHEN {reached} THEN json_array({52 - low}, CAST({scaled} AS INTEGER))")
    return "CASE " + " ".join(whens) + " ELSE NULL END"


def rank_from_exact(pair: Sequence[int] | None) -> float | None:
    """The rank an exact_rank_sql pair stands for; None for NULL or a pair out of range."""
    if pair is None:
        return None
    power, mantissa = pair
    if not 0 < mantissa < _BELOW:
        return None
    return -math.ldexp(mantissa, -power)


_RANK_PAIR = exact_rank_sql("r")


def ranks_and_count(conn: sqlite3.Connection, expression: str, weights: str,
                    seqs: list[int] | str, excluded: list[int],
                    lookups: int) -> tuple[list[tuple[int, float]], int] | None:
    """(ranks_of(expression, seqs), count_matches(expression, excluded)) from one walk of the
    matches: FTS5 reads the query's phrases once for both, and bm25 runs only for `seqs`, or
    for the rows that match `seqs` when it is an FTS5 expression (str). None when a rank is
    outside what the exact form carries (then ask ranks_of and count_matches).

    The inner SELECT is a co-routine (its LIMIT keeps SQLite from merging it into the
    aggregate), so each chosen row is ranked once although the exact form reads its rank
    several times."""
    if isinstance(seqs, str):
        chosen = "SELECT rowid FROM memory_fts WHERE memory_fts MATCH :seqs"
        binds: dict[str, Any] = {"expr": expression, "seqs": seqs}
    else:
        chosen = "SELECT value FROM json_each(:seqs)"
        binds = {"expr": expression, "seqs": json.dumps(seqs)}
    minus = ""
    if len(excluded) > lookups:
        minus = " - count(*) FILTER (WHERE id IN (SELECT value FROM json_each(:excluded)))"
        binds["excluded"] = json.dumps(excluded)
    count, ranks = fts.plain_cursor(conn).execute(
        f"""SELECT count(*){minus},
                   json_group_array(json_array(id, {_RANK_PAIR})) FILTER (WHERE r IS NOT NULL)
            FROM (SELECT rowid AS id,
                         CASE WHEN +rowid IN ({chosen}) THEN rank
                         END AS r
                  FROM memory_fts
                  WHERE memory_fts MATCH :expr AND rank MATCH 'bm25({weights})' LIMIT -1)""",
        binds).fetchone()
    pairs = [(seq, rank_from_exact(pair)) for seq, pair in json.loads(ranks or "[]")]
    if any(rank is None for _, rank in pairs):
        return None
    if excluded and not minus:
        count -= _count_among(conn, expression, excluded)
    return pairs, count  # type: ignore[return-value]


# --- the page's snippets ------------------------------------------------------------------------

_PAGE = "minions_page"  # a TEMP FTS5 table of the caller's connection: the page's bodies only
_PAGE_SOURCE = "minions_page_rows"  # its content: a TEMP view of memory_records
_WINDOWS = "minions_page_windows"  # TEMP: the window of each long body on the page (by seq)
_PIECES = "minions_page_pieces"  # TEMP contentless FTS5 table: one long body's pieces
# Every row of the page index holds this token in this column, so the page expression
# (`expression OR mark : m`) visits every row of the page, also those whose body holds no
# phrase of the query (their snippet is the body's start, as FTS5 makes it for them).
_MARK_COLUMN = "mark"
_MARK = "m"
# FTS5's snippet() costs the square of the row's hits (it scores a window at every hit, each
# over every hit), so a body longer than this many characters is not indexed whole: only its
# window, the piece of at most this size that ranks best for the query, goes in.
SNIPPET_WINDOW = 8192
# A piece ends after the last white space within this many characters of its size limit.
_CUT_REACH = 256
ELLIPSIS = "\u2026"


def window_spans(text: str, size: int = SNIPPET_WINDOW) -> list[tuple[int, int]]:
    """(start, end) of the consecutive pieces `text` is cut into, each at most `size`
    characters, together all of it. A cut comes after a white space character (no token
    spans one) within _CUT_REACH characters of the limit, else after punctuation there,
    else at the limit."""
    spans: list[tuple[int, int]] = []
    start = 0
    while len(text) - start > size:
        limit = start + size
        reach = max(start + 1, limit - _CUT_REACH)
        cut = _cut_after(text, reach, limit, str.isspace) \
            or _cut_after(text, reach, limit, _is_punctuation) or limit
        spans.append((start, cut))
        start = cut
    spans.append((start, len(text)))
    return spans


def _cut_after(text: str, low: int, high: int, separator: Callable[[str], bool]) -> int:
    """The position after the last character of text[low:high] that is a separator; 0 if none."""
    for i in range(high - 1, low - 1, -1):
        if separator(text[i]):
            return i + 1
    return 0


def _is_punctuation(char: str) -> bool:
    return unicodedata.category(char).startswith("P")


def window_text(text: str, span: tuple[int, int]) -> str:
    """text[span], with an ellipsis word on each side where text goes on (an ellipsis is no
    token, so FTS5 shows it as the text around the tokens it cut at)."""
    start, end = span
    return ((ELLIPSIS + " " if start > 0 else "") + text[start:end]
            + (" " + ELLIPSIS if end < len(text) else ""))


def _best_piece(cur: sqlite3.Cursor, text: str, expression: str) -> str:
    """The window of a long body: its piece (window_spans) that ranks best under `expression`
    (bm25 among the pieces; the first of equals), or its first piece when none matches."""
    spans = window_spans(text)
    cur.executemany(f"INSERT INTO temp.{_PIECES} (rowid, body) VALUES (?, ?)",
                    ((i, text[start:end]) for i, (start, end) in enumerate(spans)))
    try:
        best = cur.execute(f"""SELECT rowid FROM temp.{_PIECES} WHERE {_PIECES} MATCH ?
                               ORDER BY rank, rowid LIMIT 1""", (expression,)).fetchone()
    finally:
        cur.execute(f"INSERT INTO temp.{_PIECES} ({_PIECES}) VALUES ('delete-all')")
    return window_text(text, spans[best[0] if best else 0])


def _create(cur: sqlite3.Cursor) -> None:
    """The page index's TEMP tables and view, on the connection's first page."""
    cur.execute(f"CREATE TEMP TABLE IF NOT EXISTS {_WINDOWS} "
                "(seq INTEGER PRIMARY KEY, body TEXT NOT NULL)")
    cur.execute(f"CREATE TEMP VIEW IF NOT EXISTS {_PAGE_SOURCE} AS "
                f"SELECT r.seq AS seq, coalesce(w.body, r.body) AS body, "
                f"'{_MARK}' AS {_MARK_COLUMN} FROM main.memory_records r "
                f"LEFT JOIN temp.{_WINDOWS} w ON w.seq = r.seq")
    cur.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{_PAGE} USING fts5(body, "
                f"{_MARK_COLUMN}, content='{_PAGE_SOURCE}', content_rowid='seq', "
                f"tokenize='{fts.TOKENIZER}')")
    cur.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{_PIECES} USING fts5(body, "
                f"content='', tokenize='{fts.TOKENIZER}')")


def _fill(cur: sqlite3.Cursor, seqs: str, long: list[tuple[int, str]],
          expression: str) -> None:
    """The page index of `seqs` (a JSON array), the `long` bodies among them as their
    windows. Its first statement fails, and nothing is written, when the tables are not
    made yet."""
    for seq, body in long:
        window = _best_piece(cur, body, expression)
        cur.execute(f"INSERT INTO temp.{_WINDOWS} (seq, body) VALUES (?, ?)", (seq, window))
    cur.execute(f"""INSERT INTO temp.{_PAGE} (rowid, body, {_MARK_COLUMN})
                    SELECT seq, body, {_MARK_COLUMN} FROM temp.{_PAGE_SOURCE}
                    WHERE seq IN (SELECT value FROM json_each(?))""", (seqs,))


@contextmanager
def page_index(conn: sqlite3.Connection, seqs: list[int],
               expression: str) -> Iterator[tuple[str, str]]:
    """(table, expression): a TEMP FTS5 table holding, in column 0, the bodies of the
    memory_records rows `seqs` alone (rowid = seq), and an FTS5 expression matching each of
    them, under which ``snippet(table, 0, ...)`` gives, byte for byte, what
    ``snippet(memory_fts, 1, ...)`` gives under `expression` in a search of memory_fts, for
    every body of at most SNIPPET_WINDOW characters. A longer body is there as its window
    (_best_piece), so its snippet costs what a body of that size costs, however long it is.

    snippet() reads only the column it is asked for: that column's text, its size in tokens
    and the places in it where the query's phrases hit, none of which depends on the other
    columns or rows, and the table tokenises as memory_fts does. Made this way, the page's
    snippets do not make FTS5 walk every match of the query again (as a MATCH on memory_fts
    does, however few rows it keeps). The tables are emptied on the way out."""
    cur = fts.plain_cursor(conn)
    wanted = json.dumps(seqs)
    long = cur.execute(f"""SELECT seq, body FROM main.memory_records
                           WHERE seq IN (SELECT value FROM json_each(?))
                             AND length(body) > {SNIPPET_WINDOW}""", (wanted,)).fetchall()
    try:
        try:
            _fill(cur, wanted, long, expression)
        except sqlite3.OperationalError as exc:
            if "no such table" not in str(exc):
                raise
            _create(cur)
            _fill(cur, wanted, long, expression)
        yield _PAGE, f"({expression}) OR {_MARK_COLUMN} : {_MARK}"
    finally:
        cur.execute(f"INSERT INTO temp.{_PAGE} ({_PAGE}) VALUES ('delete-all')")
        if long:
            cur.execute(f"DELETE FROM temp.{_WINDOWS}")
