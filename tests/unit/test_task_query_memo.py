"""A task's query (terms, naming terms, files, cues) is worked out once per task: an agent's
prompts ask about the same task again and again, and reading its text is a tenth of a
retrieval. The remembered query is exactly what the plain functions give."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from minionsd.memory import recall
from minionsd.memory.retrieval import memos as memos_mod
from minionsd.memory.retrieval import query
from minionsd.memory.retrieval.memos import TaskQuery, TextMemos
from tests.harness import app_with_record


def test_a_task_asked_again_is_not_read_again(short_home, monkeypatch):
    read: list[str] = []
    plain = query.task_terms

    def task_terms(task, *args):
        read.append(task["title"])
        return plain(task, *args)

    monkeypatch.setattr(query, "task_terms", task_terms)
    task = {"id": "t1", "title": "flush the cache pool", "files": ["src/cache/pool.py"],
            "description": "since 2026-03-02 the pool keeps stale entries"}

    async def retrieve(app, asked):
        queue = recall.TelemetryQueue(app)
        result = await recall.retrieve(app, asked, None, None, queue)
        queue.flush()
        return result

    with app_with_record(short_home, "flush the cache pool after a deploy on 2026-03-02",
                         paths=["src/cache/pool.py"]) as (app, _id):
        first = asyncio.run(retrieve(app, task))
        again = asyncio.run(retrieve(app, dict(task)))
        other = asyncio.run(retrieve(app, task | {"title": "flush the cache pools"}))
    assert read == ["flush the cache pool", "flush the cache pools"]
    assert first["selected"] and "flush the cache pool" in first["text"]
    same = ("terms", "candidates", "selected", "text", "bytes", "fallback_reason")
    assert {k: again[k] for k in same} == {k: first[k] for k in same}
    assert other["terms"] != first["terms"]


_WORDS = st.sampled_from(["fix", "cache", "TokenRefresher", "ERR_CONN_RESET", "429", "pool",
                          "yesterday", "2026-03-02", "March", "src/a_b.py", "retry", "é", ""])
_TEXT = st.lists(_WORDS, max_size=8).map(" ".join) | st.text(max_size=30)
_TASKS = st.fixed_dictionaries(
    {"id": st.just("T-1"), "title": _TEXT},
    optional={"description": _TEXT, "files": st.lists(_TEXT, max_size=3),
              "labels": st.lists(_TEXT, max_size=3), "pr": st.fixed_dictionaries(
                  {"title": _TEXT}, optional={"files": st.lists(_TEXT, max_size=2)})})


@settings(max_examples=150, deadline=None)
@given(tasks=st.lists(_TASKS, min_size=1, max_size=6), order=st.randoms())
def test_the_remembered_query_is_the_plain_functions_answer(tasks, order):
    memos = TextMemos()
    asked = tasks * 2
    order.shuffle(asked)
    for task in asked:
        got = memos.task_query(task)
        assert got == TaskQuery(tuple(query.task_terms(task)), query.naming_terms(task),
                                tuple(query.task_files(task)), query.cues(task))


def test_the_memo_is_bounded_and_a_huge_task_is_not_kept(monkeypatch):
    monkeypatch.setattr(memos_mod, "TASK_QUERIES", 3)
    memos = TextMemos()
    for n in range(10):
        memos.task_query({"id": f"T-{n}", "title": f"task {n}"})
    memos.task_query({"id": "big", "title": "word " * memos_mod.TASK_KEY_CHARS})
    assert len(memos._queries) == 3
