"""When and who a task names: the dates it mentions and the words a record's author may be.

This module owns two rank boosts' inputs (:mod:`.rank`): a task that names a day or a month
("the outage on 2026-11-02", "what broke in October 2025", "on 13 October") points at the
records written then, and one that names a person ("what did Alice decide about the cache")
at the records that person wrote. Pure functions: no SQL, no clock.

Dates read: ISO days (``2026-11-02``); a month name with a day and a year in either order
(``October 13, 2023``, ``13 Oct 2023``); a month with a year (``October 2023``, ``Oct of
2023``); a capitalised month name alone (``in July``; not ``May``, which is mostly the verb)
or with a day only (``on 13 October``), in any year. A day matches records written on it or
in the ``DAY_WINDOW_DAYS`` after it (a note tells of what happened before it was written);
a month matches records written in it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, timedelta
from types import MappingProxyType
from typing import Any

from minionsd.memory.retrieval.taskwords import lower_words

DAY_WINDOW_DAYS = 7
MAX_DATES = 8  # dates read from one task (a pasted log could hold hundreds)

_MONTH_NAMES = (
    ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",),
    ("june", "jun"), ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"),
    ("october", "oct"), ("november", "nov"), ("december", "dec"))
_MONTHS = MappingProxyType({name: number for number, names in enumerate(_MONTH_NAMES, 1)
                            for name in names})
# Without a year a month is read only written out and capitalised ("in July", not "jul").
_FULL_NAMES = frozenset(names[0].capitalize() for names in _MONTH_NAMES)
_MONTH = r"(?P<month>[A-Za-z]{3,9})\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_DATE_RES = (
    re.compile(r"\b(?P<year>(?:19|20)\d\d)-(?P<month>[01]\d)-(?P<day>[0-3]\d)\b"),
    re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b"),
    re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b"),
    re.compile(rf"\b{_MONTH},?\s+(?:of\s+)?{_YEAR}\b"),
    re.compile(rf"\b{_DAY}\s+(?:of\s+)?(?P<month>[A-Z][a-z]{{2,8}})\b"),
    re.compile(rf"\b(?P<month>[A-Z][a-z]{{2,8}})\s+{_DAY}\b(?!:)"),
    re.compile(r"\b(?P<month>[A-Z][a-z]{2,8})\b"),
)
_WORD_RE = re.compile(r"[^\W_]+")
_ISO_DAY_RE = re.compile(r"\d-[01]\d-[0-3]\d")  # a task without one or a month name has no date


@dataclass(frozen=True)
class Cues:
    """A task's dates, as what a record's created_at must look like, and its words."""

    days: tuple[tuple[str, str], ...] = ()  # (first, last) YYYY-MM-DD, inclusive
    months: frozenset[str] = frozenset()  # YYYY-MM
    any_year: frozenset[str] = frozenset()  # MM or MM-DD, in any year
    words: frozenset[str] = frozenset()  # the task's words, lower-cased

    @property
    def has_dates(self) -> bool:
        return bool(self.days or self.months or self.any_year)

    def dated(self, created_at: Any) -> bool:
        """Whether a record written at `created_at` (ISO text) falls on a date the task names."""
        if not isinstance(created_at, str) or len(created_at) < 10:
            return False
        day = created_at[:10]
        return (day[:7] in self.months or day[5:7] in self.any_year
                or day[5:10] in self.any_year
                or any(first <= day <= last for first, last in self.days))

    def named(self, author: Any) -> bool:
        """Whether the task names `author` (every word of it, any case)."""
        if not isinstance(author, str) or not self.words:
            return False
        lowered = author.lower()
        if lowered.isalnum():  # the usual one-word name, without a regular expression
            return lowered in self.words
        parts = _WORD_RE.findall(lowered)
        return bool(parts) and all(part in self.words for part in parts)


def task_cues(task: Mapping[str, Any], texts: list[str]) -> Cues:
    """The cues of a task whose free-text fields are `texts`."""
    if not isinstance(task, Mapping):
        return Cues()
    days: list[tuple[str, str]] = []
    months: set[str] = set()
    any_year: set[str] = set()
    found: set[str] = set()
    for text in texts:
        found.update(lower_words(text))
    words = frozenset(found)
    if not words.isdisjoint(_MONTHS) or any(_ISO_DAY_RE.search(text) for text in texts):
        for text in texts:
            _read_dates(text, days, months, any_year)
    return Cues(tuple(days[:MAX_DATES]), frozenset(months), frozenset(any_year), words)


def _read_dates(text: str, days: list[tuple[str, str]], months: set[str],
                any_year: set[str]) -> None:
    taken: list[tuple[int, int]] = []  # spans already read by a fuller pattern
    for pattern in _DATE_RES:
        for match in pattern.finditer(text):
            if len(days) + len(months) + len(any_year) >= MAX_DATES:
                return
            if any(start < match.end() and match.start() < end for start, end in taken):
                continue
            found = _date_of(match.groupdict())
            if found is None:
                continue
            taken.append(match.span())
            year, month, day = found
            if year and day:
                first = date(year, month, day)
                last = first + timedelta(days=DAY_WINDOW_DAYS)
                days.append((first.isoformat(), last.isoformat()))
            elif year:
                months.add(f"{year:04d}-{month:02d}")
            else:
                any_year.add(f"{month:02d}-{day:02d}" if day else f"{month:02d}")


def _date_of(groups: dict[str, str | None]) -> tuple[int, int, int] | None:
    """(year or 0, month, day or 0) of a match; None when it is no date."""
    text = groups["month"] or ""
    month = int(text) if text.isdigit() else _MONTHS.get(text.lower(), 0)
    year = int(groups.get("year") or 0)
    day = int(groups.get("day") or 0)
    if not 1 <= month <= 12 or day > 31:
        return None
    if not year and text not in _FULL_NAMES:
        return None
    if not year and not day and text == "May":
        return None  # mostly the verb
    try:
        date(year or 2000, month, day or 1)
    except ValueError:
        return None
    return year, month, day

