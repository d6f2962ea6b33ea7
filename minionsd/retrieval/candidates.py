"""Candidate records for task-aware retrieval: a bounded FTS5 search, read-only.

This module owns the SQL that turns query terms into a pool of candidate records with a lexical
score, and keeps one invariant: it only returns records retrieval may show, i.e. status
``active``, not past ``expires_at``, scope ``global`` / ``project:<project>`` /
``agent:<agent>``, and not ``procedural`` with ``agent`` or ``external`` trust. Terms are always
quoted (:mod:`minionsd.ftsquery`), so no text can cause an FTS5 syntax error.

Why not one OR query over all terms: bm25 must score every row that matches any term, and task
text always holds words like *test*, *cache* or *retry* that occur in most notes, so that query
scores most of the table (a third of a second at 100k notes). Here the FTS5 work is bounded by
``ROW_BUDGET`` hits whatever the terms are:

1. **Document frequencies.** One statement counts each term's matching rows, stopping at
   ``RARE_BUDGET + 1``: a rare term's df is exact, a common term costs no more than the cap.
   For a term that reaches the cap the df is estimated from the newest ``SAMPLE_ROWS`` rows.
   Non-zero dfs are cached per database for a few minutes (a df that has grown since only
   shifts an idf a little); a zero only until any record changes, so a term that just
   appeared in a new record is searched at once.
2. **Pool.** The rarest terms whose hits add up to at most ``RARE_BUDGET`` select candidates
   from every row. Up to ``WIDE_TERMS`` further terms that occur in at most ``COMMON_SHARE`` of
   the rows select candidates too, but only from the newest rows when their hits would not fit
   the rest of the budget (a rowid window). More common terms never select candidates. Each hit
   adds its term's idf to the row; the ``POOL_FACTOR * limit`` rows with the highest sums (then
   the newest) that pass the retrieval filters form the pool. The filters are checked in the
   in-memory record view (:mod:`minionsd.retrieval.recordview`), which also caches hit lists
   per term, and term counts and rows per record, until the records change.
3. **Score.** Each pool row gets bm25 over *all* terms that occur in the index, computed with
   FTS5's formula and parameters: k1 = 1.2, b = 0.75, column weights title 4, body 1, aux 2,
   avgdl from the FTS5 averages record, term counts and row length from the counts stored with
   the record (:func:`term_counts`; a row without them is tokenised here; the length of a
   non-ASCII row is read from FTS5's ``docsize`` table). It equals what
   ``bm25(memory_fts, 4, 1, 2)`` gives in the one-OR query, up to the df estimates. The best
   ``limit`` rows are read in full and returned with it as ``bm25`` (more negative is better)
   and ``matched_terms``.

So a term too common to select candidates still counts in the score, and the cost does not grow
with the table: what grows is only the chance that, for a topic with thousands of notes, the
pool holds its newest notes rather than the very best-scoring old ones.

Counting a term in a row needs the porter stems of the row's words. They come from SQLite itself
(a private in-memory FTS5 table with the same tokenizer, behind a bounded cache), so Python and
FTS5 never disagree about a stem.
"""

from __future__ import annotations

import functools
import json
import math
import re
import sqlite3
import threading
import time
from array import array
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from minionsd.ftsquery import match_expression, quote_term
from minionsd.retrieval.recordview import VIEWS, RecordView

TOKENIZER = "porter unicode61 remove_diacritics 2"
BM25_WEIGHTS = (4.0, 1.0, 2.0)  # title, body, aux: the same weights memory.search uses
BM25_K1 = 1.2
BM25_B = 0.75
# Tuned on 100k synthetic notes (see docs/retrieval.md); larger values buy little recall.
ROW_BUDGET = 800  # FTS5 hits the candidate selection may read, in total
RARE_BUDGET = ROW_BUDGET // 2  # of which the rarest terms, searched in every row
WIDE_TERMS = 6  # further terms that select candidates, in recent rows if need be
COMMON_SHARE = 0.10  # a term in more rows than this share never selects candidates
SAMPLE_ROWS = 3000  # newest rows used to estimate a common term's df
POOL_FACTOR = 1.5  # rows scored with all terms, per returned candidate
DF_CACHE_SECONDS = 300.0
TF_MAX_CHARS = 65536  # per column: term counting reads at most this much of a huge body
# FTS5 keeps at most this many bytes of a token (FTS5_MAX_TOKEN_SIZE) and cuts a longer one
# there, mid-character if need be, so the index then holds a term that is not valid UTF-8.
# Such a word is still one word of its row, but no query term is that long (query terms have
# at most 100 characters), so it gets no stem and is never counted or looked up.
MAX_TOKEN_BYTES = 32768
COUNTS_FORMAT = "2"  # first word of a stored term_counts value (see term_counts)

_RECORD_COLUMNS = (
    "id", "type", "scope", "status", "trust", "title", "body", "source", "author", "project",
    "agent", "task", "pr", "paths", "tags", "importance", "confidence", "pinned", "created_at",
    "updated_at", "expires_at", "superseded_by", "retracted_reason", "meta",
)
_JSON_COLUMNS = {"paths": list, "tags": list, "meta": dict}
# ASCII bytes other than letters and digits become spaces; bytes >= 0x80 stay, so a multi-byte
# character stays inside its word until the slower Unicode split.
_ASCII_SEPARATORS = bytes(b for b in range(128) if not chr(b).isalnum())
_ASCII_SPLIT = bytes.maketrans(_ASCII_SEPARATORS, b" " * len(_ASCII_SEPARATORS))
_UNICODE_TOKEN_RE = re.compile(r"[^\W_]+")


# --- stems and words -----------------------------------------------------------------------


class _Stemmer:
    """Porter stems exactly as FTS5 makes them, from a private in-memory FTS5 table.

    Keys are UTF-8 words (lower-cased bytes, as :func:`_tokens` makes them); a word that FTS5
    splits into several tokens, or drops, or one longer than MAX_TOKEN_BYTES, maps to None, and
    so does a word whose stem FTS5 gives back as bytes that are not UTF-8. Looking words up
    never fails on what the words hold.
    """

    _MAX_CACHE = 200_000
    _MAX_CACHE_BYTES = 32 << 20  # words of up to MAX_TOKEN_BYTES each: bound the bytes too

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.cache: dict[bytes, str | None] = {}
        # The reverse map lets a pool's relevant words be found with set operations.
        self.words_by_stem: dict[str, set[bytes]] = defaultdict(set)
        self._conn: sqlite3.Connection | None = None
        self._cached_bytes = 0

    def lookup(self, words: Iterable[bytes]) -> dict[bytes, str | None]:
        """word -> stem for each of `words`."""
        wanted = set(words)
        with self._lock:  # uncontended almost always; it keeps a cache reset from racing
            self._ensure(wanted)
            return {w: self.cache[w] for w in wanted}

    def matching(self, words: set[bytes], wanted: Iterable[str]) -> dict[bytes, str]:
        """The words (of `words`) whose stem is one of `wanted`, with that stem."""
        with self._lock:
            self._ensure(words)
            found: dict[bytes, str] = {}
            for stem in wanted:
                for word in self.words_by_stem.get(stem, set()) & words:
                    found[word] = stem
            return found

    def _ensure(self, words: set[bytes]) -> None:
        """Every one of `words` in the cache (a full cache is emptied first, so the words
        looked up before stay there only if they are among `words`)."""
        missing = words.difference(self.cache)
        if not missing:
            return
        added_bytes = sum(map(len, missing))
        if (len(self.cache) + len(missing) > self._MAX_CACHE
                or self._cached_bytes + added_bytes > self._MAX_CACHE_BYTES):
            self.cache.clear()
            self.words_by_stem.clear()
            missing = set(words)
            self._cached_bytes = 0
            added_bytes = sum(map(len, missing))
        self._cached_bytes += added_bytes
        for word, stem in self._lookup(list(missing)).items():
            self.cache[word] = stem
            if stem is not None:
                self.words_by_stem[stem].add(word)

    def _lookup(self, words: list[bytes]) -> dict[bytes, str | None]:
        if self._conn is None:
            conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
            conn.execute(f"CREATE VIRTUAL TABLE words USING fts5(w, tokenize='{TOKENIZER}')")
            conn.execute("CREATE VIRTUAL TABLE word_terms USING fts5vocab(words, 'instance')")
            self._conn = conn
        # ASCII letters/digits are always exactly one token, so they share one row and are
        # told apart by offset; any other word gets a row of its own.
        simple = [w for w in words if w.isascii() and w.isalnum() and len(w) <= MAX_TOKEN_BYTES]
        other = [w for w in words
                 if not (w.isascii() and w.isalnum()) and len(w) <= MAX_TOKEN_BYTES]
        per_row: dict[int, list[tuple[int, str]]] = defaultdict(list)
        conn = self._conn
        conn.execute("BEGIN")
        try:
            if simple:
                joined = b" ".join(simple).decode("ascii")
                conn.execute("INSERT INTO words (rowid, w) VALUES (0, ?)", (joined,))
            conn.executemany(
                "INSERT INTO words (rowid, w) VALUES (?, ?)",
                ((i, w.decode("utf-8", errors="replace")) for i, w in enumerate(other, start=1)),
            )
            # Terms as bytes: Python's own decoding would raise on a term that is not UTF-8.
            for term, doc, offset in conn.execute(
                    "SELECT CAST(term AS BLOB), doc, offset FROM word_terms"):
                per_row[doc].append((offset, _utf8(term)))
        finally:
            conn.execute("ROLLBACK")
        found: dict[bytes, str | None] = {simple[offset]: term for offset, term in per_row[0]}
        for index, word in enumerate(other, start=1):
            tokens = per_row[index]
            found[word] = tokens[0][1] if len(tokens) == 1 else None
        return {w: found.get(w) for w in words}


def _utf8(term: bytes | None) -> str | None:
    """A term read from FTS5 as text, or None when its bytes are not UTF-8."""
    try:
        return term.decode("utf-8") if term is not None else None
    except UnicodeDecodeError:
        return None


_STEMMER = _Stemmer()


def term_counts(title: str, body: str, aux: str) -> str:
    """A record's stemmed, column-weighted term counts, as stored in memory_records.term_counts.

    Text, one line per stem: a header ``"2 <n> <x>"`` (format 2; n = words in all three columns;
    x = 1 when that count is exact, i.e. ASCII text read whole), then ``"<stem> <f>"`` where f
    is the occurrences in title, body and aux weighted by BM25_WEIGHTS, as FTS5's bm25 weighs
    them. Computed once at write time so a retrieval reads it instead of tokenising every
    candidate's text; a line format lets one regular expression pull the query's stems out.
    """
    columns = [_tokens(text or "") for text in (title, body, aux)]
    exact = all(len(t or "") <= TF_MAX_CHARS and (t or "").isascii() for t in (title, body, aux))
    stemmed = _STEMMER.lookup({w for tokens in columns for w in tokens})
    weighted: dict[str, float] = {}
    for tokens, weight in zip(columns, BM25_WEIGHTS, strict=True):
        for word, n in Counter(tokens).items():
            stem = stemmed.get(word)
            if stem is not None:
                weighted[stem] = weighted.get(stem, 0) + n * weight
    lines = [f"{COUNTS_FORMAT} {sum(map(len, columns))} {int(exact)}"]
    lines += [f"{stem} {_number(f)}" for stem, f in weighted.items()]
    return "\n".join(lines) + "\n"


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) else repr(value)


def stems(words: Iterable[str]) -> dict[str, str | None]:
    """FTS5 porter stems of `words` (None for a word that is not exactly one token)."""
    keyed = {w: w.lower().encode("utf-8", errors="replace") for w in words}
    found = _STEMMER.lookup(keyed.values())
    return {w: found[k] for w, k in keyed.items()}


def _tokens(text: str) -> list[bytes]:
    """The words of `text` as unicode61 splits them, lower-cased UTF-8 (ASCII fast path)."""
    data = text[:TF_MAX_CHARS].encode("utf-8", errors="replace").lower()
    words = data.translate(_ASCII_SPLIT).split()
    if data.isascii():
        return words
    out: list[bytes] = []
    for w in words:
        if w.isascii():
            out.append(w)
        else:
            decoded = w.decode("utf-8", errors="replace")
            out.extend(t.encode("utf-8") for t in _UNICODE_TOKEN_RE.findall(decoded))
    return out


# --- index statistics, hits and document frequencies ---------------------------------------


@dataclass(frozen=True)
class IndexStats:
    rows: int
    total_tokens: int
    max_rowid: int

    @property
    def avgdl(self) -> float:
        return self.total_tokens / self.rows if self.rows else 0.0


def varints(blob: bytes) -> list[int]:
    """Decode SQLite varints (big-endian 7-bit groups; a 9th byte carries 8 bits)."""
    values: list[int] = []
    i, n = 0, len(blob)
    while i < n:
        value = 0
        for j in range(9):
            if i >= n:
                return values
            byte = blob[i]
            i += 1
            if j == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if not byte & 0x80:
                break
        values.append(value)
    return values


def index_stats(conn: sqlite3.Connection) -> IndexStats:
    """Row count and token total of memory_fts, from its averages record (data id 1)."""
    cur = _cursor(conn)
    row = cur.execute("SELECT block FROM memory_fts_data WHERE id = 1").fetchone()
    values = varints(row[0]) if row and row[0] else []
    max_rowid = cur.execute("SELECT max(id) FROM memory_fts_docsize").fetchone()[0] or 0
    if len(values) >= 2:
        return IndexStats(values[0], sum(values[1:]), max_rowid)
    rows = cur.execute("SELECT count(*) FROM memory_fts_docsize").fetchone()[0]
    return IndexStats(rows, 0, max_rowid)


class _DfCache:
    """Document frequencies per database and term, for a few minutes or until the table's row
    count moves by 5%; a zero only until the next change to memory_records (record view token),
    so a term that just appeared in a new record is searched at once."""

    _MAX_ENTRIES = 50_000

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[tuple[str, str], tuple[int, int, float, int | None]] = {}

    def get(self, db: str, term: str, rows: int, now: float, token: int | None) -> int | None:
        entry = self._entries.get((db, term))
        if entry is None:
            return None
        df, rows_then, expires, token_then = entry
        if df == 0:
            return 0 if token is not None and token == token_then else None
        if now > expires or abs(rows - rows_then) > 0.05 * max(rows_then, 1):
            return None
        return df

    def put(self, db: str, term: str, df: int, rows: int, now: float,
            token: int | None) -> None:
        if df == 0 and token is None:
            return
        with self._lock:
            if len(self._entries) >= self._MAX_ENTRIES:
                self._entries.clear()
            self._entries[(db, term)] = (df, rows, now + DF_CACHE_SECONDS, token)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


_DF_CACHE = _DfCache()


def clear_caches() -> None:
    """Forget cached document frequencies and record views (tests; after bulk imports)."""
    _DF_CACHE.clear()
    VIEWS.clear()


_DB_KEYS: dict[int, tuple[sqlite3.Connection, str]] = {}


def _database_key(conn: sqlite3.Connection) -> str:
    """The connection's main database file and identity (cached: the connection is kept
    referenced, so its id cannot be reused while the entry exists)."""
    known = _DB_KEYS.get(id(conn))
    if known is not None and known[0] is conn:
        return known[1]
    key = f"memory:{id(conn)}"
    for _seq, name, path in _cursor(conn).execute("PRAGMA database_list"):
        if name == "main" and path:
            # With the database's own random id (migration 0006): a file replaced at the
            # same path is another database, even if the filesystem reuses the inode.
            row = _cursor(conn).execute(
                "SELECT value FROM counters WHERE name = 'database_id'").fetchone()
            key = f"{path}#{row[0] if row else ''}"
    if len(_DB_KEYS) >= 64:
        _DB_KEYS.clear()
    _DB_KEYS[id(conn)] = (conn, key)
    return key


def document_frequencies(
    conn: sqlite3.Connection, terms: Sequence[str], stats: IndexStats,
    token: int | None = None,
) -> dict[str, int]:
    """df of each term: exact up to RARE_BUDGET, above it estimated.

    Results are cached (see _DfCache); a zero only with the record view's `token`, and only
    until the records change. A cached df that has grown since only shifts an idf a little.
    """
    db = _database_key(conn)
    now = time.monotonic()
    cap = RARE_BUDGET + 1
    dfs: dict[str, int] = {}
    unknown = []
    for term in terms:
        cached = _DF_CACHE.get(db, term, stats.rows, now, token)
        if cached is None:
            unknown.append(term)
        else:
            dfs[term] = cached
    if not unknown:
        return dfs
    cur = _cursor(conn)
    # One statement, one capped count per term: a common term costs no more than the cap.
    sub = "(SELECT count(*) FROM (SELECT 1 FROM memory_fts WHERE memory_fts MATCH ? LIMIT ?))"
    binds: list[Any] = []
    for term in unknown:
        binds += [quote_term(term), cap]
    counts = cur.execute("SELECT " + ", ".join([sub] * len(unknown)), binds).fetchone()
    common = []
    for term, count in zip(unknown, counts, strict=True):
        dfs[term] = count
        if count >= cap:
            common.append(term)
        else:
            _DF_CACHE.put(db, term, count, stats.rows, now, token)
    if common:
        low = max(0, stats.max_rowid - SAMPLE_ROWS)
        window = cur.execute(
            "SELECT count(*) FROM memory_fts_docsize WHERE id > ?", (low,)
        ).fetchone()[0]
        sub = "(SELECT count(*) FROM memory_fts WHERE memory_fts MATCH ? AND rowid > ?)"
        binds = []
        for term in common:
            binds += [quote_term(term), low]
        samples = cur.execute("SELECT " + ", ".join([sub] * len(common)), binds).fetchone()
        for term, hits in zip(common, samples, strict=True):
            estimate = round(hits * stats.rows / window) if window else cap
            dfs[term] = min(max(estimate, cap), max(stats.rows, cap))
            _DF_CACHE.put(db, term, dfs[term], stats.rows, now, token)
    return dfs


# --- the plan --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """Which terms select candidates (see the module docstring) and which are scored."""

    rare: tuple[str, ...]  # searched in every row
    wide: tuple[str, ...]  # searched in rows with rowid > wide_min_rowid
    wide_min_rowid: int
    scored: tuple[str, ...]  # every term that occurs in the index


def plan_query(terms: Sequence[str], df: dict[str, int], stats: IndexStats) -> Plan | None:
    """Choose the candidate searches; None when no term occurs in the index."""
    present = [t for t in dict.fromkeys(terms) if df.get(t, 0) > 0]
    if not present:
        return None
    order = {t: i for i, t in enumerate(present)}
    ranked = sorted(present, key=lambda t: (df[t], order[t]))
    rare: list[str] = []
    used = 0
    for term in ranked:
        if used + df[term] > RARE_BUDGET:
            break
        rare.append(term)
        used += df[term]
    wide = [t for t in ranked[len(rare) :] if df[t] <= COMMON_SHARE * stats.rows][:WIDE_TERMS]
    if not rare and not wide:
        wide = ranked[:2]  # every term is common: look for the two rarest in recent rows
    wide_df = sum(df[t] for t in wide)
    room = ROW_BUDGET - used
    min_rowid = 0
    if wide_df > room:
        min_rowid = max(0, stats.max_rowid - math.ceil(room * stats.rows / wide_df))
    return Plan(tuple(rare), tuple(wide), min_rowid, tuple(present))


# --- the query -------------------------------------------------------------------------------


def _cursor(conn: sqlite3.Connection) -> sqlite3.Cursor:
    cur = conn.cursor()
    cur.row_factory = None  # plain tuples, whatever the connection's row factory is
    return cur


def _filters(project: str | None, agent: str | None) -> tuple[str, dict[str, Any]]:
    scopes = ["global"]
    if project:
        scopes.append(f"project:{project}")
    if agent:
        scopes.append(f"agent:{agent}")
    binds = {f"scope{i}": s for i, s in enumerate(scopes)}
    sql = (
        "r.status = 'active' AND (r.expires_at IS NULL OR r.expires_at > :now) "
        f"AND r.scope IN ({', '.join(':' + k for k in binds)}) "
        "AND NOT (r.type = 'procedural' AND r.trust IN ('agent', 'external'))"
    )
    return sql, binds


def _decode(row: Sequence[Any]) -> dict[str, Any]:
    record = dict(zip(_RECORD_COLUMNS, row, strict=False))
    for column, kind in _JSON_COLUMNS.items():
        raw = record[column]
        if raw in ("[]", "{}", None, ""):
            record[column] = kind()
            continue
        try:
            value = json.loads(raw)
        except (TypeError, ValueError):
            value = kind()
        record[column] = value if isinstance(value, kind) else kind()
    record["pinned"] = bool(record["pinned"])
    return record


def _idf(df: int, rows: int) -> float:
    # fetch_candidates reads the row count and the dfs in one snapshot, but a df may come from
    # the cache, counted while the table had more rows: a df above the row count would make
    # the logarithm's argument negative. Such a term is in every row, so it counts as df = N.
    df = min(df, rows)
    idf = math.log((rows - df + 0.5) / (df + 0.5)) if rows else 0.0
    return idf if idf > 0 else 1e-6  # FTS5 clamps the same way


def _scopes(project: str | None, agent: str | None) -> list[str]:
    scopes = ["global"]
    if project:
        scopes.append(f"project:{project}")
    if agent:
        scopes.append(f"agent:{agent}")
    return scopes


def _pool(conn: sqlite3.Connection, view: RecordView, token: int, plan: Plan,
          idf: dict[str, float], size: int, scopes: list[str], now_iso: str) -> list[int]:
    """The seqs of the `size` recallable rows the selecting terms point at most strongly.

    Every hit of a selecting term adds that term's idf to its row; rows are taken by that sum,
    then newest first, and the recall filters are checked in the in-memory view in that order
    until `size` rows pass. Hit lists come from FTS5, or from the view's cache while no record
    has changed.
    """
    groups = [(t, 0) for t in plan.rare] + [(t, plan.wide_min_rowid) for t in plan.wide]
    hits, missing = view.cached("hits", groups)
    if missing:
        fetched = _hits(conn, missing)
        view.remember("hits", fetched, token, lambda hits: 64 + hits.itemsize * len(hits))
        hits |= fetched
    weights: dict[int, float] = {}
    for group in groups:
        # Dictionary and set operations, not a Python step per hit: most hits are new rows.
        added = dict.fromkeys(hits[group], idf[group[0]])
        for seq in added.keys() & weights.keys():
            added[seq] += weights[seq]
        weights.update(added)
    # (weight, seq) pairs, largest first: by weight, then newest.
    ranked = sorted(zip(weights.values(), weights.keys(), strict=True), reverse=True)
    return view.recallable((seq for _w, seq in ranked), scopes, now_iso, size)


def _hits(conn: sqlite3.Connection,
          groups: list[tuple[str, int]]) -> dict[tuple[str, int], array[int]]:
    """Rowids matching each (term, after rowid), at most ROW_BUDGET each, in one statement
    (one comma-separated text per term: far fewer Python steps than a result row per hit)."""
    sub = ("(SELECT group_concat(rowid) FROM (SELECT rowid FROM memory_fts "
           f"WHERE memory_fts MATCH ? AND rowid > ? LIMIT {ROW_BUDGET}))")
    binds: list[Any] = []
    for term, min_rowid in groups:
        binds += [quote_term(term), min_rowid]
    lists = _cursor(conn).execute("SELECT " + ", ".join([sub] * len(groups)), binds).fetchone()
    return {group: array("q", map(int, text.split(",")) if text else ())
            for group, text in zip(groups, lists, strict=True)}


def _record_view(conn: sqlite3.Connection) -> RecordView:
    return VIEWS.get(_database_key(conn))


def _by_seq(conn: sqlite3.Connection, table: str, columns: str,
            seqs: list[int]) -> list[tuple[Any, ...]]:
    """`columns` of the rows of `table` (memory_records, or an FTS5 shadow table keyed by
    id = seq) whose key is one of `seqs`, in one statement."""
    key = "id" if table.startswith("memory_fts") else "seq"
    return _cursor(conn).execute(
        f"SELECT {columns} FROM {table} WHERE {key} IN (SELECT value FROM json_each(?))",
        (json.dumps(seqs),)).fetchall()


def _full_rows(conn: sqlite3.Connection, view: RecordView, token: int,
               seqs: list[int]) -> dict[int, dict[str, Any]]:
    """Decoded records by seq (shared dicts from the view's cache: do not change them)."""
    found, missing = view.cached("rows", seqs)
    if missing:
        rows = _by_seq(conn, "memory_records", f"seq, {', '.join(_RECORD_COLUMNS)}", missing)
        fetched = {row[0]: _decode(row[1:]) for row in rows}
        view.remember("rows", fetched, token, _row_bytes)
        found |= fetched
    return found


def _row_bytes(record: dict[str, Any]) -> int:
    """Roughly what a decoded row holds in memory (its text dominates)."""
    return 600 + sum(len(record[k] or "") for k in ("title", "body", "source")) + 64 * (
        len(record["paths"]) + len(record["tags"]))


def _counts_bytes(entry: _Stored) -> int:
    # The text, and its parsed form once the row is parsed whole (measured: ~3.3x the text).
    return 400 + 5 * len(entry.text)


def fetch_candidates(
    conn: sqlite3.Connection,
    terms: list[str],
    *,
    project: str | None,
    agent: str | None,
    now_iso: str,
    limit: int,
) -> list[dict[str, Any]]:
    """Up to `limit` retrievable records matching the terms, best bm25 first.

    Each dict has the Record keys (JSON columns decoded, ``pinned`` a bool) plus ``bm25``
    (more negative is better) and ``matched_terms`` (how many of `terms` it contains).
    Ties are broken by id.
    """
    terms = [t for t in dict.fromkeys(terms) if t]
    if not terms or limit <= 0:
        return []
    # One read transaction, so the row count, the document frequencies, the hits and the rows
    # all come from one snapshot: a record committed between two statements cannot make a df
    # exceed the row count it is divided by, nor a hit point at a row not read.
    own_snapshot = not conn.in_transaction
    if own_snapshot:
        _cursor(conn).execute("BEGIN")
    try:
        return _fetch(conn, terms, project, agent, now_iso, limit)
    finally:
        if own_snapshot:
            _cursor(conn).execute("COMMIT")


def _fetch(conn: sqlite3.Connection, terms: list[str], project: str | None, agent: str | None,
           now_iso: str, limit: int) -> list[dict[str, Any]]:
    view = _record_view(conn)
    token = view.sync(conn)
    stats = index_stats(conn)
    if stats.rows == 0:
        return []
    dfs = document_frequencies(conn, terms, stats, token)
    plan = plan_query(terms, dfs, stats)
    if plan is None:
        return []
    idf = {t: _idf(dfs[t], stats.rows) for t in plan.scored}
    pool = _pool(conn, view, token, plan, idf, math.ceil(POOL_FACTOR * limit),
                 _scopes(project, agent), now_iso)
    if not pool:
        return []
    stem_terms = _stem_terms(plan.scored)
    stem_idf = {stem: sum(idf[t] for t in group) for stem, group in stem_terms.items()}
    counted = _count_pool(conn, view, token, pool, stem_terms)
    inexact = [c.seq for c in counted if not c.exact_length]
    lengths = {}
    if inexact:
        lengths = {seq: sum(varints(blob or b""))
                   for seq, blob in _by_seq(conn, "memory_fts_docsize", "id, sz", inexact)}
    terms_per_stem = {stem: len(group) for stem, group in stem_terms.items()}
    # (score, id, seq, row): seqs are unique, so the sort never compares two rows.
    best = sorted(
        (_bm25(c.freq, stem_idf, lengths.get(c.seq, c.length), stats.avgdl), c.id, c.seq, c)
        for c in counted)[:limit]
    records = _full_rows(conn, view, token, [seq for _score, _id, seq, _c in best])
    out = []
    for score, _id, seq, counted_row in best:
        record = records.get(seq)
        if record is None:  # deleted since the pool was read; skip rather than fail
            continue
        matched = sum(map(terms_per_stem.__getitem__, counted_row.freq))
        out.append(dict(record, bm25=score, matched_terms=matched))
    return out


@dataclass
class _Counted:
    seq: int
    id: str
    freq: Mapping[str, float]  # query stem -> column-weighted occurrences
    length: int  # words in title + body + aux
    exact_length: bool  # False when FTS5 may count the words differently


class _Stored:
    """A row's stored term counts (cached in the record view).

    A query that needs stems of a row not looked for yet pulls them out of the text with one
    regular expression (one per query, shared by the rows), and the row remembers what it
    found, 0.0 for a stem it lacks. Parsing all of a row's ~150 lines costs about four such
    searches, so a row is parsed whole, once, on its WHOLE_AFTER-th search: rows recalled by
    many different tasks end up as dictionaries (every query then only looks stems up), rows
    recalled once or twice never pay for it. `state` is (whole, counts, searches), replaced in
    one assignment, never changed in place, so threads sharing an entry always see a
    consistent one; the memo of a row not parsed whole holds fewer than WHOLE_AFTER queries'
    stems.
    """

    __slots__ = ("exact", "id", "length", "state", "text")
    WHOLE_AFTER = 4

    def __init__(self, record_id: str, length: int, exact: bool, text: str) -> None:
        self.id = record_id
        self.length = length
        self.exact = exact
        self.text = text
        # Counts are numbers before the row is parsed whole, text after (see _parse_counts).
        self.state: tuple[bool, dict[str, Any], int] = (False, {}, 0)

    def weights(self, key: tuple[str, ...]) -> dict[str, float]:
        """stem -> weighted count for the stems of `key` (the query's stems, sorted) the row
        holds, in `key` order."""
        whole, known, searches = self.state
        if whole:
            return _numbers(key, known)
        try:
            return {stem: value for stem in key if (value := known[stem])}
        except KeyError:
            pass
        if searches + 1 >= self.WHOLE_AFTER:
            parsed = _parse_counts(self.text)
            self._store((True, parsed, searches + 1), searches)
            return _numbers(key, parsed)
        # One pattern per query (compiling one costs as much as searching ~20 rows), so it
        # looks for all of `key`, not only the stems this row has not seen.
        found = {stem: float(value) for stem, value in _stem_pattern(key).findall(self.text)}
        merged = known | dict.fromkeys(key, 0.0) | found
        self._store((False, merged, searches + 1), searches)
        return {stem: value for stem in key if (value := merged[stem])}

    def _store(self, state: tuple[bool, dict[str, Any], int], searches_seen: int) -> None:
        # Another thread may have stored since this one read `state`: keep the newer one (a
        # lost memo would only cost a search again, but a row parsed whole should stay so).
        if self.state[2] == searches_seen:
            self.state = state


def _numbers(key: tuple[str, ...], counts: dict[str, str]) -> dict[str, float]:
    """The non-zero counts of the stems of `key` in a row parsed whole, in `key` order."""
    return {stem: value for stem in key if stem in counts and (value := float(counts[stem]))}


_COUNT_LINE_RE = re.compile(r"\n(\S+) (\S+)")
_COUNT_LINES_RE = re.compile(r"(?:\S+ \S+\n)*")  # the lines after the header, as written
# Stems and counts of rows parsed whole, shared between rows (sys.intern would do, but makes
# strings immortal on Python 3.12). Emptied when full (~10 MB; the bench's 100,000 notes have
# ~27,000 stems); sharing is only a memory saving.
_SHARED: dict[str, str] = {}
_MAX_SHARED = 100_000


def _parse_counts(text: str) -> dict[str, str]:
    """Every stem line of a stored term_counts text (after its header), the count as text.

    Lines are read as the per-query expression reads them (`\n<stem> <count>`). Text as
    term_counts writes it (two words a line) is split on whitespace, which is faster; a
    hand-edited row is read line by line.
    """
    if len(_SHARED) > _MAX_SHARED:
        _SHARED.clear()
    share = _SHARED.setdefault
    if _COUNT_LINES_RE.fullmatch(text, text.find("\n") + 1):
        words = text.split()[3:]
        stems, counts = words[0::2], words[1::2]
    else:
        pairs = _COUNT_LINE_RE.findall(text)
        stems, counts = [p[0] for p in pairs], [p[1] for p in pairs]
    return dict(zip(map(share, stems, stems), map(share, counts, counts), strict=True))


@functools.lru_cache(maxsize=256)
def _stem_pattern(stems_sorted: tuple[str, ...]) -> re.Pattern[str]:
    """Finds the count line of each of these stems in a stored term_counts text."""
    return re.compile("\\n(" + "|".join(map(re.escape, stems_sorted)) + ") (\\S+)")


def _parse_stored(record_id: str, stored: str | None) -> _Stored | None:
    """The header of the line form written by :func:`term_counts`; None for anything else."""
    if not stored or not stored.startswith(COUNTS_FORMAT + " "):
        return None
    header = stored[: stored.find("\n")].split(" ")
    if len(header) != 3 or not header[1].isdigit():
        return None
    return _Stored(record_id, int(header[1]), header[2] == "1", stored)


def _stem_terms(terms: Sequence[str]) -> dict[str, list[str]]:
    """The query's terms grouped by their FTS5 stem (terms that are no single token dropped)."""
    stem_terms: dict[str, list[str]] = defaultdict(list)
    for term, stem in stems(terms).items():
        if stem is not None:
            stem_terms[stem].append(term)
    return stem_terms


def _count_pool(conn: sqlite3.Connection, view: RecordView, token: int, pool: list[int],
                stem_terms: dict[str, list[str]]) -> list[_Counted]:
    """Column-weighted occurrences of each query stem in each pool row, and the row's length.

    Read from the stored counts (cached in the record view, see _Stored); a row without
    them (written before they existed) is tokenised here: the same numbers, only slower.
    """
    found, missing = view.cached("counts", pool)
    unstored = []
    if missing:
        parsed = {}
        for seq, record_id, stored in _by_seq(conn, "memory_records", "seq, id, term_counts",
                                              missing):
            entry = _parse_stored(record_id, stored)
            if entry is None:
                unstored.append(seq)
            else:
                parsed[seq] = entry
        view.remember("counts", parsed, token, _counts_bytes)
        found |= parsed
    key = tuple(sorted(stem_terms))
    out = [_Counted(seq, entry.id, entry.weights(key), entry.length, entry.exact)
           for seq, entry in found.items()]
    if unstored:
        rows = _by_seq(conn, "memory_records", "seq, id, title, body, search_aux", unstored)
        out += _count_text(rows, stem_terms)
    return out


def _count_text(rows: Sequence[tuple[int, str, str, str, str]],
                stem_terms: dict[str, list[str]]) -> list[_Counted]:
    """_Counted by tokenising (seq, id, title, body, search_aux) rows."""
    tokenised: list[tuple[int, str, list[tuple[list[bytes], float]], bool]] = []
    vocabulary: set[bytes] = set()
    for seq, record_id, *texts in rows:
        per_column = []
        exact = True
        for text, weight in zip(texts, BM25_WEIGHTS, strict=True):
            text = text or ""
            # Word counts match unicode61 exactly only for ASCII text that was read whole.
            exact = exact and len(text) <= TF_MAX_CHARS and text.isascii()
            tokens = _tokens(text)
            vocabulary.update(tokens)
            per_column.append((tokens, weight))
        tokenised.append((seq, record_id, per_column, exact))
    # Only words whose stem is a term's stem matter; find them once for the whole pool.
    word_stems = _STEMMER.matching(vocabulary, stem_terms)
    relevant = frozenset(word_stems)
    out = []
    for seq, record_id, per_column, exact in tokenised:
        freq: dict[str, float] = {}
        length = 0
        for tokens, weight in per_column:
            length += len(tokens)
            for word in relevant.intersection(tokens):
                stem = word_stems[word]
                freq[stem] = freq.get(stem, 0.0) + tokens.count(word) * weight
        # In stem order, as stored counts are, so bm25 adds its terms in the same order.
        out.append(_Counted(seq, record_id, {s: freq[s] for s in sorted(freq)}, length, exact))
    return out


def _bm25(freq: Mapping[str, float], idf: dict[str, float], length: int,
          avgdl: float) -> float:
    """FTS5's bm25 for one row, as a negative number like bm25() returns.

    `freq` and `idf` are by stem; a stem's idf is the sum of its terms' idfs (two query words
    with one stem are two phrases to FTS5, each counting the same occurrences).
    """
    norm = BM25_K1 * (1.0 - BM25_B + (BM25_B * length / avgdl if avgdl else 0.0))
    total = 0.0
    for stem, f in freq.items():
        total += idf[stem] * f * (BM25_K1 + 1.0) / (f + norm)
    return -total


def fetch_candidates_naive(
    conn: sqlite3.Connection,
    terms: list[str],
    *,
    project: str | None,
    agent: str | None,
    now_iso: str,
    limit: int,
) -> list[dict[str, Any]]:
    """Reference: one OR query over all terms, FTS5's bm25 (slow on large tables).

    Same filters and result shape as :func:`fetch_candidates`, without ``matched_terms``;
    tests and the benchmark compare the two.
    """
    expr = match_expression(list(dict.fromkeys(terms)))
    if expr is None or limit <= 0:
        return []
    where, binds = _filters(project, agent)
    weights = ", ".join(str(w) for w in BM25_WEIGHTS)
    rows = _cursor(conn).execute(
        f"""SELECT {', '.join('r.' + c for c in _RECORD_COLUMNS)},
                   bm25(memory_fts, {weights}) AS score
            FROM memory_fts JOIN memory_records AS r ON r.seq = memory_fts.rowid
            WHERE memory_fts MATCH :expr AND {where}
            ORDER BY score, r.id LIMIT :limit""",
        binds | {"expr": expr, "now": now_iso, "limit": limit},
    ).fetchall()
    out = []
    for row in rows:
        record = _decode(row[:-1])
        record["bm25"] = row[-1]
        out.append(record)
    return out
