"""Dedupe and pack ranked records into the Relevant Memory text.

This module owns what an agent reads of each recalled record and how many fit. Pure functions.

* :func:`dedupe` keeps one record per body: bodies that are equal, or nearly equal, as
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
  differ in a number, an identifier or a path are never merged, near copies included.
* :func:`render_item` gives each record a provenance line (id, type, scope, trust, date, source),
  then its title and body.
* :func:`pack` takes records best first, at most ``top_k`` of them, while the rendered text stays
  within ``max_bytes`` UTF-8 bytes; a record that does not fit is skipped and a later, smaller one
  may still be taken. The score cutoff (:class:`Cutoff`) leaves out weak matches: a record
  scoring below ``min_score_ratio`` times the best record's score (:func:`score_floor`) is
  packed only when it closely follows the record packed before it, or holds a rare
  identifier, error code or file name of the task that no packed record holds: ``top_k`` is a
  ceiling, not a quota. The result is what goes inside the untrusted-input fence.

Invariant: ``len(text.encode()) <= max_bytes`` and the reported byte sizes add up to the text
(plus one blank line between items).
"""

from __future__ import annotations

import bisect
import itertools
import math
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from minionsd.memory.retrieval.rank import Scored
from minionsd.text.ftsquery import STOP_WORDS

if TYPE_CHECKING:
    from minionsd.memory.retrieval.memos import TextMemos

NEAR_DUPLICATE = 0.9  # share of the smaller body's shingles found in the larger one
SIZE_RATIO = 0.7  # the smaller body's shingles / the larger's, at least
SHINGLE = 3  # words per shingle (the zip in _shingles is written for 3)
RESTATEMENT = 0.5  # content words shared, of the larger body's, for a restatement
# Below the floor, a record this close to the one packed before it is packed, down to
# LAST_FLOOR of the floor (both chosen on the first evaluation set: docs/retrieval.md).
FOLLOW = 0.8
LAST_FLOOR = 0.7
_WORD_RE = re.compile(r"\w+")
ITEM_SEPARATOR = "\n\n"
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]+")
_DATE_RE = re.compile(r"\d{4}-\d{2}-\d{2}")


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
    distinct = _Distinct(len(scored), memos)
    return [item for item in sorted(scored, key=lambda s: (-s.score, s.id))
            if distinct.admit(item)]


def near_duplicates(a: frozenset[tuple[str, ...]], b: frozenset[tuple[str, ...]]) -> bool:
    """The shingle test of :func:`dedupe` (equal word sequences are checked before it)."""
    small, large = sorted((len(a), len(b)))
    if small < SIZE_RATIO * large:
        return False
    return len(a & b) >= NEAR_DUPLICATE * small


class _Distinct:
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
        seen = _comparable(item.record, self.memos)
        if seen.text in self.seen_bodies:
            return False
        shingles = seen.shingles
        n = len(shingles)
        low = bisect.bisect_left(self.by_size, (math.ceil(SIZE_RATIO * n), -1))
        high = bisect.bisect_right(self.by_size, (math.floor(n / SIZE_RATIO), self.capacity))
        # A copy with one word changed is the same note, unless the word is a number, an
        # identifier or a path: then it is another fact.
        if any(len(shingles & other.shingles) >= NEAR_DUPLICATE * min(n, size)
               and seen.same_facts(other) for size, _order, other in self.by_size[low:high]):
            return False
        if any(restates(seen, other) for other in self.admitted):
            return False
        self.admitted.append(seen)
        self.seen_bodies.add(seen.text)
        bisect.insort(self.by_size, (n, len(self.seen_bodies), seen))
        return True


def _one_line(value: Any, default: str = "unknown") -> str:
    text = _CONTROL_RE.sub(" ", str(value)).strip() if value not in (None, "") else ""
    return text or default


def _date(created_at: Any) -> str:
    if isinstance(created_at, str):
        match = _DATE_RE.match(created_at)
        if match:
            return match.group(0)
    return "unknown"


_RENDERED_FIELDS = ("id", "type", "scope", "trust", "created_at", "source", "title", "body")


def render_item(record: Mapping[str, Any]) -> str:
    """One record as the agent reads it: provenance line, title (if any), body."""
    return _rendered(record)[0]


def _rendered(record: Mapping[str, Any],
              memos: TextMemos | None = None) -> tuple[str, int]:
    """render_item's text and its size in UTF-8 bytes."""
    fields = tuple(record.get(name) for name in _RENDERED_FIELDS)
    # Only text fields (all the database holds) are memoised: 1 == 1.0 == True as keys, but
    # they render differently. A long body is rendered each time rather than held.
    if memos is not None and all(type(value) is str or value is None for value in fields) \
            and len(fields[-1] or "") <= RENDER_CACHED_CHARS:
        return memos.rendered(fields)
    return render_fields(fields)


def render_fields(fields: tuple[Any, ...]) -> tuple[str, int]:
    record_id, kind, scope, trust, created_at, source, title, body = fields
    header = " | ".join(
        (
            f"id={_one_line(record_id)}",
            f"type={_one_line(kind)}",
            f"scope={_one_line(scope)}",
            f"trust={_one_line(trust)}",
            f"date={_date(created_at)}",
            f"source={_one_line(source)}",
        )
    )
    lines = [f"[{header}]"]
    title = _one_line(title, default="")
    if title:
        lines.append(f"Title: {title}")
    if isinstance(body, str) and body.strip():
        text = body.strip("\n").rstrip()
        if title:
            text = _without_title_heading(text, title)
        if text:
            lines.append(text)
    text = "\n".join(lines)
    return text, len(text.encode("utf-8"))


_HEADING_LINE_RE = re.compile(r"[ \t]*#{1,6}[ \t]+(.*?)[ \t#]*(?:\n|$)")


def _without_title_heading(body: str, title: str) -> str:
    """The body minus an opening heading that only repeats the title line above it.

    The `Title: ` line is longer than the `# `…`###### ` it replaces, so the rendered item is
    still at least as long as the stripped body (min_size stays a lower bound).
    """
    match = _HEADING_LINE_RE.match(body)
    if match and " ".join(match.group(1).split()) == title:
        return body[match.end():].lstrip("\n")
    return body


# A rendered item is about its body's size: memoised (memos.py) for bodies up to this.
RENDER_CACHED_CHARS = 8192


def min_size(record: Mapping[str, Any]) -> int:
    """A lower bound of the rendered size in bytes: the stripped body's length in characters."""
    body = record.get("body")
    return len(body.strip()) if isinstance(body, str) else 0


def score_floor(best: float, ratio: float) -> float:
    """The least score packed on its own next to a best record scoring `best` (ratio clamped
    to 0..1); below it a record needs a reason (:class:`Cutoff`)."""
    return max(0.0, min(1.0, ratio)) * best if best > 0 else 0.0


class Cutoff:
    """Which records the score cutoff packs, asked best first (see the module docstring).

    A record at or above :func:`score_floor` is packed. Below it a record is packed when it
    follows the record packed before it closely (at least ``FOLLOW`` of its score: the floor
    does not split a run of near-equal scores) and scores at least ``LAST_FLOOR`` of the
    floor, or when it holds a rare naming term of the task (``rare_terms``, set by the
    candidate search) that no packed record holds, however low it scores: the note about
    the identifier, path or error code the task names is not cut for being less similar
    overall. With ratio 0 nothing is cut.
    """

    def __init__(self, best: float, ratio: float, rare_left: int = 0) -> None:
        self.floor = score_floor(best, ratio)
        self.lowest = self.floor * LAST_FLOOR
        self.last = best  # the score of the last record packed for its score
        self.named: set[str] = set()
        self.rare_left = rare_left  # records with rare terms not yet asked about

    def admits(self, item: Scored) -> bool | None:
        """True: pack it (if it fits); False: skip it; None: nothing after it can be packed."""
        rare = item.record.get("rare_terms") or ()
        self.rare_left -= bool(rare)
        if item.score >= self.floor:
            return True
        if self.lowest <= item.score and item.score >= FOLLOW * self.last:
            return True
        if any(term not in self.named for term in rare):
            return True
        # Later records score no more, so only a rare term can let one in.
        return False if self.rare_left > 0 else None

    def packed(self, item: Scored) -> None:
        rare = item.record.get("rare_terms") or ()
        if item.score >= self.floor or (item.score >= self.lowest
                                        and item.score >= FOLLOW * self.last):
            self.last = item.score
        self.named.update(rare)


def pack(
    scored: Iterable[Scored], *, top_k: int, max_bytes: int, distinct: bool = False,
    smallest: int = 0, min_score_ratio: float = 0.0, memos: TextMemos | None = None,
    rare_left: int = 0,
) -> tuple[str, list[tuple[Scored, int]]]:
    """The pack text and the chosen items with their rendered UTF-8 sizes, best first.

    `scored` must come best first (as :func:`~minionsd.retrieval.rank.rank_lazily` yields
    it): the first item's score is the best, whether or not it fits, and :class:`Cutoff`
    decides from it which items may be packed; reading stops once nothing after an item can
    be (below the last floor, with no item holding a rare term left: `rare_left` says how
    many of `scored` hold one).

    With `distinct`, an item is checked against the packed ones for (near) duplicate bodies
    and restatements only once it fits: cheaper than deduping every candidate first, and a
    smaller copy of a best item too big to fit can still carry its content.

    `smallest`, if given, must not exceed :func:`min_size` of any item: once the room left is
    below it, nothing more can fit and the rest of `scored` is not read (with a lazy ranking,
    not even scored).
    """
    chosen: list[tuple[Scored, int]] = []
    parts: list[str] = []
    used = 0
    separator = len(ITEM_SEPARATOR.encode("utf-8"))
    seen = _Distinct(top_k, memos) if distinct else None

    def full() -> bool:
        return (len(chosen) >= top_k
                or used + smallest + (separator if chosen else 0) > max_bytes)

    if full():
        return "", chosen
    cutoff: Cutoff | None = None
    for item in scored:
        if cutoff is None:
            cutoff = Cutoff(item.score, min_score_ratio, rare_left)
        admitted = cutoff.admits(item)
        if admitted is None:
            break
        if not admitted:
            continue
        if used + min_size(item.record) > max_bytes:
            continue  # cannot fit: skip it without rendering
        text, size = _rendered(item.record, memos)
        extra = size + (separator if chosen else 0)
        if used + extra > max_bytes:
            continue
        if seen is not None and not seen.admit(item):
            continue
        chosen.append((item, size))
        cutoff.packed(item)
        parts.append(text)
        used += extra
        if full():
            break  # before the next item is read
    return ITEM_SEPARATOR.join(parts), chosen
