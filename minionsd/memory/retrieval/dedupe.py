"""Which packed records say the same thing: exact and near copies, and restatements.

This module owns the comparison of two records' bodies for packing. Pure functions, memoised
per body by the caller (:mod:`.memos`).

:func:`dedupe` keeps one record per body: bodies that are equal, or nearly equal, as
sequences of lower-cased words (runs of letters, digits and ``_``; punctuation, Markdown and
line breaks do not count) count as one, and the best-scored survives. Nearly equal: the
smaller body has at least ``SIZE_RATIO`` of the larger one's word 3-shingles and at least
``NEAR_DUPLICATE`` of its shingles occur in the larger (a re-wrapped, re-punctuated or
re-marked copy, one with a remark appended, or with a word changed in a long note). A
*restatement* counts as one too: the same fact in other words, sentences reordered, under
another title. Its title and body name exactly the same numbers, identifiers and paths (at
least one: the consolidation digest's rule, read on words so Markdown does not count;
numbers in words and a number's unit count too), it says "not" only if the other does,
and its body shares at least ``RESTATEMENT`` of the larger body's content words (words of
three or more characters that are not stop words; at least three each). Two records that
differ in a number, an identifier or a path are never merged, near copies included
(:meth:`Comparable.same_facts`).
"""

from __future__ import annotations

import bisect
import itertools
import math
import re
from typing import TYPE_CHECKING, Any

from minionsd.memory.retrieval.rank import Scored
from minionsd.text.ftsquery import STOP_WORDS

if TYPE_CHECKING:
    from collections.abc import Mapping

    from minionsd.memory.retrieval.memos import TextMemos

NEAR_DUPLICATE = 0.9  # share of the smaller body's shingles found in the larger one
SIZE_RATIO = 0.7  # the smaller body's shingles / the larger's, at least
SHINGLE = 3  # words per shingle (the zip in _shingles is written for 3)
RESTATEMENT = 0.5  # content words shared, of the larger body's, for a restatement
ADMITTED = -1  # Distinct.check: the record says something new
_WORD_RE = re.compile(r"\w+")


class Comparable:
    """A record's body as dedupe compares it (see the module docstring). What only a
    comparison of two bodies needs is worked out when first asked for and kept (a memoised
    body keeps it too); the values never change, so two threads working one out agree."""

    __slots__ = ("_details", "_facts", "_lowered", "_title", "named", "shingles", "text")

    def __init__(self, lowered: str, title: str) -> None:
        words = _WORD_RE.findall(lowered)
        self.text = " ".join(words)  # its lower-cased words joined by single spaces
        self.shingles = _shingles(words)  # their 3-shingles
        # Words with a digit or "_" (in its title too): the cheap part of its facts.
        self.named = frozenset(w for w in words if not w.isalpha())
        if title:
            self.named |= frozenset(w for w in _WORD_RE.findall(title) if not w.isalpha())
        self._lowered, self._title = lowered, title
        self._facts: frozenset[str] | None = None
        self._details: frozenset[str] | None = None

    def facts(self) -> frozenset[str]:
        """Its numbers, identifiers and paths: `named`, and the paths and file names of its
        title and body (_paths)."""
        if self._facts is None:
            self._facts = self.named | _paths(self._lowered) | _paths(self._title)
        return self._facts

    def details(self) -> frozenset[str]:
        """What else tells two facts apart: numbers written out, a number with the unit
        after it ("30 s" and "30 min"), and whether it says "not" ("no", "never", ...)."""
        if self._details is None:
            words = self.text.split(" ")
            found = set(_NUMBER_WORDS.intersection(words))
            found.update(f"{w} {unit}" for w, unit in itertools.pairwise(words)
                         if unit in _UNITS and (w.isdigit() or w in _NUMBER_WORDS))
            if not _NEGATIONS.isdisjoint(words):
                found.add("~not")
            self._details = frozenset(found)
        return self._details

    def same_facts(self, other: Comparable) -> bool:
        """Equal numbers, identifiers and paths, numbers in words, units and negation (the
        cheap part compared first)."""
        return (self.named == other.named and self.facts() == other.facts()
                and self.details() == other.details())

    def content(self) -> frozenset[str]:
        """Its content words: no stop words, a plural as its singular, 3+ characters."""
        return frozenset(_singular(w) for w in self.text.split(" ")
                         if len(w) > 2 and w not in STOP_WORDS)


def _comparable(record: Mapping[str, Any], memos: TextMemos | None) -> Comparable:
    body = record.get("body")
    if not isinstance(body, str):
        body = ""
    title = record.get("title")
    if not isinstance(title, str):
        title = ""
    if memos is not None and len(body) <= SHINGLES_CACHED_CHARS:
        return memos.comparable(body, title)
    return comparable_body(body, title)


def comparable_body(body: str, title: str = "") -> Comparable:
    """`body` as dedupe compares it; the title counts for its facts only."""
    return Comparable(body.lower(), title.lower())


# Numbers written as words (not "one": mostly a pronoun), and the units that make "30 s" and
# "30 min" two facts.
_NUMBER_WORDS_TEXT = """
    zero two three four five six seven eight nine ten eleven twelve fifteen twenty thirty
    forty fifty sixty hundred thousand million billion
"""
_UNITS_TEXT = """
    ms millisecond milliseconds s sec secs second seconds min mins minute minutes h hour hours
    d day days week weeks month months year years kb mb gb tb byte bytes percent
"""
_NEGATIONS_TEXT = "not no never without nor cannot don doesn isn aren won shouldn mustn didn wasn"
_NUMBER_WORDS = frozenset(_NUMBER_WORDS_TEXT.split())
_UNITS = frozenset(_UNITS_TEXT.split())
_NEGATIONS = frozenset(_NEGATIONS_TEXT.split())
# A path (a/b/c, a/b.py, proto/*.proto) or a file name (name.ext), looked for only in the
# whitespace-separated pieces of a text around a "/" or a "." inside a word.
_PATH_RE = re.compile(r"[\w*-]+(?:/[\w.*-]*\w)+|[\w-]{2,}\.[a-z]{1,5}\b")
_PATH_MARK_RE = re.compile(r"/|\w\.[a-z]")
_SPACE = (" ", "\n", "\t", "\r")


def _paths(lowered: str) -> frozenset[str]:
    """The paths and file names of a lower-cased text (the digest's rule counts them among a
    note's facts), read in the pieces around a "/" or a dotted name only."""
    found: set[str] = set()
    end = 0
    for mark in _PATH_MARK_RE.finditer(lowered):
        if mark.start() < end:
            continue  # inside the piece just read
        start = max(lowered.rfind(space, 0, mark.start()) for space in _SPACE) + 1
        ends = [i for i in (lowered.find(space, mark.start()) for space in _SPACE) if i >= 0]
        end = min(ends, default=len(lowered))
        found.update(_PATH_RE.findall(lowered, start, end))
    return frozenset(found)


def _singular(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") \
        else word


def restates(a: Comparable, b: Comparable) -> bool:
    """Whether two bodies say the same fact in other words (see the module docstring)."""
    if not a.same_facts(b) or not (a.facts() or a.details() - {"~not"}):
        return False  # no number, identifier or path to be sure of
    ours, theirs = a.content(), b.content()
    if min(len(ours), len(theirs)) < 3:
        return False
    return len(ours & theirs) >= RESTATEMENT * max(len(ours), len(theirs))


# Memoised (memos.py) only for bodies of ordinary size: words, text and shingles take ~26
# bytes per body character, so a huge note is compared each time rather than held.
SHINGLES_CACHED_CHARS = 4096


def _shingles(words: list[str]) -> frozenset[tuple[str, ...]]:
    # Tuples of words: cheaper to build than joined strings, and a set keeps each entry's hash,
    # so comparing two shingle sets does not hash the tuples again.
    if len(words) < SHINGLE:
        return frozenset([tuple(words)])
    return frozenset(zip(words, words[1:], words[2:], strict=False))


def dedupe(scored: list[Scored], memos: TextMemos | None = None) -> list[Scored]:
    """Best-scored first (ties by id), without exact or near duplicate bodies."""
    distinct = Distinct(len(scored), memos)
    return [item for item in sorted(scored, key=lambda s: (-s.score, s.id))
            if distinct.admit(item)]


def near_duplicates(a: frozenset[tuple[str, ...]], b: frozenset[tuple[str, ...]]) -> bool:
    """The shingle test of :func:`dedupe` (equal word sequences are checked before it)."""
    small, large = sorted((len(a), len(b)))
    if small < SIZE_RATIO * large:
        return False
    return len(a & b) >= NEAR_DUPLICATE * small


class Distinct:
    """Remembers admitted bodies; refuses exact and near duplicates and restatements of them."""

    def __init__(self, capacity: int, memos: TextMemos | None = None) -> None:
        self.capacity = capacity
        self.memos = memos
        self.seen_bodies: set[str] = set()
        # Admitted bodies sorted by their shingle count: only bodies of similar size
        # (SIZE_RATIO) can be near duplicates, so only those are compared.
        self.by_size: list[tuple[int, int, Comparable]] = []
        self.admitted: list[Comparable] = []

    def admit(self, item: Scored) -> bool:
        return self.check(item) == ADMITTED

    def _restated(self, seen: Comparable) -> int | None:
        for position, other in enumerate(self.admitted):
            if restates(seen, other):
                return position
        return None

    def check(self, item: Scored) -> int | None:
        """ADMITTED (-1) when `item` says something new, and then remembered; otherwise the
        position (in admission order) of the admitted record it restates, or None for an
        exact or near copy."""
        seen = _comparable(item.record, self.memos)
        if seen.text in self.seen_bodies:
            return None
        shingles = seen.shingles
        n = len(shingles)
        low = bisect.bisect_left(self.by_size, (math.ceil(SIZE_RATIO * n), -1))
        high = bisect.bisect_right(self.by_size, (math.floor(n / SIZE_RATIO), self.capacity))
        # A copy with one word changed is the same note, unless the word is a number, an
        # identifier or a path: then it is another fact.
        if any(len(shingles & other.shingles) >= NEAR_DUPLICATE * min(n, size)
               and seen.same_facts(other) for size, _order, other in self.by_size[low:high]):
            return None
        position = self._restated(seen)
        if position is not None:
            return position
        self.admitted.append(seen)
        self.seen_bodies.add(seen.text)
        bisect.insort(self.by_size, (n, len(self.seen_bodies), seen))
        return ADMITTED
