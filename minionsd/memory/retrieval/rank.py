"""Deterministic rerank of retrieval candidates: lexical relevance plus documented boosts.

This module owns the score that orders a task's candidate records. It is a pure function of
its inputs (no clock reads, no randomness): the same candidates, task files, project, agent and
``now`` always give the same order, and ties are broken by record id, ascending.

    score = lexical + coverage + scope + trust + path + recency + importance + confidence + pinned
            + date + author

    lexical    = bm25 / best_bm25                       0..1 (1.0 for the best lexical match)
    coverage   = 0.08 * matched_terms / most_matched    0..0.08 (0 when matched_terms is absent)
    scope      = agent 0.10, project 0.06, global 0
    trust      = human 0.08, system 0.06, agent 0.02, external 0
    path       = 0.20 if a record path (or a path written in its body) is a task file, else
                 0.10 if one only has the same file name as a task file, else 0
                 (paths compare case-insensitively; "auth/x.py" is "src/auth/x.py")
    recency    = 0.08 * 0.5 ** (age_days / 60)           halves every 60 days; future dates = 0 days
    importance = 0.06 * importance                       importance and confidence clamped to 0..1
    confidence = 0.04 * confidence
    pinned     = 0.06 when pinned
    date       = 0.20 when the record was written on a day (or in the week after it) or in a
                 month the task names (:mod:`.cues`)
    author     = 0.20 when the task names the record's author

bm25 follows SQLite's sign (more negative is better), so ``bm25 / best_bm25`` is the share of the
best candidate's lexical strength. The boosts add up to at most 1.10, but a record earns only a
few of them (the date and author boosts only when the task names a date or a person): they
reorder candidates of similar lexical strength.
"""

from __future__ import annotations

import heapq
import math
import operator
import posixpath
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from minionsd.memory.retrieval.cues import Cues
from minionsd.memory.retrieval.query import normalise_path

if TYPE_CHECKING:
    from minionsd.memory.retrieval.memos import TextMemos

W_COVERAGE = 0.08
SCOPE_BOOST = MappingProxyType({"agent": 0.10, "project": 0.06, "global": 0.0})
TRUST_BOOST = MappingProxyType({"human": 0.08, "system": 0.06, "agent": 0.02, "external": 0.0})
W_PATH_EXACT = 0.20
W_PATH_NAME = 0.10
W_RECENCY = 0.08
RECENCY_HALF_LIFE_DAYS = 60.0
W_IMPORTANCE = 0.06
W_CONFIDENCE = 0.04
W_PINNED = 0.06
W_DATE = 0.20
W_AUTHOR = 0.20  # chosen on LoCoMo conversations 0-4, reported on 5-9 (docs/retrieval.md)

_BODY_SCAN_CHARS = 65536
_VALUE = operator.itemgetter(1)  # of a (name, value) part
_NO_CUES = Cues()
_GLOBAL_BOOST = SCOPE_BOOST["global"]
# The path-like word around a place where a task file's name occurs in a body.
_PATH_AROUND_RE = re.compile(r"([\w./\-]*\w)")


@dataclass(frozen=True)
class Scored:
    """A candidate record with its final score; `parts` names each term of the sum."""

    score: float
    record: dict[str, Any]
    parts: tuple[tuple[str, float], ...] = field(default=(), compare=False)

    @property
    def id(self) -> str:
        return str(self.record.get("id", ""))


@dataclass(frozen=True)
class _TaskFiles:
    """The task's files, prepared once per ranking so each record costs a few set lookups."""

    files: frozenset[str]  # normalised, lower-case
    slashed: frozenset[str]  # files with a directory part
    suffixes: frozenset[str]  # "auth/x.py" for "src/auth/x.py": what a record may write
    names: frozenset[str]  # file names

    @classmethod
    def of(cls, files: Sequence[str]) -> _TaskFiles:
        suffixes = {suffix for f in files for suffix in _dir_suffixes(f)}
        return cls(frozenset(files), frozenset(f for f in files if "/" in f),
                   frozenset(suffixes), frozenset(posixpath.basename(f) for f in files) - {""})


def _dir_suffixes(path: str) -> list[str]:
    """'a/b/c.py' -> ['b/c.py']: the proper suffixes that still hold a directory part."""
    parts = path.split("/")
    return ["/".join(parts[i:]) for i in range(1, len(parts) - 1)]


def _path_boost(record: Mapping[str, Any], task: _TaskFiles) -> float:
    """W_PATH_EXACT / W_PATH_NAME / 0."""
    if not task.files:
        return 0.0
    paths = record.get("paths")
    listed = paths if isinstance(paths, list) else []
    own = [p for p in (normalise_path(p).lower() for p in listed
                       if isinstance(p, str) and _may_match(p, task.names)) if p]
    body = record.get("body")
    if isinstance(body, str):
        own += _paths_naming(body[:_BODY_SCAN_CHARS].lower(), task.names)
    best = 0.0
    for mine in own:
        # Equal, or one is the other with leading directories cut ('auth/x.py' names
        # 'src/auth/x.py'); a bare file name only shares the name.
        if mine in task.files or ("/" in mine and mine in task.suffixes) or any(
            suffix in task.slashed for suffix in _dir_suffixes(mine)
        ):
            return W_PATH_EXACT
        if posixpath.basename(mine) in task.names:
            best = W_PATH_NAME
    return best


def _may_match(path: str, names: frozenset[str]) -> bool:
    """False when `path` cannot earn a path boost: every kind of match shares the file name.

    A cheap look at the last component, so most paths skip normalisation; "." and ".." (which
    normalising would replace) are passed on to the full check.
    """
    trimmed = path.strip().replace("\\", "/").rstrip("/")
    name = trimmed[trimmed.rfind("/") + 1 :].lower()
    return name in names or name in ("", ".", "..")


def _paths_naming(body: str, names: frozenset[str]) -> list[str]:
    """Paths written in `body` whose file name is one of `names` (a substring search per
    name, much cheaper than finding every path in every body)."""
    found = []
    for name in names:
        start = body.find(name)
        while start != -1:
            match = _PATH_AROUND_RE.match(body, _path_start(body, start))
            if match:
                found.append(normalise_path(match.group(1)))
            start = body.find(name, start + len(name))
    return [p for p in found if p]


def _path_start(text: str, index: int) -> int:
    while index > 0 and (text[index - 1].isalnum() or text[index - 1] in "_./-"):
        index -= 1
    return index


def _unit(value: Any) -> float:
    if type(value) is float and 0.0 < value <= 1.0:  # the usual case, checked cheaply
        return value
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        return 0.0
    return min(1.0, max(0.0, float(value)))


def parse_moment(created_at: str) -> datetime | None:
    """A created_at text as an aware datetime (memoised per index: memos.py)."""
    try:
        moment = datetime.fromisoformat(created_at.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _scope_boosts(project: str | None, agent: str | None) -> dict[str, float]:
    """Scope string -> boost for this task; any other scope counts as global."""
    boosts = {}
    if project:
        boosts[f"project:{project}"] = SCOPE_BOOST["project"]
    if agent:
        boosts[f"agent:{agent}"] = SCOPE_BOOST["agent"]
    return boosts


def _bm25(record: Mapping[str, Any]) -> float:
    value = record.get("bm25")
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        return 0.0
    return float(value)


def rank(
    candidates: Sequence[Mapping[str, Any]],
    *,
    task_files: Sequence[str],
    project: str | None,
    agent: str | None,
    now: datetime,
    memos: TextMemos | None = None,
    cues: Cues | None = None,
) -> list[Scored]:
    """Score and order the candidates, best first (ties by id ascending)."""
    return list(rank_lazily(candidates, task_files=task_files, project=project, agent=agent,
                            now=now, memos=memos, cues=cues))


def rank_lazily(
    candidates: Sequence[Mapping[str, Any]],
    *,
    task_files: Sequence[str],
    project: str | None,
    agent: str | None,
    now: datetime,
    memos: TextMemos | None = None,
    cues: Cues | None = None,
) -> Iterator[Scored]:
    """The candidates in :func:`rank` order, scored as they are asked for.

    The path boost is most of the cost of a score, so every other part is worked out first;
    a record's path boost is worked out only when, with the largest boost it could get, it
    could come next. A caller that stops early (packing stops once nothing else can fit)
    skips the path boosts of the records it never reached.
    """
    # Paths compare case-insensitively: "Src/Auth.py" in a note means src/auth.py.
    files = _TaskFiles.of(
        [p.lower() for p in (normalise_path(f) for f in task_files if isinstance(f, str)) if p])
    lexical = [_bm25(c) for c in candidates]
    best = min(lexical, default=0.0)
    matched = [c.get("matched_terms") for c in candidates]
    most = max((m for m in matched if isinstance(m, int) and not isinstance(m, bool)), default=0)
    scope_boosts = _scope_boosts(project, agent)
    most_path = W_PATH_EXACT if files.files else 0.0
    pending: list[tuple[Any, ...]] = []
    moment_of = memos.moment if memos is not None else parse_moment
    parts_of = _Parts(best, most, scope_boosts, now, moment_of, cues or _NO_CUES)
    for index, record in enumerate(candidates):
        parts = parts_of(record, lexical[index])
        record_id = str(record.get("id", ""))
        # The bound is nudged up so that float rounding cannot put a score above it.
        bound = sum(map(_VALUE, parts)) + most_path + 1e-9
        pending.append((-bound, record_id, index, parts, False))
    heapq.heapify(pending)
    while pending:
        _negative, record_id, index, parts, exact = heapq.heappop(pending)
        if exact:
            yield parts
            continue
        record = candidates[index]
        path = _path_boost(record, files) if most_path else 0.0
        full = (*parts[:4], ("path", path), *parts[4:])
        scored = Scored(sum(map(_VALUE, full)), record, full)
        heapq.heappush(pending, (-scored.score, record_id, index, scored, True))


class _Parts:
    """Every part of a record's score but the path boost, in the order of the sum, with what
    is the same for every candidate of one ranking worked out once."""

    def __init__(self, best: float, most: int, scope_boosts: dict[str, float], now: datetime,
                 moment_of: Callable[[str], datetime | None], cues: Cues) -> None:
        self.best = best
        self.most = most
        self.scope_boosts = scope_boosts
        self.reference = now if now.tzinfo else now.replace(tzinfo=UTC)
        self.moment_of = moment_of
        self.cues = cues
        self.has_dates = cues.has_dates
        self.authors: dict[str, float] = {}  # author -> boost, worked out once per author

    def __call__(self, record: Mapping[str, Any], bm25: float) -> tuple[tuple[str, float], ...]:
        best = self.best
        most = self.most
        get = record.get
        lexical = bm25 / best if best < 0 else 1.0
        count = get("matched_terms")
        coverage = (
            W_COVERAGE * count / most
            if most > 0 and isinstance(count, int) and not isinstance(count, bool)
            else 0.0
        )
        created_at = get("created_at")
        recency = 0.0
        if isinstance(created_at, str):
            moment = self.moment_of(created_at)
            if moment is not None:
                age = max(0.0, (self.reference - moment).total_seconds() / 86400.0)
                recency = W_RECENCY * 0.5 ** (age / RECENCY_HALF_LIFE_DAYS)
        scope = get("scope")
        author = get("author")
        if not isinstance(author, str):
            author = ""
        authors = self.authors
        if author not in authors:
            authors[author] = W_AUTHOR if self.cues.named(author) else 0.0
        importance = get("importance")
        if not (type(importance) is float and 0.0 < importance <= 1.0):
            importance = _unit(importance)
        confidence = get("confidence")
        if not (type(confidence) is float and 0.0 < confidence <= 1.0):
            confidence = _unit(confidence)
        pinned = get("pinned")
        return (
            ("lexical", max(0.0, min(1.0, lexical))),
            ("coverage", max(0.0, coverage)),
            ("scope", self.scope_boosts.get(scope, _GLOBAL_BOOST)
             if isinstance(scope, str) else _GLOBAL_BOOST),
            ("trust", TRUST_BOOST.get(str(get("trust")), 0.0)),
            ("recency", recency),
            ("importance", W_IMPORTANCE * importance),
            ("confidence", W_CONFIDENCE * confidence),
            ("pinned", W_PINNED if pinned is True or pinned == 1 else 0.0),
            ("date", W_DATE if self.has_dates and self.cues.dated(created_at) else 0.0),
            ("author", authors[author]),
        )
