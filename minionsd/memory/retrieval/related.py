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
The index remembers the counts as long as document frequencies (:mod:`.index`), and a
word whose df it holds as a task's term is not counted again.

One shared word is enough when no other record in the memory holds it (:meth:`only_pair`):
the two records are the only ones that name it (``stockreportjob``, a table's setting). The
test leaves out the words plainly empty of a subject: stop, boilerplate and narrative words
("saw", "usually" can be in two notes of a small memory), bare numbers (ports, counts and
percentages recur by chance), and words under ``PAIR_MIN_CHARS`` characters (two-letter tokens
are mostly pieces of split identifiers). Every record of the memory counts, whatever its scope
or state, so a superseded version of the best record that still names the word turns the rule
off for it. Those counts are made for each retrieval, not remembered: one record added since
turns a pair into three.
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
# A word only two records hold (:meth:`SharedRareWords.only_pair`) has at least this many
# characters.
PAIR_MIN_CHARS = 3


def _smaller_first(best: Mapping[str, Any], record: Mapping[str, Any],
                   ) -> tuple[Mapping[str, Any], Mapping[str, Any]] | None:
    """The two records' ``words``, the smaller first (the one to walk), or None when either
    has none."""
    theirs = best.get("words")
    mine = record.get("words")
    if not isinstance(theirs, Mapping) or not isinstance(mine, Mapping):
        return None
    return (mine, theirs) if len(mine) < len(theirs) else (theirs, mine)


class SharedRareWords:
    """``related(best, record, least)``: does `record` share `least` (``SHARED_MIN`` unless
    given) rare words with `best`?

    Both are candidate records as :func:`~.candidates.fetch_candidates` returns them (their
    ``words`` are every stem they hold); `candidates`, the retrieval's candidates, spare the
    count of a word more of them hold than a rare word can be in. One object serves one
    retrieval: it remembers how many records hold the words it counted.
    ``only_pair(best, record)``: is there a word no other record holds in both?
    """

    def __init__(self, index: RecallIndex, conn: sqlite3.Connection, terms: Sequence[str],
                 candidates: Sequence[Mapping[str, Any]] = ()) -> None:
        self._index = index
        self._conn = conn
        self._terms = terms
        self._candidates = candidates
        self._task: frozenset[str] | None = None
        self._quiet: frozenset[str] | None = None
        self._held: dict[str, int] = {}  # records holding the word, at most limit + 1
        self._pairs: dict[str, int] = {}  # the same counted now, at most 3 (only_pair)
        self._limit: int | None = None
        self._rows = 0
        self._term_stems: list[tuple[str, str]] | None = None

    def __call__(self, best: Mapping[str, Any], record: Mapping[str, Any],
                 least: int = SHARED_MIN) -> bool:
        both = _smaller_first(best, record)
        if both is None:
            return False
        theirs, mine = both
        task = self._task if self._task is not None else self._task_stems()
        shared = [word for word in theirs if word in mine and word not in task]
        least = max(1, least)
        if len(shared) < least:
            return False
        self._sift(shared)
        held = self._held
        limit = self._rare_limit()
        left = [word for word in shared if word not in held or 0 < held[word] <= limit]
        if len(left) < least:
            return False
        unknown = [word for word in left if word not in held]
        if len(left) - len(unknown) >= least:
            return True  # the words already known to be rare are enough: nothing to count
        self._count(unknown)
        return sum(0 < held[word] <= limit for word in left) >= least

    def only_pair(self, best: Mapping[str, Any], record: Mapping[str, Any]) -> bool:
        """Do `best` and `record` share a word that no other record in the memory holds, not
        the task's and not plainly empty of a subject (see the module docstring)?"""
        both = _smaller_first(best, record)
        if both is None:
            return False
        theirs, mine = both
        task = self._task if self._task is not None else self._task_stems()
        quiet = self._quiet if self._quiet is not None else self._quiet_stems()
        shared = [word for word in theirs
                  if word in mine and len(word) >= PAIR_MIN_CHARS and not word.isdigit()
                  and word not in task and word not in quiet]
        if not shared:
            return False
        # A word the index knows more than two records hold is out (such a count errs only
        # for a word whose records were deleted since); the others are counted now, for this
        # retrieval: one record added since a count was remembered turns a pair into three.
        self._sift(shared)
        held = self._held
        pairs = self._pairs
        left = [word for word in shared if word not in held or held[word] <= 2]
        unknown = [word for word in left if word not in pairs
                   and not self._candidates_hold(word, 2)]
        if unknown:
            stems = self._index.stems(self._conn, unknown)
            countable = [word for word in unknown if stems.get(word) == word]
            counts = fts.capped_counts(self._conn, countable, 3) if countable else []
            pairs.update(dict.fromkeys(unknown, 3))
            pairs.update(zip(countable, counts, strict=True))
        return any(0 < pairs.get(word, 3) <= 2 for word in left)

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

    def _quiet_stems(self) -> frozenset[str]:
        self._quiet = self._index.quiet_stems(self._conn)
        return self._quiet

    def _rare_limit(self) -> int:
        if self._limit is None:
            self._rows = index_stats(self._conn).rows
            self._limit = rare_limit(self._rows)
        return self._limit

    def _sift(self, words: list[str]) -> None:
        """What the index remembers of how many records hold each of `words` (as counts, or
        as task terms with a df); then a word more candidates hold than a rare word can be
        in is taken as held by more. None of this counts anything."""
        limit = self._rare_limit()
        held = self._held
        unknown = [word for word in words if word not in held]
        if not unknown:
            return
        index = self._index
        held.update(index.rarity(unknown, limit))
        settled: dict[str, int] = {}
        for word in unknown:
            if word in held:
                continue
            df = index.known_df(word, self._rows)
            if df is not None:  # the df of a task's term, cached
                settled[word] = min(df, limit + 1)
            elif self._candidates_hold(word, limit):
                settled[word] = limit + 1
        held.update(settled)
        index.remember_rarity(settled, limit)

    def _candidates_hold(self, word: str, most: int) -> bool:
        """Do more than `most` of the retrieval's candidates hold `word`?"""
        if len(self._candidates) <= most:
            return False
        count = 0
        for candidate in self._candidates:
            words_of = candidate.get("words")
            if isinstance(words_of, Mapping) and word in words_of:
                count += 1
                if count > most:
                    return True
        return False

    def _count(self, words: list[str]) -> None:
        if not words:
            return
        limit = self._rare_limit()
        # A count searches the word as a query, which FTS5 stems again: only a word that is
        # its own stem is found that way (others are taken as held by more than the limit).
        stems = self._index.stems(self._conn, words)
        countable = [word for word in words if stems.get(word) == word]
        counts = fts.capped_counts(self._conn, countable, limit + 1) if countable else []
        found = dict.fromkeys(words, limit + 1)
        for word, count in zip(countable, counts, strict=True):
            found[word] = count
        self._held.update(found)
        self._index.remember_rarity(found, limit)
