"""Each of the mix's common calls comes back to the event loop from other threads once: a
memory.add is prepared (redaction, tokenising) and queued for the writer by the preparing
thread itself, and the loop hears of it when it is committed; a read hears back when its
answer is made and encoded. Every hand-back is a wake-up of the loop that serves every
client, and each waits for the interpreter lock."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime

import pytest

from minionsd.rpc.protocol import Dispatcher
from minionsd.storage import records
from tests.harness import recall_dispatcher


@pytest.fixture
def served(short_home):
    with recall_dispatcher(short_home, "flush the cache pool after a deploy") as made:
        yield made


def _handoffs(dispatcher: Dispatcher, method: str, params: dict) -> tuple[dict, int]:
    """The reply to one request, and how many times other threads handed work back to the
    loop while it was served."""
    line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method,
                       "params": params}).encode() + b"\n"

    async def call():
        loop = asyncio.get_running_loop()
        plain = loop.call_soon_threadsafe
        count = 0

        def counted(*args, **kwargs):
            nonlocal count
            count += 1
            return plain(*args, **kwargs)

        loop.call_soon_threadsafe = counted
        try:
            reply = await dispatcher.handle_bytes(line)
        finally:
            del loop.call_soon_threadsafe
        return json.loads(reply), count

    return asyncio.run(call())


def test_memory_add_comes_back_to_the_loop_once_when_committed(served):
    dispatcher, _record_id, db = served
    reply, handoffs = _handoffs(dispatcher, "memory.add", {
        "body": "rotate the deploy key token=abcdef0123456789abcdef0123456789",
        "type": "semantic", "scope": "global", "trust": "human", "source": "test"})
    assert handoffs == 1
    stored = db.read_blocking(records.fetch, reply["result"]["id"], datetime.now(UTC))
    assert "abcdef0123456789abcdef0123456789" not in stored["body"]  # redacted on the way in


def test_a_memory_add_that_fails_to_prepare_fails_alone(served, monkeypatch):
    dispatcher, _record_id, _db = served
    from minionsd.rpc import methods

    def broken(_scratch, _fields):
        raise RuntimeError("no tokeniser")

    monkeypatch.setattr(methods, "_prepare_new", broken)
    reply, handoffs = _handoffs(dispatcher, "memory.add", {
        "body": "x", "type": "semantic", "scope": "global", "trust": "human", "source": "t"})
    assert reply["error"]["code"] == -32603 and handoffs == 1
    monkeypatch.undo()
    again, _ = _handoffs(dispatcher, "memory.add", {
        "body": "y", "type": "semantic", "scope": "global", "trust": "human", "source": "t"})
    assert again["result"]["id"]


@pytest.mark.parametrize("method", ["memory.search", "memory.get", "memory.retrieve"])
def test_a_read_comes_back_to_the_loop_once(served, method):
    dispatcher, record_id, _db = served
    params = {"memory.search": {"query": "cache pool"}, "memory.get": {"id": record_id},
              "memory.retrieve": {"task": {"id": "t1", "title": "flush the cache pool"}}}
    reply, handoffs = _handoffs(dispatcher, method, params[method])
    assert "result" in reply and handoffs == 1
