"""`minionsctl mcp` fed malformed lines as a real process: every one is answered (JSON-RPC 2.0's
-32600 with id null for an id, method or requestId of the wrong type, -32700 for a line it
cannot parse, -32600 for an empty batch) or ignored, and the server keeps serving: a ping
after each is answered and the process ends with exit 0 when stdin closes."""

from __future__ import annotations

import json
import os
import select
import time
from typing import Any

import pytest

from tests.integration.test_mcp_stdio import Lines

REPLY_WAIT_S = 30.0  # a line the server never answers fails the test instead of hanging it


class Bounded(Lines):
    """Lines whose reads give up: a reply that never comes is an assertion, not a hang."""

    def __init__(self, *where: str) -> None:
        super().__init__(*where)
        self._pending = b""

    def read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + REPLY_WAIT_S
        while b"\n" not in self._pending:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([fd], [], [], max(left, 0))
            assert ready, f"no reply within {REPLY_WAIT_S:g} s; stderr: {self.stderr()[-2000:]}"
            chunk = os.read(fd, 1 << 16)
            assert chunk, f"stdout closed (exit {self.proc.poll()}): {self.stderr()[-2000:]}"
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return json.loads(line)


@pytest.fixture
def lines(tmp_path):
    opened: list[Bounded] = []

    def start(*where: str) -> Bounded:
        client = Bounded(*(where or ("--home", str(tmp_path / "h"))))
        opened.append(client)
        return client

    yield start
    for client in opened:
        if client.proc.poll() is None:
            client.kill()

# (label, the raw line, the reply expected: (code, id) or None for no reply)
MALFORMED = [
    ("id is an object", {"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}, (-32600, None)),
    ("id is an array", {"jsonrpc": "2.0", "id": [1], "method": "ping"}, (-32600, None)),
    ("id is true", {"jsonrpc": "2.0", "id": True, "method": "ping"}, (-32600, None)),
    ("id is false", {"jsonrpc": "2.0", "id": False, "method": "tools/list"}, (-32600, None)),
    ("method is an array", {"jsonrpc": "2.0", "id": 5, "method": ["tools/call"]},
     (-32600, 5)),
    ("method is an object", {"jsonrpc": "2.0", "id": 6, "method": {"m": 1}}, (-32600, 6)),
    ("method is a number, no id", {"jsonrpc": "2.0", "method": 1}, (-32600, None)),
    ("tools/call with an array id",
     {"jsonrpc": "2.0", "id": [1], "method": "tools/call",
      "params": {"name": "memory_get", "arguments": {"id": "M-x"}}}, (-32600, None)),
    ("resources/read with an object id",
     {"jsonrpc": "2.0", "id": {"x": 1}, "method": "resources/read",
      "params": {"uri": "minions://pinned"}}, (-32600, None)),
    ("wrong jsonrpc and an object id", {"jsonrpc": "1.0", "id": {"a": 1}, "method": "ping"},
     (-32600, None)),
    ("cancel with an array requestId",
     {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": [1]}},
     None),
    ("cancel with an object requestId",
     {"jsonrpc": "2.0", "method": "notifications/cancelled",
      "params": {"requestId": {"a": 1}}}, None),
    ("a reply with an object id", {"jsonrpc": "2.0", "id": {"a": 1}, "result": {}}, None),
    ("nested 100000 deep", b"[" * 100_000 + b"]" * 100_000, (-32700, None)),
    ("an object nested 100000 deep", b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
     (-32700, None)),
    ("NaN id", b'{"jsonrpc":"2.0","id":NaN,"method":"ping"}', (-32700, None)),
    ("an id too big for a float", b'{"jsonrpc":"2.0","id":1e999,"method":"ping"}',
     (-32600, None)),
    ("an empty batch", b"[]", (-32600, None)),
]


@pytest.mark.parametrize(("label", "line", "expected"), MALFORMED,
                         ids=[m[0] for m in MALFORMED])
def test_a_malformed_line_is_answered_and_the_server_keeps_serving(lines, label, line,
                                                                   expected):
    client = lines()
    client.initialize()
    client.send(line if isinstance(line, bytes) else json.dumps(line).encode())
    if expected is not None:
        reply = client.read()
        code, request_id = expected
        assert reply["jsonrpc"] == "2.0" and reply["error"]["code"] == code, (label, reply)
        assert reply["id"] == request_id and "result" not in reply, (label, reply)
        assert reply["id"] is not True
    # The next request is answered, and nothing was answered for a line that needs no reply.
    assert client.ask("ping") == {"jsonrpc": "2.0", "id": 2, "result": {}}, label
    assert len(client.ask("tools/list")["result"]["tools"]) == 9
    assert client.close() == 0, client.stderr()


def test_a_batch_answers_each_malformed_member(lines):
    client = lines()
    client.initialize()
    client.send(json.dumps([
        {"jsonrpc": "2.0", "id": 7, "method": "ping"},
        {"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"},
        {"jsonrpc": "2.0", "id": 8, "method": ["ping"]},
        3,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]).encode())
    replies = client.read()
    assert isinstance(replies, list) and len(replies) == 4, replies
    assert replies[0] == {"jsonrpc": "2.0", "id": 7, "result": {}}
    assert [(r["id"], r["error"]["code"]) for r in replies[1:]] == [
        (None, -32600), (8, -32600), (None, -32600)]
    assert client.ask("ping")["result"] == {}
    assert client.close() == 0, client.stderr()


def test_a_cancel_with_a_boolean_request_id_cancels_nothing(lines, daemon):
    """`true` equals 1 to Python: taken as a request id, it would drop the answer to id 1."""
    client = lines("--home", str(daemon.home))
    client.initialize()
    client.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                 "params": {"requestId": True}})
    client.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                 "params": {"name": "memory_search", "arguments": {"query": "anything"}}})
    reply = client.read()
    assert reply["id"] == 1 and reply["result"]["isError"] is False, reply
    assert client.close() == 0, client.stderr()


def test_resources_read_of_a_path_the_daemon_refuses_is_invalid_params(lines, daemon):
    client = lines("--home", str(daemon.home))
    client.initialize()
    for uri in ("minions://knowledge/../../config.toml",
                "minions://knowledge/%2e%2e/%2e%2e/config.toml",
                "minions://knowledge/conventions/../../engine/state.db"):
        error = client.ask("resources/read", {"uri": uri})["error"]
        assert error["code"] == -32602, (uri, error)
        assert error["data"] == {"uri": uri}
    missing = client.ask("resources/read", {"uri": "minions://knowledge/conventions/none.md"})
    assert missing["error"]["code"] == -32602
    assert client.close() == 0, client.stderr()
