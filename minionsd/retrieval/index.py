"""RecallIndex: everything retrieval keeps between calls, for one open database.

The daemon makes one per open Database (the App owns it) and hands it to retrieval and to the
jobs that change the index; a test makes a fresh one. Its lifetime is the database's, so
nothing in it is keyed by database, and nothing is module-global. Thread-safe: the reader pool
shares one index.

It holds:

* the record view (:mod:`.recordview`): the recall filter table and bounded caches of hit
  lists, parsed term counts and decoded rows, kept current through ``record_changes``;
* document frequencies by stem for a few minutes (a zero only until any record changes);
* the FTS5 stems of recent query words;
* the string table rows parsed whole share, and the per-query stem patterns.
"""

from __future__ import annotations

import functools
import json
import sqlite3
import threading
import time
from collections.abc import Iterable
from typing import Any

from minionsd import fts
from minionsd.retrieval import scoring
from minionsd.retrieval.recordview import MAX_CACHED, RecordView

DF_CACHE_SECONDS = 300.0
MAX_DFS = 50_000
MAX_STEMS = 50_000
MAX_SHARED = 100_000
_UNKNOWN = object()  # strings (~10 MB; the bench's 100,000 notes have ~27,000 stems)


class RecallIndex:
    def __init__(self, max_cached: int = MAX_CACHED) -> None:
        self.view = RecordView(max_cached)
        self._lock = threading.Lock()
        self._dfs: dict[str, tuple[int, int, float, int | None]] = {}
        self._stems: dict[str, str | None] = {}
        self.shared: dict[str, str] = {}
        self.stem_pattern = functools.lru_cache(maxsize=256)(scoring.stem_pattern)

    def forget(self) -> None:
        """Drop every cached value (after the FTS index was rebuilt in bulk)."""
        self.view.clear()
        with self._lock:
            self._dfs.clear()
            self.shared.clear()
        self.stem_pattern.cache_clear()

    # --- stems -----------------------------------------------------------------------------

    def stems(self, conn: sqlite3.Connection, words: Iterable[str]) -> dict[str, str | None]:
        """word -> FTS5 stem (None for a word that is not one token), remembered."""
        known = self._stems
        out: dict[str, str | None] = {}
        missing = []
        for word in words:
            # One read per word: another thread may empty the memo at any time.
            stem = known.get(word, _UNKNOWN)
            if stem is _UNKNOWN:
                missing.append(word)
            else:
                out[word] = stem  # type: ignore[assignment]
        if missing:
            found = fts.stems(conn, missing)
            with self._lock:
                if len(known) + len(found) > MAX_STEMS:
                    known.clear()
                known.update(found)
            out |= found
        return out

    # --- document frequencies --------------------------------------------------------------

    def document_frequencies(self, conn: sqlite3.Connection, stems: Iterable[str],
                             stats: fts.IndexStats, token: int) -> dict[str, int]:
        """df of each stem, exact, cached for DF_CACHE_SECONDS or until the row count moves by
        5%; a zero only until the next change to memory_records (the view's `token`), so a
        term that just appeared in a new record is searched at once."""
        now = time.monotonic()
        out: dict[str, int] = {}
        unknown = []
        for stem in dict.fromkeys(stems):
            entry = self._dfs.get(stem)
            if entry is not None:
                df, rows_then, expires, token_then = entry
                if df == 0 and token == token_then:
                    out[stem] = 0
                    continue
                if (df and now <= expires
                        and abs(stats.rows - rows_then) <= 0.05 * max(rows_then, 1)):
                    out[stem] = min(df, stats.rows)
                    continue
            unknown.append(stem)
        if unknown:
            found = fts.document_frequencies(conn, unknown)
            with self._lock:
                if len(self._dfs) + len(found) > MAX_DFS:
                    self._dfs.clear()
                for stem, df in found.items():
                    self._dfs[stem] = (df, stats.rows, now + DF_CACHE_SECONDS, token)
            out |= found
        return out

    # --- rows --------------------------------------------------------------------------------

    def shared_strings(self) -> dict[str, str]:
        if len(self.shared) > MAX_SHARED:
            with self._lock:
                self.shared.clear()
        return self.shared

    @staticmethod
    def by_seq(conn: sqlite3.Connection, columns: str, seqs: list[int]) -> list[tuple[Any, ...]]:
        """`columns` of the memory_records rows whose seq is one of `seqs`, in one statement."""
        return fts.plain_cursor(conn).execute(
            f"SELECT {columns} FROM memory_records WHERE seq IN (SELECT value FROM json_each(?))",
            (json.dumps(seqs),)).fetchall()

