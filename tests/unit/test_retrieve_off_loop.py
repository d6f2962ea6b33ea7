"""memory.retrieve does its Python work off the event loop: the task's terms, the ranking and
the fence all run on a reader thread, so a long task does not hold up the loop that serves
every other client (status, writes, other retrievals)."""

from __future__ import annotations

import asyncio
import threading

from minionsd.memory import recall
from minionsd.memory.retrieval import query
from tests.harness import app_with_record


def test_terms_ranking_and_fence_run_on_a_reader_thread(short_home, monkeypatch):
    where: dict[str, int] = {}
    plain_terms, plain_fence = query.task_terms, recall.fence

    def task_terms(task):
        where["terms"] = threading.get_ident()
        return plain_terms(task)

    def fence(*args):
        where["fence"] = threading.get_ident()
        return plain_fence(*args)

    monkeypatch.setattr(query, "task_terms", task_terms)
    monkeypatch.setattr(recall, "fence", fence)

    async def retrieve(app):
        queue = recall.TelemetryQueue(app)
        result = await recall.retrieve(app, {"id": "t1", "title": "flush the cache pool"},
                                       None, None, queue)
        queue.flush()
        return result, threading.get_ident()

    with app_with_record(short_home, "flush the cache pool after a deploy") as (app, _id):
        result, loop_thread = asyncio.run(retrieve(app))
    assert result["selected"] and "flush the cache pool" in result["text"]
    assert where["terms"] != loop_thread and where["fence"] != loop_thread
