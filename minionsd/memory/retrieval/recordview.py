"""An in-memory view of memory_records for retrieval: who may be recalled, and hot records.

A retrieval checks the recall filters (status, scope, expiry, procedural trust) on the few
hundred FTS5 hits of a task, and then reads term counts and rows for its best ~75. In SQL each
of those is a row lookup in a table of multi-kilobyte rows. This module keeps instead:

* a filter table for every record: a scope number and a recallable flag per seq (two arrays,
  about 5 bytes a record), plus ``expires_at`` for the few records that have one;
* bounded LRU caches, by seq, of values derived from recently recalled rows (parsed term
  counts, decoded records), filled by the caller;
* a bounded LRU cache of FTS5 hit lists by search term. A new record may add a hit to any
  term, and a changed one may add or take one away: a list read before changes that only added
  records (each with a seq above every seq before it) still holds every hit up to the largest
  seq it saw, and the caller reads only the hits above (planner.hit_lists); after any other
  change it is read again whole.

Both follow the table through ``record_changes`` (migration 0006), which triggers append to on
every insert, update and delete, whoever writes. :meth:`RecordView.sync` reads the changes
since it last looked (one query on an integer key; nothing else when nothing changed),
updates the filter table and evicts those seqs from the caches. If the retention job has
pruned the log past its place, the view reloads in full.

A cached value is stored only if no change was applied between the sync that started the
retrieval and the store, so a value read before a change can never outlive it.
"""

from __future__ import annotations

import sqlite3
import threading
from array import array
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Sequence
from types import MappingProxyType
from typing import Any, NamedTuple

from minionsd.memory.retrieval.eligibility import eligible, unexpired
from minionsd.storage import recall

MAX_CACHED = 2000  # entries per cache kind (a row or a term-count text: a few KB each)
# Kinds with other bounds (none today).
MAX_CACHED_BY_KIND: MappingProxyType[str, int] = MappingProxyType({})
MAX_HITS = 1000  # terms whose hit lists are kept (planner.ROW_BUDGET rowids at most each)
HITS_PER_TERM = 4  # lists of one term from different rowids (tasks' windows differ)
MAX_HITS_BYTES = 1000 * (64 + 8 * 800)  # as much as 1,000 full lists
# And at most this many bytes per kind, by the sizes the caller gives: a few huge notes must not
# make the cache hold gigabytes.
MAX_CACHED_BYTES = 16 << 20
# Syncs remembered (the change ids each applied, and whether they only added records): a hit
# list read before the oldest of them is read again whole.
MAX_TILES = 256


class HitEntry(NamedTuple):
    """A term's hit list as read: ascending rowids above `after`, at most the limit it was read
    with; `largest`: the largest seq the view held then (no row above it existed); `current`:
    read in the caller's snapshot (else before changes that only added records)."""

    hits: array
    after: int
    largest: int
    current: bool
# More changes than this since the last look (a bulk import): reload the table in one streamed
# pass instead, which also drops every cached value.
RELOAD_AFTER_CHANGES = 5000
DENSE_LIMIT = 1 << 22  # seqs below this live in the arrays, larger ones (never seen) in a dict


class _Lru:
    """An LRU map bounded by entries and by the bytes its entries say they take."""

    def __init__(self) -> None:
        self.entries: OrderedDict[Any, Any] = OrderedDict()
        self.sizes: dict[Any, int] = {}
        self.bytes = 0

    def get(self, key: Any) -> Any:
        value = self.entries.get(key)
        if value is not None:
            self.entries.move_to_end(key)
        return value

    def put(self, key: Any, value: Any, size: int) -> None:
        self.pop(key)
        self.entries[key] = value
        self.sizes[key] = size
        self.bytes += size

    def pop(self, key: Any) -> None:
        if self.entries.pop(key, None) is not None:
            self.bytes -= self.sizes.pop(key)

    def trim(self, max_entries: int, max_bytes: int) -> None:
        while self.entries and (len(self.entries) > max_entries or self.bytes > max_bytes):
            key, _value = self.entries.popitem(last=False)
            self.bytes -= self.sizes.pop(key)

    def clear(self) -> None:
        self.entries.clear()
        self.sizes.clear()
        self.bytes = 0


class RecordView:
    """The filter table and caches of one database (owned by its RecallIndex)."""

    def __init__(self, max_cached: int = MAX_CACHED) -> None:
        self._lock = threading.Lock()
        self._applied: int | None = None
        self._scope_ids: dict[str, int] = {}
        self._scope_of = array("i")  # by seq; -1 = no such record
        self._recallable = bytearray()  # by seq; 1 = active and not excluded procedural
        self._sparse: dict[int, tuple[int, int]] = {}  # seq >= DENSE_LIMIT -> (scope, flag)
        self._expires: dict[int, str] = {}
        self._max_cached = max_cached
        self._caches: dict[str, _Lru] = {}
        self._max_seq = 0  # the largest seq any applied change or load has shown
        # (after, upto, only added records) of each recent sync that applied changes, in order.
        self._tiles: deque[tuple[int, int, bool]] = deque(maxlen=MAX_TILES)
        # term -> its latest (hit list, after, token it was read at, largest seq), newest first
        self._hits = _Lru()

    # --- following the table ---------------------------------------------------------------

    def sync(self, conn: sqlite3.Connection) -> int:
        """Catch up with memory_records; returns a token for :meth:`remember`."""
        high, low = recall.change_log_range(conn)
        with self._lock:
            applied = self._applied
            if applied is not None and high <= applied:
                # Nothing new, or this connection reads an older snapshot than another reader
                # already applied: never go back. An older token cannot store in a cache.
                return high
            if (applied is None or low is None or low > applied + 1
                    or high - applied > RELOAD_AFTER_CHANGES):
                self._load_all(conn)
            else:
                self._apply_changes(conn, applied, high)
            self._applied = high
            return high

    def _load_all(self, conn: sqlite3.Connection) -> None:
        self._scope_of = array("i")
        self._recallable = bytearray()
        self._sparse.clear()
        self._expires.clear()
        for cache in self._caches.values():
            cache.clear()
        self._hits.clear()
        self._tiles.clear()
        self._max_seq = 0
        for row in recall.filter_rows(conn):
            self._set(*row)

    def _apply_changes(self, conn: sqlite3.Connection, after: int, upto: int) -> None:
        rows = recall.changed_filter_rows(conn, after, upto)
        before = self._max_seq
        only_added = True
        for row in rows:
            only_added = only_added and row[0] > before
            self._set(*row)
            for cache in self._caches.values():
                cache.pop(row[0])
        self._tiles.append((after, upto, only_added))

    def _set(self, seq: int, scope: str | None, status: str | None, kind: str | None,
             trust: str | None, expires_at: str | None) -> None:
        if status is None:  # deleted
            scope_id, flag = -1, 0
        else:
            scope_id = self._scope_ids.setdefault(scope or "", len(self._scope_ids))
            flag = int(eligible(status, kind, trust))
        if seq > self._max_seq:
            self._max_seq = seq
        if seq >= DENSE_LIMIT or seq < 0:
            self._sparse[seq] = (scope_id, flag)
        else:
            if seq >= len(self._recallable):
                grow = max(seq + 1 - len(self._recallable), len(self._recallable) // 2, 1024)
                self._scope_of.extend([-1] * grow)
                self._recallable.extend(bytes(grow))
            self._scope_of[seq] = scope_id
            self._recallable[seq] = flag
        if expires_at is None:
            self._expires.pop(seq, None)
        else:
            self._expires[seq] = expires_at

    def rows_between(self, after: int, upto: int) -> int:
        """How many records the view holds with `after` < seq <= `upto` (for the planner's df
        estimate: counting them in memory_records reads every one of those multi-kilobyte rows,
        1.7 ms for 3,000 of them)."""
        with self._lock:
            dense = self._scope_of[max(after + 1, 0):max(upto + 1, 0)]
            count = len(dense) - dense.count(-1)
            return count + sum(1 for key, (scope_id, _flag) in self._sparse.items()
                               if after < key <= upto and scope_id != -1)

    # --- the recall filter -----------------------------------------------------------------

    def recallable(self, seqs: Iterable[int], scopes: Sequence[str], now_iso: str,
                   want: int) -> list[int]:
        """The first `want` of `seqs` (in their order) that retrieval may show: active, in one
        of `scopes`, not expired at `now_iso`, and :func:`eligible`.

        A seq the view has not seen yet (written after the last sync) is left out.
        """
        out: list[int] = []
        if want <= 0:
            return out
        with self._lock:
            allowed = {self._scope_ids[s] for s in scopes if s in self._scope_ids}
            if not allowed:
                return out
            scope_of, flags, size = self._scope_of, self._recallable, len(self._recallable)
            expires = self._expires
            for seq in seqs:
                if 0 <= seq < size:
                    if not flags[seq] or scope_of[seq] not in allowed:
                        continue
                else:
                    scope_id, flag = self._sparse.get(seq, (-1, 0))
                    if not flag or scope_id not in allowed:
                        continue
                limit = expires.get(seq)
                if limit is not None and not unexpired(limit, now_iso):
                    continue
                out.append(seq)
                if len(out) >= want:
                    break
        return out

    # --- caches of derived values ----------------------------------------------------------

    def cached(self, kind: str, keys: Iterable[Any]) -> tuple[dict[Any, Any], list[Any]]:
        """(values found, keys missing) in the `kind` cache (keys are seqs)."""
        found: dict[Any, Any] = {}
        missing: list[Any] = []
        with self._lock:
            cache = self._caches.setdefault(kind, _Lru())
            for key in keys:
                value = cache.get(key)
                if value is None:
                    missing.append(key)
                else:
                    found[key] = value
        return found, missing

    def remember(self, kind: str, values: dict[Any, Any], token: int,
                 size_of: Callable[[Any], int] | None = None) -> None:
        """Cache values read after the sync that returned `token`, unless a change has been
        applied since (the value may predate it). `size_of` gives an entry's size in bytes
        (default 1 KiB); a value larger than a tenth of MAX_CACHED_BYTES is not cached."""
        if not values:
            return
        with self._lock:
            if self._applied != token:
                return
            cache = self._caches.setdefault(kind, _Lru())
            for key, value in values.items():
                size = size_of(value) if size_of is not None else 1024
                if size <= MAX_CACHED_BYTES // 10:
                    cache.put(key, value, size)
            limit = min(self._max_cached, MAX_CACHED_BY_KIND.get(kind, self._max_cached))
            cache.trim(limit, MAX_CACHED_BYTES)

    # --- hit lists --------------------------------------------------------------------------

    def hit_entries(self, groups: Iterable[tuple[str, int]],
                    token: int) -> dict[tuple[str, int], HitEntry]:
        """For each (term, rowid) group, the kept hit list of the term a reader whose sync
        returned `token` may build on: read from no higher a rowid, and in its snapshot or
        before changes that only added records (then every hit up to the entry's `largest` is
        in the list, unless the list is full). A term keeps its latest HITS_PER_TERM lists
        (tasks search a term from different rowids, and a window moves up as records are
        added)."""
        out: dict[tuple[str, int], HitEntry] = {}
        verdicts: dict[int, bool] = {}
        with self._lock:
            for group in groups:
                term, after = group
                kept = self._hits.get(term)
                if kept is None:
                    continue
                usable = [entry for entry in kept if entry[1] <= after]
                if not usable:
                    continue
                hits, entry_after, read_at, largest = max(usable, key=lambda e: e[1])
                if read_at == token:
                    out[group] = HitEntry(hits, entry_after, largest, True)
                    continue
                added = verdicts.get(read_at)
                if added is None:
                    added = verdicts[read_at] = self._only_added(read_at, token)
                if added:
                    out[group] = HitEntry(hits, entry_after, largest, False)
        return out

    def _only_added(self, since: int, upto: int) -> bool:
        """True when the syncs remembered cover the change ids after `since` up to `upto`
        exactly, and each of them only added records (under the lock)."""
        at = since
        if at >= upto:
            return False
        for after, end, only_added in self._tiles:
            if end <= at:
                continue
            if after != at or not only_added or end > upto:
                return False
            at = end
            if at == upto:
                return True
        return False

    def remember_hits(self, lists: dict[tuple[str, int], array], token: int) -> None:
        """Keep hit lists by (term, the rowid they are above), read at `token`, unless a
        change has been applied since."""
        if not lists:
            return
        with self._lock:
            if self._applied != token:
                return
            for (term, after), hits in lists.items():
                older = [entry for entry in self._hits.get(term) or () if entry[1] != after]
                kept = ((hits, after, token, self._max_seq), *older[:HITS_PER_TERM - 1])
                self._hits.put(term, kept, sum(64 + entry[0].itemsize * len(entry[0])
                                               for entry in kept))
            self._hits.trim(MAX_HITS, MAX_HITS_BYTES)

    def clear(self) -> None:
        with self._lock:
            self._applied = None
            for cache in self._caches.values():
                cache.clear()
            self._hits.clear()
            self._tiles.clear()
