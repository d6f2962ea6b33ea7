"""The protocol boundary end to end: awkward text, deep nesting and unserialisable replies get
an answer on a connection that stays usable."""

from __future__ import annotations

import asyncio
import json
import socket
import tempfile
from pathlib import Path

import structlog

from minionsd.client import Client
from minionsd.errors import MinionsError
from minionsd.rpc.protocol import Dispatcher
from minionsd.rpc.server import RpcServer


class LineClient:
    """A raw socket that sends one line and reads one reply line."""

    def __init__(self, path: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(20)
        self.sock.connect(str(path))
        self.buffer = b""

    def exchange(self, line: bytes) -> dict | list:
        self.sock.sendall(line + b"\n")
        while b"\n" not in self.buffer:
            chunk = self.sock.recv(65536)
            assert chunk, "the daemon closed the connection without a reply"
            self.buffer += chunk
        reply, _, self.buffer = self.buffer.partition(b"\n")
        return json.loads(reply)

    def close(self) -> None:
        self.sock.close()


def request(method: str, params: str, request_id: int) -> bytes:
    """A request line whose params are spliced in raw, so escapes reach the daemon as typed."""
    return (f'{{"jsonrpc":"2.0","id":{request_id},"method":"{method}",'
            f'"params":{params}}}').encode()


def test_lone_surrogates_become_replacement_characters(daemon):
    conn = LineClient(daemon.socket)
    try:
        added = conn.exchange(request(
            "memory.add", r'{"body":"broken \ud800 pair \udfff end","type":"semantic",'
                          r'"scope":"global","trust":"human","source":"t\udc80",'
                          r'"meta":{"k\ud801":["x\ud802"]}}', 1))
        assert "result" in added, added
        record = conn.exchange(request("memory.get", json.dumps({"id": added["result"]["id"]}), 2))
        assert record["result"]["body"] == "broken \ufffd pair \ufffd end"
        assert record["result"]["source"] == "t\ufffd"
        assert record["result"]["meta"] == {"k\ufffd": ["x\ufffd"]}

        pinned = conn.exchange(request("pinned.set", r'{"text":"Freeze \udbff now"}', 3))
        assert "result" in pinned, pinned
        text = conn.exchange(request("pinned.get", "{}", 4))["result"]["text"]
        assert text == "Freeze \ufffd now"
        assert (daemon.home / "pinned.md").read_text(encoding="utf-8") == text

        note = conn.exchange(request(
            "inbox.submit", r'{"body":"Deploy \ud83d needs VPN","author":"dallas",'
                            r'"title":"VPN \ude00"}', 5))
        assert "result" in note, note
        written = (daemon.home / note["result"]["path"]).read_text(encoding="utf-8")
        assert "Deploy \ufffd needs VPN" in written
        # a proper pair stays the character it encodes
        pair = conn.exchange(request("pinned.set", r'{"text":"ok \ud83d\ude00"}', 6))
        assert "result" in pair
        assert conn.exchange(request("pinned.get", "{}", 7))["result"]["text"] == "ok \U0001f600"
    finally:
        conn.close()


def test_deep_nesting_is_answered_and_the_connection_stays_usable(daemon):
    conn = LineClient(daemon.socket)
    try:
        deep_line = b"[" * 100_000 + b"]" * 100_000
        reply = conn.exchange(deep_line)
        assert reply["error"]["code"] == -32700 and reply["id"] is None
        assert "nested too deeply" in reply["error"]["data"]["detail"]

        nested = "[" * 1_500 + "]" * 1_500
        reply = conn.exchange(request("memory.add", f'{{"body":"x","type":"semantic",'
                                      f'"scope":"global","trust":"human","source":"t",'
                                      f'"meta":{{"deep":{nested}}}}}', 8))
        assert reply["error"]["code"] == -32700

        nested = "[" * 200 + "]" * 200
        reply = conn.exchange(request("memory.add", f'{{"body":"x","type":"semantic",'
                                      f'"scope":"global","trust":"human","source":"t",'
                                      f'"meta":{{"deep":{nested}}}}}', 9))
        assert reply["error"]["code"] == -32600 and reply["id"] == 9
        assert "levels deep" in reply["error"]["data"]["detail"]

        reply = conn.exchange(request("memory.add", '{"body":"fine","type":"semantic",'
                                      '"scope":"global","trust":"human","source":"t",'
                                      '"meta":{"a":[[[{"b":1}]]]}}', 10))
        assert "result" in reply, reply
        assert "result" in conn.exchange(b'{"jsonrpc":"2.0","id":11,"method":"status"}')
    finally:
        conn.close()


def test_unserialisable_results_and_details_are_answered():
    """A real RpcServer on a real socket, with a small method table of misbehaving methods."""
    class Odd(MinionsError):
        code = -32001
        message = "odd"

    async def good() -> dict:
        return {"ok": True}

    async def bad_result() -> dict:
        return {"value": object()}

    async def bad_detail() -> dict:
        raise Odd("a detail with an unserialisable member", culprit={1, 2})

    async def circular() -> list:
        loop: list = []
        loop.append(loop)
        return loop

    dispatcher = Dispatcher({"good": good, "bad_result": bad_result,
                             "bad_detail": bad_detail, "circular": circular})
    path = Path(tempfile.mkdtemp(prefix="rpc-", dir="/tmp")) / "s.sock"

    def talk() -> list:
        outcomes = []
        with Client(path, timeout=10) as client:
            for method in ("bad_result", "good", "bad_detail", "circular", "good"):
                try:
                    outcomes.append(("ok", client.call(method)))
                except Exception as exc:
                    outcomes.append((type(exc).__name__, getattr(exc, "code", None),
                                     getattr(exc, "detail", None)))
            batch = b'[{"jsonrpc":"2.0","id":1,"method":"good"},' \
                    b'{"jsonrpc":"2.0","id":2,"method":"bad_result"}]\n'
            client.send_raw(batch)
            outcomes.append(json.loads(client.read_line()))
        return outcomes

    async def scenario() -> list:
        server = RpcServer(dispatcher, path, 1 << 20)
        await server.start()
        try:
            return await asyncio.get_running_loop().run_in_executor(None, talk)
        finally:
            await server.stop()

    with structlog.testing.capture_logs() as logs:
        outcomes = asyncio.run(scenario())
    path.parent.rmdir()
    assert outcomes[0][:2] == ("RpcError", -32603)
    assert "could not be serialised" in outcomes[0][2]
    assert outcomes[1] == ("ok", {"ok": True})
    assert outcomes[2][:2] == ("RpcError", -32603)
    assert outcomes[3][:2] == ("RpcError", -32603)
    assert outcomes[4] == ("ok", {"ok": True})
    batch = outcomes[5]
    assert batch[0] == {"jsonrpc": "2.0", "id": 1, "result": {"ok": True}}
    assert batch[1]["id"] == 2 and batch[1]["error"]["code"] == -32603
    failures = [e for e in logs if e["event"] == "rpc.reply_unserialisable"]
    assert {e["method"] for e in failures} == {"bad_result", "bad_detail", "circular"}


def _strict(raw: bytes) -> dict | list:
    """Parse as any strict JSON parser would (JavaScript's JSON.parse, Go, serde)."""
    def refuse(token: str) -> None:
        raise AssertionError(f"reply holds {token}, which is not JSON: {raw[:300]!r}")
    return json.loads(raw, parse_constant=refuse)


def test_nan_and_infinity_are_refused_so_no_reply_ever_holds_them(daemon):
    """NaN, Infinity and a number too large for a double are not JSON: such a request is a
    parse error naming the token, nothing is stored, and no later reply can carry them."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(20)
    sock.connect(str(daemon.socket))
    buffer = b""

    def exchange(line: bytes) -> dict | list:
        nonlocal buffer
        sock.sendall(line + b"\n")
        while b"\n" not in buffer:
            chunk = sock.recv(65536)
            assert chunk, "the daemon closed the connection without a reply"
            buffer += chunk
        reply, _, buffer = buffer.partition(b"\n")
        return _strict(reply)

    try:
        base = ('{"body":"odd numbers","type":"semantic","scope":"global","trust":"human",'
                '"source":"t","meta":{"x":%s}}')
        for token in ("NaN", "Infinity", "-Infinity", "1e400", "-1e999"):
            reply = exchange(request("memory.add", base % token, 1))
            assert reply["error"]["code"] == -32700, reply
            assert token.lstrip("-") in reply["error"]["data"]["detail"], reply
        for token in ("NaN", "Infinity", "1e400"):
            reply = exchange(f'{{"jsonrpc":"2.0","id":{token},"method":"pinned.get"}}'.encode())
            assert reply["error"]["code"] == -32700 and reply["id"] is None, reply
        found = exchange(request("memory.search", '{"query":"odd numbers"}', 2))
        assert found["result"]["total"] == 0
        fine = exchange(request("memory.add", base % "1e300", 3))
        assert "result" in fine, fine
    finally:
        sock.close()
