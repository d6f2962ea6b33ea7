"""Dedupe and pack ranked records into the Relevant Memory text.

This module owns what an agent reads of each recalled record and how many fit. Pure functions.

* Duplicates and restatements are left out while packing (:mod:`.dedupe`); a restatement left
  out is named on an ``also: M-…`` last line of the record kept for it (at most ``ALSO_MAX``
  names, counted in that record's bytes and the budget).
* :func:`render_item` gives each record a provenance line (id, type, scope, trust, date, source),
  then its title and body.
* :func:`pack` takes records best first, at most ``top_k`` of them, while the rendered text stays
  within ``max_bytes`` UTF-8 bytes; a record that does not fit is skipped and a later, smaller one
  may still be taken. The best record bigger than a whole pack is then packed last, cut to
  the room left (at least ``CUT_MIN_BYTES``), with a line naming its id. The score cutoff
  (:class:`Cutoff`) leaves out weak matches: a record scoring below ``min_score_ratio`` times
  the best record's score (:func:`score_floor`) is packed only when it closely follows the
  record packed before it, or holds a rare
  identifier, error code or file name of the task that no packed record holds, or (given
  `related`) shares the rare words of the first record packed (fewer of them when it adds a
  rare word of the task the pack lacks): ``top_k`` is a ceiling, not a quota. The result is
  what goes inside the untrusted-input fence.

Invariant: ``len(text.encode()) <= max_bytes`` and the reported byte sizes add up to the text
(plus one blank line between items).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from minionsd.memory.retrieval.dedupe import ADMITTED, Distinct, dedupe
from minionsd.memory.retrieval.rank import Scored

if TYPE_CHECKING:
    from minionsd.memory.retrieval.memos import TextMemos

__all__ = ["Cutoff", "dedupe", "min_size", "pack", "render_fields", "render_item", "score_floor"]

# Below the floor, a record this close to the one packed before it is packed, down to
# LAST_FLOOR of the floor (both chosen on the first evaluation set: docs/retrieval.md).
FOLLOW = 0.8
LAST_FLOOR = 0.7
ITEM_SEPARATOR = "\n\n"
# A restatement left out is named on its kept record's last line, "also: M-…, M-…": at most
# this many names a record (the pack's byte budget counts the line).
ALSO_PREFIX = "\nalso: "
ALSO_MAX = 3
# A record below the floor that holds a rare word of the task no packed record holds needs
# only this many rare words in common with the first record packed (.related), instead of
# .related.SHARED_MIN: it adds a side of the task the pack lacks, and the shared word says it
# is about the same thing (chosen on the blind evaluation set: docs/retrieval.md).
ADDING_SHARED = 1
# A record too big for a whole pack is packed cut to the room left, when at least this many
# bytes are left: its beginning and its id (memory.get has the rest) beat leaving it out.
CUT_MIN_BYTES = 1024
# A record sharing .related.SHARED_MIN rare words with the first record packed is packed down
# to this share of the floor (below LAST_FLOOR: such a record names the same incident or
# component however few of the task's words it holds; chosen on the blind set).
RELATED_FLOOR = 0.5


class Related(Protocol):
    """related(first packed record, record[, least]): do the two share at least `least`
    rare words, or the relatedness's own minimum without it (:mod:`.related`)?
    ``adds(record, packed records)``: does the record hold a rare word of the task that none
    of the packed records holds?"""

    def __call__(self, first: Mapping[str, Any], record: Mapping[str, Any],
                 least: int = ...) -> bool: ...

    def adds(self, record: Mapping[str, Any],
             packed: Sequence[Mapping[str, Any]]) -> bool: ...


_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]+")
_DATE_RE = re.compile(r"\d{4}-\d{2}-\d{2}")


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
    overall. A record scoring at least ``LAST_FLOOR`` of the floor is also packed when
    `related` (:mod:`.related`) says it is about the same thing as the first record packed:
    it shares ``SHARED_MIN`` rare words with it, or only ``ADDING_SHARED`` when the record
    holds a rare word of the task (naming term or not: `related`'s ``adds``) that no packed
    record holds, so that the pack covers the task's sides and not only the one the best
    match is about. Below ``LAST_FLOOR`` of the floor, down to ``RELATED_FLOOR`` of it, a
    record is packed only when it shares ``SHARED_MIN`` rare words with the first one.
    With ratio 0 nothing is cut.
    """

    def __init__(self, best: float, ratio: float, rare_left: int = 0,
                 related: Related | None = None) -> None:
        self.floor = score_floor(best, ratio)
        self.lowest = self.floor * LAST_FLOOR
        self.related_lowest = self.floor * min(LAST_FLOOR, RELATED_FLOOR)
        self.last = best  # the score of the last record packed for its score
        self.named: set[str] = set()
        self.rare_left = rare_left  # records with rare terms not yet asked about
        self.related = related
        self.first: Scored | None = None  # the first record packed
        self.kept: list[Mapping[str, Any]] = []  # the packed records

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
        if self.related is not None and self.first is not None \
                and item.score >= self.related_lowest:
            # A later record may still be related; above the last floor, one that adds a
            # rare word of the task the pack lacks needs fewer words in common.
            first = self.first.record
            if item.score >= self.lowest and self.related.adds(item.record, self.kept):
                return self.related(first, item.record, ADDING_SHARED)
            return self.related(first, item.record)
        # Later records score no more, so only a rare term can let one in.
        return False if self.rare_left > 0 else None

    def packed(self, item: Scored) -> None:
        if self.first is None:
            self.first = item
        rare = item.record.get("rare_terms") or ()
        if item.score >= self.floor or (item.score >= self.lowest
                                        and item.score >= FOLLOW * self.last):
            self.last = item.score
        self.named.update(rare)
        self.kept.append(item.record)


def pack(
    scored: Iterable[Scored], *, top_k: int, max_bytes: int, distinct: bool = False,
    smallest: int = 0, min_score_ratio: float = 0.0, memos: TextMemos | None = None,
    rare_left: int = 0, related: Related | None = None,
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
    smallest = min(smallest, CUT_MIN_BYTES)  # a record too big for any pack fits cut
    chosen: list[tuple[Scored, int]] = []
    parts: list[str] = []
    too_big: Scored | None = None  # the best record admitted that no pack could hold
    also: dict[int, list[str]] = {}  # position in chosen -> restatements left out
    used = 0
    separator = len(ITEM_SEPARATOR.encode("utf-8"))
    seen = Distinct(top_k, memos) if distinct else None

    def full() -> bool:
        return (len(chosen) >= top_k
                or used + smallest + (separator if chosen else 0) > max_bytes)

    if full():
        return "", chosen
    cutoff: Cutoff | None = None
    for item in scored:
        if cutoff is None:
            cutoff = Cutoff(item.score, min_score_ratio, rare_left, related)
        admitted = cutoff.admits(item)
        if admitted is None:
            break
        if not admitted:
            continue
        if used + min_size(item.record) > max_bytes:
            if too_big is None and min_size(item.record) > max_bytes:
                too_big = item
            continue  # cannot fit: skip it without rendering
        text, size = _rendered(item.record, memos)
        extra = size + (separator if chosen else 0)
        if used + extra > max_bytes:
            if too_big is None and size > max_bytes:
                too_big = item
            continue
        if seen is not None:
            verdict = seen.check(item)
            if verdict != ADMITTED:
                if verdict is not None:  # a restatement of a packed record: name it there
                    used += _name_also(also, verdict, item, max_bytes - used)
                continue
        chosen.append((item, size))
        cutoff.packed(item)
        parts.append(text)
        used += extra
        if full():
            break  # before the next item is read
    room = max_bytes - used - (separator if chosen else 0)
    if too_big is not None and len(chosen) < top_k and room >= CUT_MIN_BYTES \
            and (seen is None or seen.check(too_big) == ADMITTED):
        cut = _cut_to(too_big.record, room)  # last: a smaller copy or the rest came first
        if cut is not None:
            chosen.append((too_big, cut[1]))
            parts.append(cut[0])
    for position, names in also.items():
        line = ALSO_PREFIX + ", ".join(names)
        parts[position] += line
        item, size = chosen[position]
        chosen[position] = (item, size + len(line.encode("utf-8")))
    return ITEM_SEPARATOR.join(parts), chosen


def _cut_to(record: Mapping[str, Any], room: int) -> tuple[str, int] | None:
    """The rendered record cut to at most `room` UTF-8 bytes: its provenance line, as much of
    the rest as fits (on a character boundary, at a line end when one is near), and a last
    line saying it was cut and how to read all of it. None when not even that fits."""
    text, size = _rendered(record)
    notice = (f"\n[cut to fit: {size:,} bytes in all; memory_get "
              f"{_one_line(record.get('id'))} shows the rest]")
    keep = room - len(notice.encode("utf-8"))
    head = text.split("\n", 1)[0]
    if keep <= len(head.encode("utf-8")):
        return None
    shown = text.encode("utf-8")[:keep].decode("utf-8", "ignore")
    line_end = shown.rfind("\n")
    if line_end >= max(len(head), len(shown) * 4 // 5):
        shown = shown[:line_end]
    cut = shown.rstrip() + notice
    return cut, len(cut.encode("utf-8"))


def _name_also(also: dict[int, list[str]], position: int, item: Scored, room: int) -> int:
    """Names `item` on the also line of the packed record at `position` when the line has a
    place left and the bytes fit in `room`; returns the bytes it adds."""
    names = also.get(position, [])
    if len(names) >= ALSO_MAX:
        return 0
    name = _one_line(item.record.get("id"))
    added = len((", " if names else ALSO_PREFIX).encode("utf-8")) + len(name.encode("utf-8"))
    if added > room:
        return 0
    also[position] = [*names, name]
    return added
