"""RecallIndex: everything retrieval keeps between calls, for one open database.

The daemon makes one per open Database (the App owns it) and hands it to retrieval and to the
jobs that change the index; a test makes a fresh one. Its lifetime is the database's, so
nothing in it is keyed by database, and nothing is module-global. Thread-safe: the reader pool
shares one index.

It holds:

* the record view (:mod:`.recordview`): the recall filter table and bounded caches of hit
  lists, parsed term counts and decoded rows, kept current through ``record_changes``;
* document frequencies by term for a few minutes (a zero only until any record changes);
* whether a word is rare (:mod:`.related`) for as long, for the same rare limit;
* FTS5's stem of each query word seen (a pure function of the word; asking FTS5 costs five
  statements per retrieval, 5% of a repeated one), and the stems of the stop words;
* the string table parsed rows share;
* memos of pure functions of record text for ranking and packing (:mod:`.memos`).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterable

from minionsd.memory.retrieval import planner
from minionsd.memory.retrieval.memos import TextMemos
from minionsd.memory.retrieval.recordview import MAX_CACHED, RecordView
from minionsd.storage import fts
from minionsd.text.ftsquery import STOP_WORDS

DF_CACHE_SECONDS = 300.0
MAX_DFS = 50_000
MAX_STEMS = 50_000
MAX_SHARED = 100_000  # strings (~10 MB; the bench's 100,000 notes have ~27,000 stems)


class RecallIndex:
    """Retrieval's state for one open database (see the module docstring)."""

    def __init__(self, max_cached: int = MAX_CACHED) -> None:
        self.view = RecordView(max_cached)
        self._lock = threading.Lock()
        self._dfs: dict[str, tuple[int, int, float, int | None]] = {}
        self._stems: dict[str, str | None] = {}
        self._stop_stems: frozenset[str] | None = None
        self._rarity: dict[str, tuple[bool, int, float]] = {}  # word -> (rare, limit, expires)
        self.shared: dict[str, str] = {}
        self.numbers: dict[str, float] = {}  # count text -> number, shared by parsed rows
        self.memos = TextMemos()

    def forget(self) -> None:
        """Drop every cached value (after the FTS index was rebuilt in bulk)."""
        self.view.clear()
        with self._lock:
            self._dfs.clear()
            self._rarity.clear()
            self.shared.clear()
            self.numbers.clear()
            self.memos = TextMemos()  # rendered items and shingles hold records' text

    # --- document frequencies --------------------------------------------------------------

    def document_frequencies(self, conn: sqlite3.Connection, terms: Iterable[str],
                             stats: fts.IndexStats, token: int) -> dict[str, int]:
        """df of each term (see planner.count_dfs), cached for DF_CACHE_SECONDS or until the
        row count moves by 5%; a zero only until the next change to memory_records (the view's
        `token`), so a term that just appeared in a new record is searched at once. A cached df
        that has grown since only shifts an idf a little."""
        now = time.monotonic()
        out: dict[str, int] = {}
        unknown = []
        for term in dict.fromkeys(terms):
            entry = self._dfs.get(term)
            if entry is not None:
                df, rows_then, expires, token_then = entry
                if df == 0 and token == token_then:
                    out[term] = 0
                    continue
                if (df and now <= expires
                        and abs(stats.rows - rows_then) <= 0.05 * max(rows_then, 1)):
                    out[term] = min(df, stats.rows)
                    continue
            unknown.append(term)
        if unknown:
            found = planner.count_dfs(conn, unknown, stats, self.view.rows_between)
            with self._lock:
                if len(self._dfs) + len(found) > MAX_DFS:
                    self._dfs.clear()
                for term, df in found.items():
                    self._dfs[term] = (df, stats.rows, now + DF_CACHE_SECONDS, token)
            out |= found
        return out

    # --- rare words (.related) ----------------------------------------------------------------

    def rarity(self, words: Iterable[str], limit: int) -> dict[str, bool]:
        """Of `words`, those known to be held by at most `limit` records (True) or more
        (False), as :meth:`remember_rarity` was told within DF_CACHE_SECONDS with the same
        limit; the others are left out."""
        now = time.monotonic()
        known = self._rarity
        out = {}
        for word in words:
            entry = known.get(word)
            if entry is not None and entry[1] == limit and now <= entry[2]:
                out[word] = entry[0]
        return out

    def known_df(self, word: str, rows: int) -> int | None:
        """The df :meth:`document_frequencies` holds for `word` as a task's term, when it is
        still fresh and `word` is its own stem (so it is the df of the stem `word`); else
        None. Nothing is read."""
        if self._stems.get(word) != word:
            return None
        return self.task_df(word, rows)

    def task_df(self, term: str, rows: int) -> int | None:
        """The df :meth:`document_frequencies` holds for the task's term `term` while it is
        fresh (whatever its stem), else None. Nothing is read."""
        entry = self._dfs.get(term)
        if entry is None:
            return None
        df, rows_then, expires, _token = entry
        if df and time.monotonic() <= expires and abs(rows - rows_then) <= 0.05 * max(
                rows_then, 1):
            return min(df, rows)
        return None

    def remember_rarity(self, found: dict[str, bool], limit: int) -> None:
        expires = time.monotonic() + DF_CACHE_SECONDS
        with self._lock:
            if len(self._rarity) + len(found) > MAX_DFS:
                self._rarity.clear()
            for word, rare in found.items():
                self._rarity[word] = (rare, limit, expires)

    # --- stems -------------------------------------------------------------------------------

    def stems(self, conn: sqlite3.Connection, words: Iterable[str]) -> dict[str, str | None]:
        """fts.stems of `words`, remembered (the tokenizer is fixed, so a stem never changes)."""
        known = self._stems
        out: dict[str, str | None] = {}
        unknown = []
        for word in dict.fromkeys(words):
            try:
                out[word] = known[word]
            except KeyError:  # never seen (or the memo was emptied meanwhile)
                out[word] = None
                unknown.append(word)
        if unknown:
            found = fts.stems(conn, unknown)
            with self._lock:
                if len(known) + len(found) > MAX_STEMS:
                    known.clear()
                known.update(found)
            out.update(found)
        return out

    def stop_stems(self, conn: sqlite3.Connection) -> frozenset[str]:
        """The FTS5 stems of the stop words (:data:`~minionsd.text.ftsquery.STOP_WORDS`),
        found once: they never change."""
        found = self._stop_stems
        if found is None:
            stems = self.stems(conn, STOP_WORDS)
            found = self._stop_stems = frozenset(stem for stem in stems.values() if stem)
        return found

    # --- rows --------------------------------------------------------------------------------

    def shared_strings(self) -> dict[str, str]:
        if len(self.shared) > MAX_SHARED or len(self.numbers) > MAX_SHARED:
            with self._lock:
                self.shared.clear()
                self.numbers.clear()
        return self.shared
