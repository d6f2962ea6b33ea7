"""Dates and names a task gives (retrieval's date and author boosts)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from minionsd.memory.retrieval.cues import MAX_DATES, Cues, task_cues
from minionsd.memory.retrieval.query import cues
from minionsd.memory.retrieval.rank import W_AUTHOR, W_DATE, rank


def _cues(text: str) -> Cues:
    return task_cues({"id": "W-1"}, [text])


def test_days_months_and_months_in_any_year() -> None:
    assert _cues("the outage on 2026-11-02 at 10:30").days == (("2026-11-02", "2026-11-09"),)
    for text in ("on October 13, 2023", "on 13 October 2023", "13th of Oct, 2023",
                 "Oct. 13 2023"):
        assert _cues(text).days == (("2023-10-13", "2023-10-20"),), text
    assert _cues("what broke in December 2023").months == {"2023-12"}
    assert _cues("camping in June and in July?").any_year == {"06", "07"}
    assert _cues("the deploy of 3 March").any_year == {"03-03"}
    assert _cues("on 31 February").any_year == {"02"}  # no such day: the month is left


def test_words_that_are_no_dates() -> None:
    for text in ("We may need to march on", "May I ask?", "meeting oct 5 at 12:30",
                 "Augustus wrote 2023-13-45", "error 2023 in the log",
                 "version 10 of the API"):
        found = _cues(text)
        assert not (found.days or found.months or found.any_year), text


def test_dated_and_named() -> None:
    found = _cues("What did Alice Smith change on 2 March 2026 and in July?")
    assert found.dated("2026-03-02T09:00:00.000Z") and found.dated("2026-03-09T23:59:00Z")
    assert not found.dated("2026-03-10T00:00:00Z") and not found.dated("2026-03-01T23:00:00Z")
    assert found.dated("2019-07-30T00:00:00Z") and not found.dated(None)
    assert found.named("alice") and found.named("Alice Smith") and not found.named("bob")
    assert not found.named("") and not found.named(None) and not Cues().named("alice")


def test_task_fields_give_the_cues_and_paths_do_not() -> None:
    task = {"id": "W-1", "title": "Ask Dallas", "description": "broke on 2026-01-05",
            "files": ["logs/2026-02-01.txt"], "pr": {"body": "see the July notes"}}
    found = cues(task)
    assert found.days == (("2026-01-05", "2026-01-12"),) and found.any_year == {"07"}
    assert found.named("dallas")


@given(st.text(max_size=300))
def test_any_text_gives_well_formed_cues(text: str) -> None:
    found = _cues(text * 3)
    assert len(found.days) + len(found.months) + len(found.any_year) <= MAX_DATES
    assert all(first <= last for first, last in found.days)


def test_rank_adds_the_date_and_author_boosts() -> None:
    def rec(rid: str, created: str, author: str) -> dict[str, object]:
        return {"id": rid, "bm25": -5.0, "created_at": created, "author": author,
                "scope": "global", "trust": "human", "body": "cache eviction"}

    from datetime import UTC, datetime

    found = cues({"id": "W-1", "title": "What did Alice change in the cache on 2 March 2026?"})
    scored = rank([rec("M-1", "2026-05-01T00:00:00Z", "bob"),
                   rec("M-2", "2026-03-03T00:00:00Z", "bob"),
                   rec("M-3", "2026-05-01T00:00:00Z", "alice")],
                  task_files=[], project=None, agent=None,
                  now=datetime(2026, 6, 1, tzinfo=UTC), cues=found)
    parts = {s.id: dict(s.parts) for s in scored}
    assert {s.id for s in scored[:2]} == {"M-2", "M-3"} and scored[2].id == "M-1"
    assert parts["M-2"]["date"] == W_DATE and parts["M-3"]["author"] == W_AUTHOR
    assert parts["M-1"]["date"] == parts["M-1"]["author"] == 0.0
