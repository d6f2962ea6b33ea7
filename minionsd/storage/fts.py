"""The FTS5 index of memory_records through documented interfaces only: stems, term counts,
index statistics and segment upkeep.

Storage-level (records.py, jobs and retrieval import it; it imports only ftsquery and
textcut). It also
recomputes a record's derived index columns (search_aux, term_counts) for the reindex job.
Nothing here reads FTS5's shadow tables: stems and per-record term counts come from FTS5
itself, tokenising the text in a TEMP FTS5 table of the caller's connection and reading it
back through fts5vocab; row count and total length come from ``fts_stats`` (migration 0010,
kept by triggers from the stored term counts); upkeep runs FTS5's 'merge' command and tells
from ``total_changes`` whether it did any work.
"""

from __future__ import annotations

import json
import sqlite3
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from minionsd.storage.stem_memo import StemMemo, counts_of_ascii
from minionsd.text import ftsquery
from minionsd.text.textcut import scrub_surrogates

TOKENIZER = "porter unicode61 remove_diacritics 2"
# bm25 weights for (title, body, aux): a title hit counts four body hits. memory.search's
# bm25() and retrieval's own scoring both use these.
BM25_WEIGHTS = (4.0, 1.0, 2.0)
BM25_K1 = 1.2  # FTS5's bm25 parameters
BM25_B = 0.75
COUNTS_FORMAT = "2"  # first word of a stored term_counts value (see term_counts)

_COUNTS_TABLE = "minions_counts"
_WORDS_TABLE = "minions_words"
_WORDS_INSERT = f"INSERT INTO temp.{_WORDS_TABLE} (rowid, w) VALUES (?, ?)"


def plain_cursor(conn: sqlite3.Connection) -> sqlite3.Cursor:
    cur = conn.cursor()
    cur.row_factory = None  # plain tuples, whatever the connection's row factory is
    return cur


def _scratch(cur: sqlite3.Cursor) -> None:
    """The TEMP tables this module tokenises in (per connection, created on first use).

    Both tables are contentless: emptying one is FTS5's 'delete-all', which drops the index
    without tokenising the text a second time as a DELETE would."""
    cur.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{_COUNTS_TABLE} USING "
                f"fts5(title, body, aux, content='', tokenize='{TOKENIZER}')")
    cur.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{_COUNTS_TABLE}_col USING "
                f"fts5vocab(temp, {_COUNTS_TABLE}, 'col')")
    cur.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{_COUNTS_TABLE}_row USING "
                f"fts5vocab(temp, {_COUNTS_TABLE}, 'row')")
    cur.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{_WORDS_TABLE} USING "
                f"fts5(w, content='', tokenize='{TOKENIZER}')")
    cur.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{_WORDS_TABLE}_inst USING "
                f"fts5vocab(temp, {_WORDS_TABLE}, 'instance')")


def _empty(cur: sqlite3.Cursor, table: str) -> None:
    """Delete what a call put into a scratch table. Not a savepoint rolled back: a savepoint
    makes every FTS5 table of the connection write out its pending changes, so inside a
    writer's transaction that adds many records (a consolidation batch, a bulk load) each
    record's counts would flush the previous record's index entries as a segment of their
    own, and the transaction would slow down with every record it holds."""
    cur.execute(f"INSERT INTO temp.{table} ({table}) VALUES ('delete-all')")


def _text(blob: bytes) -> str:
    # FTS5 cuts a huge token at a byte limit, possibly inside a character.
    return blob.decode("utf-8", errors="replace")


# Whole weights of at least 1 let FTS5 do the weighing: each column's text goes in repeated
# as many times as its weight (joined by a newline, which no token spans), so the 'row'
# vocabulary's count of a stem is already its weighted count, and a column's count divided
# by its weight is its plain count (the row's length).
_REPEATS: tuple[int, ...] | None = (
    tuple(int(w) for w in BM25_WEIGHTS) if all(w == int(w) >= 1 for w in BM25_WEIGHTS)
    else None)
_COLUMNS = ("title", "body", "aux")
# One statement: the length, and the "<stem> <weighted count>" lines in the index's (byte)
# order, the order fts5vocab scans in (an ORDER BY term adds nothing but a subquery's cost);
# built by SQLite, not row by row in Python.
_WEIGHTED_SQL = (
    "SELECT (SELECT sum(cnt / CASE col "
    + " ".join(f"WHEN '{c}' THEN {r}" for c, r in zip(_COLUMNS, _REPEATS or (1, 1, 1),
                                                      strict=True))
    + f" END) FROM temp.{_COUNTS_TABLE}_col), "
    "CAST(group_concat(CAST(term AS BLOB) || ' ' || cnt, char(10)) AS BLOB) "
    f"FROM temp.{_COUNTS_TABLE}_row")
_INSERT_SQL = f"INSERT INTO temp.{_COUNTS_TABLE} (rowid, title, body, aux) VALUES (1, ?, ?, ?)"


def _tokenise(cur: sqlite3.Cursor, values: Sequence[str]) -> None:
    try:
        cur.execute(_INSERT_SQL, values)
    except sqlite3.OperationalError:  # first use on this connection
        _scratch(cur)
        cur.execute(_INSERT_SQL, values)


def term_counts(conn: sqlite3.Connection, title: str, body: str, aux: str, *,
                memo: StemMemo | None = None,
                tokens: tuple[list[str], list[str]] | None = None) -> str:
    """A record's stemmed, column-weighted term counts, as stored in memory_records.term_counts.

    Text, one line per stem: a header ``"2 <n> 1"`` (format 2; n = tokens in all three columns,
    the row's length for bm25), then ``"<stem> <f>"`` where f is the occurrences in title, body
    and aux weighted by BM25_WEIGHTS, as FTS5's bm25 weighs them. FTS5 tokenises the text (in a
    TEMP table of `conn`, emptied at once), so the counts are exactly the index's. Computed
    once at write time so a retrieval reads it instead of tokenising every candidate's text.

    With a `memo` (memory.add's preparing threads), ASCII text is cut into tokens in Python,
    where FTS5's rule is plain (see _ascii_tokens), and only the stems of tokens the memo has
    not seen are asked of FTS5: the same text, without tokenising and indexing every record a
    second time in the TEMP table. `tokens`: title's and body's, when the caller has them
    (ftsquery.index_aux_and_tokens).
    """
    if memo is not None and _REPEATS is not None:
        counted = counts_of_ascii(conn, memo, (title or "", body or "", aux or ""), _REPEATS,
                                  tokens, stems, COUNTS_FORMAT)
        if counted is not None:
            return counted
    cur = plain_cursor(conn)
    values = tuple(scrub_surrogates(text or "") for text in (title, body, aux))
    if _REPEATS is not None:
        counted = _weighted_by_fts5(cur, values, _REPEATS)
        if counted is not None:
            return counted
    _tokenise(cur, values)  # the plain text; weighed row by row in Python
    try:
        rows = cur.execute(f"SELECT CAST(term AS BLOB), col, cnt "
                           f"FROM temp.{_COUNTS_TABLE}_col").fetchall()
    finally:
        _empty(cur, _COUNTS_TABLE)
    return _format_counts(rows)


def remembered_counts(title: str, body: str, aux: str, memo: StemMemo,
                      tokens: tuple[list[str], list[str]] | None = None) -> str | None:
    """term_counts of ASCII text from `memo` alone: None when a token's stem is not remembered
    (learn_stems, then term_counts) or the text is not ASCII."""
    if _REPEATS is None:
        return None
    return counts_of_ascii(None, memo, (title or "", body or "", aux or ""), _REPEATS, tokens,
                           None, COUNTS_FORMAT)


def learn_stems(conn: sqlite3.Connection, memo: StemMemo,
                columns: Iterable[list[str]]) -> None:
    """Have `memo` remember the stems of every token of `columns` (stem_memo.ascii_tokens'
    output), those it lacks asked of FTS5 in one call."""
    memo.learn(conn, columns, stems)


def _weighted_by_fts5(cur: sqlite3.Cursor, values: Sequence[str],
                      repeats: Sequence[int]) -> str | None:
    """term_counts with FTS5 doing the weighing (see _REPEATS); None when a stem is not
    whole UTF-8 (FTS5 cut a huge token inside a character): the caller counts in Python."""
    _tokenise(cur, ["\n".join([text] * times) if times > 1 and text else text
                    for text, times in zip(values, repeats, strict=True)])
    try:
        length, lines = cur.execute(_WEIGHTED_SQL).fetchone()
        length = length or 0
    finally:
        _empty(cur, _COUNTS_TABLE)
    if not lines:
        return f"{COUNTS_FORMAT} {length} 1\n"
    try:
        return f"{COUNTS_FORMAT} {length} 1\n{lines.decode('utf-8')}\n"
    except UnicodeDecodeError:
        return None


def _format_counts(rows: list[tuple[bytes, str, int]]) -> str:
    """term_counts' text from (term, column, count) rows, stems decoded one by one."""
    weight = dict(zip(("title", "body", "aux"), BM25_WEIGHTS, strict=True))
    weighted: dict[str, float] = {}
    length = 0
    for term, col, count in rows:
        stem = _text(term)
        weighted[stem] = weighted.get(stem, 0.0) + count * weight[col]
        length += count
    lines = [f"{COUNTS_FORMAT} {length} 1"]
    lines += [f"{stem} {_number(f)}" for stem, f in weighted.items()]
    return "\n".join(lines) + "\n"


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) else repr(value)


def stems(conn: sqlite3.Connection, words: Iterable[str]) -> dict[str, str | None]:
    """FTS5 porter stems of `words` (None for a word that is not exactly one token), from a
    TEMP table of `conn`, emptied at once."""
    wanted = list(dict.fromkeys(words))
    if not wanted:
        return {}
    clean = {w: scrub_surrogates(w) for w in wanted}  # UTF-8 cannot carry a lone surrogate
    # ASCII letters/digits are always exactly one token, so they share one row (0) and are
    # told apart by offset; any other word gets a row of its own.
    simple = [w for w in wanted if w.isascii() and w.isalnum()]
    other = [w for w in wanted if not (w.isascii() and w.isalnum())]
    rows = [(0, " ".join(simple))] if simple else []
    rows += [(i, clean[w]) for i, w in enumerate(other, start=1)]
    cur = plain_cursor(conn)
    try:
        cur.executemany(_WORDS_INSERT, rows)
    except sqlite3.OperationalError:  # first use on this connection
        _scratch(cur)
        cur.executemany(_WORDS_INSERT, rows)
    per_row: dict[int, list[tuple[int, str]]] = {}
    try:
        for term, doc, offset in cur.execute(
                f"SELECT CAST(term AS BLOB), doc, offset FROM temp.{_WORDS_TABLE}_inst"):
            per_row.setdefault(doc, []).append((offset, _text(term)))
    finally:
        _empty(cur, _WORDS_TABLE)
    out: dict[str, str | None] = dict.fromkeys(wanted)
    for offset, term in per_row.get(0, []):
        out[simple[offset]] = term
    for index, word in enumerate(other, start=1):
        tokens = per_row.get(index, [])
        out[word] = tokens[0][1] if len(tokens) == 1 else None
    return out


def counts_length(stored: str) -> int | None:
    """The length in a stored term_counts header (None if it is not format 2)."""
    if not stored or not stored.startswith(COUNTS_FORMAT + " "):
        return None
    header = stored[: stored.find("\n")].split(" ")
    if len(header) != 3 or not header[1].isdigit():
        return None
    return int(header[1])


Derived = tuple[str, str, int, str | None, str, str, str]


def derived_after(conn: sqlite3.Connection, seq: int, missing_only: bool,
                  chunk: int) -> tuple[int | None, list[Derived]]:
    """The next `chunk` records after `seq` (only those without stored counts with
    `missing_only`): (the last seq read or None, [(search_aux, term_counts, seq, title, body,
    paths, tags)] for those whose derived columns differ from what the indexing rules give
    now). The inputs ride along so `update_derived` can tell a row written meanwhile."""
    where = "seq > ? AND term_counts IS NULL" if missing_only else "seq > ?"
    rows = plain_cursor(conn).execute(
        "SELECT seq, title, body, paths, tags, search_aux, term_counts "
        f"FROM memory_records WHERE {where} ORDER BY seq LIMIT ?", (seq, chunk)).fetchall()
    changed = []
    for row_seq, title, body, paths, tags, old_aux, old_counts in rows:
        aux = ftsquery.index_aux_text(title, body, json.loads(paths), json.loads(tags))
        counts = term_counts(conn, title, body, aux)
        if aux != old_aux or counts != old_counts:
            changed.append((aux, counts, row_seq, title, body, paths, tags))
    return (rows[-1][0] if rows else None), changed


def update_derived(conn: sqlite3.Connection, changed: list[Derived]) -> None:
    """Store derived columns computed off the writer, only where the row still has the title,
    body, paths and tags they were computed from (a row edited since keeps what its writer
    stored)."""
    conn.executemany("UPDATE memory_records SET search_aux = ?, term_counts = ? WHERE seq = ? "
                     "AND title IS ? AND body = ? AND paths = ? AND tags = ?", changed)


# --- statistics ------------------------------------------------------------------------------


@dataclass(frozen=True)
class IndexStats:
    rows: int  # records in the index
    total_tokens: int  # summed length of the records with stored counts
    counted: int  # how many records have stored counts
    max_rowid: int

    @property
    def avgdl(self) -> float:
        return self.total_tokens / self.counted if self.counted else 0.0


_STATS_SQL = ("SELECT rows, counted, tokens, (SELECT max(seq) FROM memory_records) "
              "FROM fts_stats WHERE id = 1")


def index_stats(conn: sqlite3.Connection) -> IndexStats:
    """Row count, length total and largest rowid of the index (fts_stats, migration 0010)."""
    row = plain_cursor(conn).execute(_STATS_SQL).fetchone()
    if row is None:
        return IndexStats(0, 0, 0, 0)
    rows, counted, tokens, max_rowid = row
    return IndexStats(rows, tokens, counted, max_rowid or 0)


# --- searches for the candidate planner ------------------------------------------------------


def capped_counts(conn: sqlite3.Connection, terms: Sequence[str], cap: int | None,
                  after: int | None = None) -> list[int]:
    """Rows (with rowid > `after`, if given) matching each term, counting each to at most
    `cap` (None: no cap), in one statement."""
    window = "" if after is None else " AND rowid > ?"
    limit = "" if cap is None else " LIMIT ?"
    sub = ("(SELECT count(*) FROM (SELECT 1 FROM memory_fts WHERE memory_fts MATCH ?"
           f"{window}{limit}))")
    binds: list[Any] = []
    for term in terms:
        binds.append(ftsquery.quote_term(term))
        binds += [] if after is None else [after]
        binds += [] if cap is None else [cap]
    return list(plain_cursor(conn).execute("SELECT " + ", ".join([sub] * len(terms)),
                                           binds).fetchone())


def hit_lists(conn: sqlite3.Connection, groups: Sequence[tuple[str, int]],
              limit: int | Sequence[int]) -> dict[tuple[str, int], array[int]]:
    """Rowids matching each (term, after rowid), the first `limit` of each in rowid order
    (one limit for all groups, or one per group), in one statement (one comma-separated text
    per term: far fewer Python steps than a result row per hit)."""
    sub = ("(SELECT group_concat(rowid) FROM (SELECT rowid FROM memory_fts "
           "WHERE memory_fts MATCH ? AND rowid > ? ORDER BY rowid LIMIT ?))")
    limits = [limit] * len(groups) if isinstance(limit, int) else list(limit)
    binds: list[Any] = []
    for (term, min_rowid), most in zip(groups, limits, strict=True):
        binds += [ftsquery.quote_term(term), min_rowid, most]
    lists = plain_cursor(conn).execute("SELECT " + ", ".join([sub] * len(groups)),
                                       binds).fetchone()
    return {group: array("q", map(int, text.split(",")) if text else ())
            for group, text in zip(groups, lists, strict=True)}


def rows_by_seq(conn: sqlite3.Connection, columns: str,
                seqs: list[int]) -> list[tuple[Any, ...]]:
    """`columns` of the memory_records rows whose seq is one of `seqs`, in one statement."""
    return plain_cursor(conn).execute(
        f"SELECT {columns} FROM memory_records WHERE seq IN (SELECT value FROM json_each(?))",
        (json.dumps(seqs),)).fetchall()


# --- upkeep ----------------------------------------------------------------------------------


def rebuild(conn: sqlite3.Connection) -> int:
    """Rebuild the FTS index from memory_records (FTS5's 'rebuild' command); returns how many
    records it now indexes."""
    conn.execute("INSERT INTO memory_fts (memory_fts) VALUES ('rebuild')")
    return plain_cursor(conn).execute("SELECT count(*) FROM memory_records").fetchone()[0]


def integrity_check(conn: sqlite3.Connection) -> bool:
    """FTS5's 'integrity-check' of the index against memory_records (rank 1: against the
    content too). True when it passes; a damaged index raises sqlite3.DatabaseError."""
    conn.execute("INSERT INTO memory_fts (memory_fts, rank) VALUES ('integrity-check', 1)")
    return True


def merge_step(conn: sqlite3.Connection, pages: int) -> bool:
    """One step of FTS5's incremental 'merge' (about `pages` pages written); whether it did any
    work. As the FTS5 documentation says, a step that changed fewer than two rows (by
    sqlite3_total_changes) found nothing to merge.

    It merges segments of the same level only (migration 0006 sets 'usermerge' to 2, so two on
    a level are enough): new small segments are merged with each other, and the big segment of
    a large index is rewritten only when a merge reaches its level, as in any log-structured
    merge. (A negative count would rewrite the whole index every time.)
    """
    before = conn.total_changes
    conn.execute("INSERT INTO memory_fts (memory_fts, rank) VALUES ('merge', ?)", (abs(pages),))
    return conn.total_changes - before >= 2
