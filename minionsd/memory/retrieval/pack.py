"""Dedupe and pack ranked records into the Relevant Memory text.

This module owns what an agent reads of each recalled record and how many fit. Pure functions.

* :func:`dedupe` keeps one record per body: bodies that are equal, or nearly equal, as
  sequences of lower-cased words (runs of letters, digits and ``_``; punctuation, Markdown and
  line breaks do not count) count as one, and the best-scored survives. Nearly equal: the
  smaller body has at least ``SIZE_RATIO`` of the larger one's word 3-shingles and at least
  ``NEAR_DUPLICATE`` of its shingles occur in the larger (a re-wrapped, re-punctuated or
  re-marked copy, one with a remark appended, or with a word changed in a long note).
* :func:`render_item` gives each record a provenance line (id, type, scope, trust, date, source),
  then its title and body.
* :func:`pack` takes records best first, at most ``top_k`` of them, while the rendered text stays
  within ``max_bytes`` UTF-8 bytes; a record that does not fit is skipped and a later, smaller one
  may still be taken. A record scoring below ``min_score_ratio`` times the best record's score
  (:func:`score_floor`) is not packed: ``top_k`` is a ceiling, not a quota. The result is what
  goes inside the untrusted-input fence.

Invariant: ``len(text.encode()) <= max_bytes`` and the reported byte sizes add up to the text
(plus one blank line between items).
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from minionsd.memory.retrieval.rank import Scored

if TYPE_CHECKING:
    from minionsd.memory.retrieval.memos import TextMemos

NEAR_DUPLICATE = 0.9  # share of the smaller body's shingles found in the larger one
SIZE_RATIO = 0.7  # the smaller body's shingles / the larger's, at least
SHINGLE = 3  # words per shingle (the zip in _shingles is written for 3)
_WORD_RE = re.compile(r"\w+")
ITEM_SEPARATOR = "\n\n"
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]+")
_DATE_RE = re.compile(r"\d{4}-\d{2}-\d{2}")


def _comparable(record: Mapping[str, Any],
                memos: TextMemos | None) -> tuple[str, frozenset[tuple[str, ...]]]:
    """A body as dedupe compares it: its lower-cased words (runs of letters, digits and
    ``_``) joined by single spaces, and their 3-shingles."""
    body = record.get("body")
    if not isinstance(body, str):
        body = ""
    if memos is not None and len(body) <= SHINGLES_CACHED_CHARS:
        return memos.comparable(body)
    return comparable_body(body)


def comparable_body(body: str) -> tuple[str, frozenset[tuple[str, ...]]]:
    words = _WORD_RE.findall(body.lower())
    return " ".join(words), _shingles(words)


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
    """Remembers admitted bodies; refuses exact and near duplicates of them."""

    def __init__(self, capacity: int, memos: TextMemos | None = None) -> None:
        self.capacity = capacity
        self.memos = memos
        self.seen_bodies: set[str] = set()
        # Admitted shingle sets sorted by size: only bodies of similar size (SIZE_RATIO) can
        # be near duplicates, so only those are compared.
        self.by_size: list[tuple[int, int, frozenset[tuple[str, ...]]]] = []

    def admit(self, item: Scored) -> bool:
        body, shingles = _comparable(item.record, self.memos)
        if body in self.seen_bodies:
            return False
        n = len(shingles)
        low = bisect.bisect_left(self.by_size, (math.ceil(SIZE_RATIO * n), -1))
        high = bisect.bisect_right(self.by_size, (math.floor(n / SIZE_RATIO), self.capacity))
        if any(len(shingles & other) >= NEAR_DUPLICATE * min(n, size)
               for size, _order, other in self.by_size[low:high]):
            return False
        self.seen_bodies.add(body)
        bisect.insort(self.by_size, (n, len(self.seen_bodies), shingles))
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
    """The least score packed next to a best record scoring `best` (ratio clamped to 0..1)."""
    return max(0.0, min(1.0, ratio)) * best if best > 0 else 0.0


def pack(
    scored: Iterable[Scored], *, top_k: int, max_bytes: int, distinct: bool = False,
    smallest: int = 0, min_score_ratio: float = 0.0, memos: TextMemos | None = None,
) -> tuple[str, list[tuple[Scored, int]]]:
    """The pack text and the chosen items with their rendered UTF-8 sizes, best first.

    `scored` must come best first (as :func:`~minionsd.retrieval.rank.rank_lazily` yields
    it): the first item's score is the best, and reading stops at the first item scoring
    below :func:`score_floor` of it (it is not packed, and neither is anything after it),
    whether or not the best item itself fits.

    With `distinct`, an item is checked against the packed ones for (near) duplicate bodies
    only once it fits: cheaper than deduping every candidate first, and a smaller copy of a
    best item too big to fit can still carry its content.

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
    floor: float | None = None
    for item in scored:
        if floor is None:
            floor = score_floor(item.score, min_score_ratio)
        elif item.score < floor:
            break
        if used + min_size(item.record) > max_bytes:
            continue  # cannot fit: skip it without rendering
        text, size = _rendered(item.record, memos)
        extra = size + (separator if chosen else 0)
        if used + extra > max_bytes:
            continue
        if seen is not None and not seen.admit(item):
            continue
        chosen.append((item, size))
        parts.append(text)
        used += extra
        if full():
            break  # before the next item is read
    return ITEM_SEPARATOR.join(parts), chosen
