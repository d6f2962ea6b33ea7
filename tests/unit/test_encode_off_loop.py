"""The big replies (memory.search, memory.get, memory.retrieve) are encoded as JSON on the
reader thread that produced them: the event loop, which serves every client, only splices the
bytes into the reply's envelope, and the reply is the same bytes as before."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest

from tests.harness import recall_dispatcher

MARK = "quokkaflush"  # a word only the stored record holds


@pytest.fixture
def served(short_home):
    body = f"{MARK} the cache pool after a deploy: ünïcödé ✓"
    with recall_dispatcher(short_home, body) as (dispatcher, record_id, _db):
        yield dispatcher, record_id


def _encodings(monkeypatch):
    """(thread id, JSON text) of every JSON encoding made while the test runs."""
    made: list[tuple[int, str]] = []
    plain = json.JSONEncoder.encode

    def encode(self, value):
        text = plain(self, value)
        made.append((threading.get_ident(), text))
        return text

    monkeypatch.setattr(json.JSONEncoder, "encode", encode)
    return made


@pytest.mark.parametrize("method", ["memory.search", "memory.get", "memory.retrieve"])
def test_the_result_is_encoded_on_the_reader_thread_not_the_loop(served, monkeypatch, method):
    dispatcher, record_id = served
    params = {"memory.search": {"query": f"{MARK} cache"}, "memory.get": {"id": record_id},
              "memory.retrieve": {"task": {"id": "t1", "title": f"{MARK} the cache pool"}}}
    line = json.dumps({"jsonrpc": "2.0", "id": "r-1", "method": method,
                       "params": params[method]}).encode() + b"\n"

    async def call():
        reply = await dispatcher.handle_bytes(line)
        await asyncio.sleep(0.1)  # memory.retrieve's telemetry row is flushed meanwhile
        return reply, threading.get_ident()

    made = _encodings(monkeypatch)
    reply, loop_thread = asyncio.run(call())
    made = list(made)  # the encodings made while the request was served
    answer = json.loads(reply)
    assert answer["id"] == "r-1" and MARK in json.dumps(answer["result"], ensure_ascii=False)
    holding = [thread for thread, text in made if MARK in text]
    assert holding, "the result was never encoded"
    assert loop_thread not in holding
    # Byte for byte the compact UTF-8 encoding of the whole reply, as the loop made it before.
    assert reply == json.dumps(answer, ensure_ascii=False,
                               separators=(",", ":")).encode("utf-8") + b"\n"
