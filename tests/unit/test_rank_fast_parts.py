"""rank's score parts are exactly what the plain per-record formula gives.

The reference below is the score written out per record, every value looked up and checked
where it is used (the module docstring of minionsd.memory.retrieval.rank); rank works out what
is the same for every candidate of one ranking once. Compared on arbitrary candidates: odd
types and values in every field, times with and without a zone, tasks naming dates and people.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from minionsd.memory.retrieval import rank as r
from minionsd.memory.retrieval.cues import task_cues


def reference_parts(record: dict[str, Any], bm25: float, best: float, most: int,
                    scope_boosts: dict[str, float], now: datetime, cues: Any,
                    authors: dict[str, float]) -> tuple[tuple[str, float], ...]:
    lexical = bm25 / best if best < 0 else 1.0
    count = record.get("matched_terms")
    coverage = (r.W_COVERAGE * count / most
                if most > 0 and isinstance(count, int) and not isinstance(count, bool) else 0.0)
    age = None
    created_at = record.get("created_at")
    if isinstance(created_at, str):
        moment = r.parse_moment(created_at)
        if moment is not None:
            reference = now if now.tzinfo else now.replace(tzinfo=UTC)
            age = max(0.0, (reference - moment).total_seconds() / 86400.0)
    scope = record.get("scope")
    author = record.get("author")
    if not isinstance(author, str):
        author = ""
    if author not in authors:
        authors[author] = r.W_AUTHOR if cues.named(author) else 0.0
    return (
        ("lexical", max(0.0, min(1.0, lexical))),
        ("coverage", max(0.0, coverage)),
        ("scope", scope_boosts.get(scope, r.SCOPE_BOOST["global"])
         if isinstance(scope, str) else r.SCOPE_BOOST["global"]),
        ("trust", r.TRUST_BOOST.get(str(record.get("trust")), 0.0)),
        ("recency", 0.0 if age is None else r.W_RECENCY * 0.5 ** (age / r.RECENCY_HALF_LIFE_DAYS)),
        ("importance", r.W_IMPORTANCE * r._unit(record.get("importance"))),
        ("confidence", r.W_CONFIDENCE * r._unit(record.get("confidence"))),
        ("pinned", r.W_PINNED if record.get("pinned") is True or record.get("pinned") == 1
         else 0.0),
        ("date", r.W_DATE if cues.has_dates and cues.dated(record.get("created_at")) else 0.0),
        ("author", authors[author]),
    )


ODD = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.text(max_size=6),
                st.floats(allow_nan=True, allow_infinity=True), st.lists(st.integers(), max_size=2))
UNIT = st.one_of(st.floats(-1, 2), st.sampled_from([0.0, 1.0, 0.5, float("nan"), True, 1, 2]), ODD)
DATES = st.one_of(
    st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2027, 1, 1)).map(
        lambda d: d.isoformat()),
    st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2027, 1, 1),
                 timezones=st.just(UTC)).map(lambda d: d.isoformat().replace("+00:00", "Z")),
    st.sampled_from(["2026-11-02T10:00:00Z", "2026-11-05", "not a date", ""]), ODD)
RECORD = st.fixed_dictionaries({
    "id": st.text(max_size=4), "bm25": st.floats(-30, 0),
    "matched_terms": st.one_of(st.integers(0, 9), ODD),
    "created_at": DATES,
    "scope": st.one_of(st.sampled_from(["global", "project:alpha", "agent:dallas",
                                        "project:beta"]), ODD),
    "trust": st.one_of(st.sampled_from(["human", "system", "agent", "external"]), ODD),
    "importance": UNIT, "confidence": UNIT,
    "pinned": st.one_of(st.booleans(), st.sampled_from([0, 1, 1.0, "1"]), ODD),
    "author": st.one_of(st.sampled_from(["alice", "Bob", "carol dean", "x-y", ""]), ODD),
})
TASK_TEXT = st.sampled_from(["", "what did Alice decide on 2026-11-02", "Bob in October 2026",
                             "carol dean said in July", "nothing to see"])


@settings(max_examples=300)
@given(st.lists(RECORD, max_size=12), TASK_TEXT, st.booleans(),
       st.sampled_from([None, "alpha"]), st.sampled_from([None, "dallas"]))
def test_every_part_equals_the_plain_formula(records: list[dict[str, Any]], text: str,
                                             aware: bool, project: str | None,
                                             agent: str | None) -> None:
    now = datetime(2026, 12, 1, 9, tzinfo=UTC) if aware else datetime(2026, 12, 1, 9)
    cues = task_cues({"title": text}, [text])
    ranked = r.rank(records, task_files=[], project=project, agent=agent, now=now, cues=cues)
    lexical = [r._bm25(c) for c in records]
    best = min(lexical, default=0.0)
    most = max((c.get("matched_terms") for c in records
                if isinstance(c.get("matched_terms"), int)
                and not isinstance(c.get("matched_terms"), bool)), default=0)
    authors: dict[str, float] = {}
    boosts = r._scope_boosts(project, agent)
    expected = {}
    for index, record in enumerate(records):
        parts = reference_parts(record, lexical[index], best, most, boosts, now, cues, authors)
        expected[index] = (*parts[:4], ("path", 0.0), *parts[4:])
    assert len(ranked) == len(records)
    for scored in ranked:
        index = next(i for i, c in enumerate(records) if c is scored.record)
        assert _same(scored.parts, expected[index])
        assert _same(((None, scored.score),), ((None, sum(v for _n, v in expected[index])),))


def _same(a: tuple[tuple[Any, float], ...], b: tuple[tuple[Any, float], ...]) -> bool:
    """Equal names and bit-for-bit equal values (NaN equal to NaN)."""
    return len(a) == len(b) and all(
        x[0] == y[0] and (x[1] == y[1] or (math.isnan(x[1]) and math.isnan(y[1])))
        and math.copysign(1.0, x[1]) == math.copysign(1.0, y[1]) for x, y in zip(a, b, strict=True))


def test_a_zone_other_than_utc_ages_the_same() -> None:
    zone = timezone(timedelta(hours=5))
    record = {"id": "M-1", "bm25": -3.0, "created_at": "2026-11-01T10:00:00+05:00"}
    now = datetime(2026, 12, 1, 15, tzinfo=zone)
    cues = task_cues({"title": ""}, [""])
    parts = r.rank([record], task_files=[], project=None, agent=None, now=now, cues=cues)[0].parts
    assert _same(parts[:4] + parts[5:], reference_parts(record, -3.0, -3.0, 0, {}, now, cues, {}))
