"""Whether a candidate is about the same thing as the best packed record, for the cutoff.

This module owns one signal for the score cutoff (:class:`~.pack.Cutoff`): the rare words a
candidate shares with the best record packed, beyond the task's own words. A note that scores
below the cutoff's floor because it shares few words with the task, but names the same
incident, component or setting as the best match (``tw-ingest-v2``, ``stockreportjob``,
``apollo``), is the next note an engineer reads; a note that only shares the task's common
words is not. This is pseudo-relevance feedback: the best match stands in for what the task
is about.

A word is rare when at most :func:`~.candidates.rare_limit` records hold it (the rule for the
task's rare naming terms). A record is related when at least ``SHARED_MIN`` rare words, none
of them a stem of the task's words or of a stop word, are in both. Only words the two
records share are looked up: a word that more candidates hold than a rare word can be in is
not rare; the others get one capped count per batch (a common word costs at most the cap), on
the caller's connection.
The index remembers the answers as long as document frequencies (:mod:`.index`), and a
word whose df it holds as a task's term is not counted again.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from minionsd.memory.retrieval.candidates import rare_limit
from minionsd.memory.retrieval.index import RecallIndex
from minionsd.storage import fts
from minionsd.storage.fts import index_stats

# Chosen on the blind set, reported on the first set and LoCoMo (docs/retrieval.md).
SHARED_MIN = 4


class SharedRareWords:
    """``related(best, record, least)``: does `record` share `least` (``SHARED_MIN`` unless
    given) rare words with `best`?

    Both are candidate records as :func:`~.candidates.fetch_candidates` returns them (their
    ``words`` are every stem they hold); `candidates`, the retrieval's candidates, spare the
    count of a word more of them hold than a rare word can be in. One object serves one
    retrieval: it remembers which words it found rare.
    """

    def __init__(self, index: RecallIndex, conn: sqlite3.Connection, terms: Sequence[str],
                 candidates: Sequence[Mapping[str, Any]] = ()) -> None:
        self._index = index
        self._conn = conn
        self._terms = terms
        self._candidates = candidates
        self._task: frozenset[str] | None = None
        self._rare: dict[str, bool] = {}
        self._limit: int | None = None
        self._rows = 0
        self._term_stems: list[tuple[str, str]] | None = None

    def __call__(self, best: Mapping[str, Any], record: Mapping[str, Any],
                 least: int = SHARED_MIN) -> bool:
        theirs = best.get("words")
        mine = record.get("words")
        if not isinstance(theirs, Mapping) or not isinstance(mine, Mapping):
            return False
        if len(mine) < len(theirs):
            theirs, mine = mine, theirs
        task = self._task if self._task is not None else self._task_stems()
        shared = [word for word in theirs if word in mine and word not in task]
        least = max(1, least)
        if len(shared) < least:
            return False
        self._sift(shared)
        rare = self._rare
        left = [word for word in shared if rare.get(word, True)]
        if len(left) < least:
            return False
        unknown = [word for word in left if word not in rare]
        if len(left) - len(unknown) >= least:
            return True  # the words already known to be rare are enough: nothing to count
        self._count(unknown)
        return sum(rare[word] for word in left) >= least

    def adds(self, record: Mapping[str, Any], packed: Sequence[Mapping[str, Any]]) -> bool:
        """Does `record` hold a rare word of the task (naming term or not) that none of the
        `packed` records holds? A word is rare by the df the index holds for the task's
        term (a term whose df it no longer holds is taken as not rare); only the words no
        packed record holds are looked up."""
        words = record.get("words")
        if not isinstance(words, Mapping):
            return False
        if self._term_stems is None:
            self._task_stems()
        for term, stem in self._term_stems or ():
            if stem not in words:
                continue
            for other in packed:  # plain loops: this runs for every word of the task
                held = other.get("words")
                if held is None or stem in held:
                    break
            else:
                limit = self._rare_limit()
                df = self._index.task_df(term, self._rows)
                if df is not None and 0 < df <= limit:
                    return True
        return False

    def _task_stems(self) -> frozenset[str]:
        """The stems of the task's own words and of stop words (which say nothing of a topic),
        that a shared word must not be; and each task term's stem, for :meth:`adds`."""
        index = self._index
        stems = index.stems(self._conn, self._terms)
        self._term_stems = [(term, stem) for term, stem in stems.items() if stem]
        self._task = index.stop_stems(self._conn).union(stem for _term, stem in self._term_stems)
        return self._task

    def _rare_limit(self) -> int:
        if self._limit is None:
            self._rows = index_stats(self._conn).rows
            self._limit = rare_limit(self._rows)
        return self._limit

    def _sift(self, words: list[str]) -> None:
        """What the index remembers of `words` (as rare words, or as task terms with a df);
        then the words more candidates hold than a rare word can be in are not rare. None of
        this counts anything."""
        limit = self._rare_limit()
        rare = self._rare
        unknown = [word for word in words if word not in rare]
        if not unknown:
            return
        index = self._index
        rare.update(index.rarity(unknown, limit))
        settled: dict[str, bool] = {}
        for word in unknown:
            if word in rare:
                continue
            df = index.known_df(word, self._rows)
            if df is not None:  # the df of a task's term, cached
                settled[word] = 0 < df <= limit
                continue
            if len(self._candidates) <= limit:
                continue
            held = 0
            for candidate in self._candidates:
                words_of = candidate.get("words")
                if isinstance(words_of, Mapping) and word in words_of:
                    held += 1
                    if held > limit:
                        settled[word] = False
                        break
        rare.update(settled)
        index.remember_rarity(settled, limit)

    def _count(self, words: list[str]) -> None:
        if not words:
            return
        limit = self._rare_limit()
        # A count searches the word as a query, which FTS5 stems again: only a word that is
        # its own stem is found that way (others are taken as not rare).
        stems = self._index.stems(self._conn, words)
        countable = [word for word in words if stems.get(word) == word]
        counts = fts.capped_counts(self._conn, countable, limit + 1) if countable else []
        found = dict.fromkeys(words, False)
        for word, count in zip(countable, counts, strict=True):
            found[word] = 0 < count <= limit
        self._rare.update(found)
        self._index.remember_rarity(found, limit)
