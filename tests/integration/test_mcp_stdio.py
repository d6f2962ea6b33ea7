"""`minionsctl mcp` as a process, spoken to line by line: protocol revisions and their
negotiation, the errors each era gives, what `initialize` says about a dead daemon, a hung
daemon, signals, and what the server imports (nothing heavy: it must answer `initialize`
before a headless agent's first turn)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import tempfile
from typing import Any

import pytest

from tests.conftest import REPO
from tests.integration.test_hooks import hung_socket  # noqa: F401 - fixture
from tests.integration.test_mcp import server_env

ENVELOPE = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "line-client", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}}


class Lines:
    """A raw JSON-RPC-lines client of `python -m minionsd.cli ... mcp`."""

    def __init__(self, *where: str, extra: tuple[str, ...] = ()) -> None:
        self.errors = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()
        self.proc = subprocess.Popen(
            [sys.executable, *extra, "-m", "minionsd.cli", *where, "mcp", "--project", "p"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.errors,
            env=server_env(), cwd=REPO)
        self.next_id = 0

    def stderr(self) -> str:
        self.errors.seek(0)
        return self.errors.read().decode("utf-8", "replace")

    def send(self, message: dict[str, Any] | bytes) -> None:
        assert self.proc.stdin is not None
        raw = message if isinstance(message, bytes) else json.dumps(message).encode()
        self.proc.stdin.write(raw + b"\n")
        self.proc.stdin.flush()

    def read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, self.stderr() or "stdout closed"
        return json.loads(line)

    def ask(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        reply = self.read()
        assert reply["id"] == self.next_id, reply
        return reply

    def initialize(self, version: str = "2025-06-18") -> dict[str, Any]:
        reply = self.ask("initialize", {"protocolVersion": version, "capabilities": {},
                                        "clientInfo": {"name": "line-client", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return reply

    def close(self) -> int:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=30)
        finally:
            if self.proc.stdout is not None:
                self.proc.stdout.close()
            self.errors.close()

    def kill(self) -> None:
        self.proc.kill()
        self.close()


@pytest.fixture
def lines(tmp_path):
    opened: list[Lines] = []

    def start(*where: str, extra: tuple[str, ...] = ()) -> Lines:
        client = Lines(*(where or ("--home", str(tmp_path / "h"))), extra=extra)
        opened.append(client)
        return client

    yield start
    for client in opened:
        if client.proc.poll() is None:
            client.kill()


@pytest.mark.parametrize(("offered", "agreed"), [
    ("2024-11-05", "2024-11-05"), ("2025-03-26", "2025-03-26"), ("2025-06-18", "2025-06-18"),
    ("2025-11-25", "2025-11-25"), ("2031-01-01", "2025-11-25"), ("2026-07-28", "2025-11-25")])
def test_initialize_agrees_on_a_handshake_revision(lines, offered, agreed):
    client = lines()
    result = client.initialize(offered)["result"]
    assert result["protocolVersion"] == agreed
    assert result["serverInfo"]["name"] == "minions"
    assert set(result["capabilities"]) == {"tools", "resources"}
    assert client.ask("ping") == {"jsonrpc": "2.0", "id": 2, "result": {}}
    assert len(client.ask("tools/list")["result"]["tools"]) == 9
    assert client.close() == 0


def test_handshake_era_errors(lines):
    client = lines()
    early = client.ask("tools/list")
    assert early["error"]["code"] == -32602 and "initialize" in early["error"]["message"]
    client.initialize()
    assert client.ask("prompts/list")["error"]["code"] == -32601
    assert client.ask("tools/call", {"name": 7})["error"]["code"] == -32602
    enveloped = client.ask("tools/list", {"_meta": ENVELOPE})
    assert enveloped["error"]["code"] == -32600
    client.send(b"{not json")
    assert client.read()["error"]["code"] == -32700
    client.send(b'"a string"')
    assert client.read()["error"]["code"] == -32600
    assert "result" in client.ask("resources/list")  # still serving after all of it
    assert client.close() == 0


def test_the_2026_07_28_era(lines):
    client = lines()
    found = client.ask("server/discover", {"_meta": ENVELOPE})["result"]
    assert found["supportedVersions"] == ["2026-07-28"] and found["resultType"] == "complete"
    assert found["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "minions"
    listed = client.ask("tools/list", {"_meta": ENVELOPE})["result"]
    assert len(listed["tools"]) == 9 and listed["resultType"] == "complete"
    old = dict(ENVELOPE, **{"io.modelcontextprotocol/protocolVersion": "2025-11-25"})
    refused = client.ask("tools/list", {"_meta": old})["error"]
    assert refused["code"] == -32022 and refused["data"] == {"supported": ["2026-07-28"],
                                                             "requested": "2025-11-25"}
    assert client.ask("tools/list")["error"]["code"] == -32602  # no envelope
    handshake = client.ask("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}})
    assert handshake["error"]["code"] == -32022
    assert client.ask("ping", {"_meta": ENVELOPE})["error"]["code"] == -32601
    assert client.close() == 0


def test_initialize_says_when_the_daemon_is_not_running(lines, tmp_path):
    client = lines("--home", str(tmp_path / "nothing-here"))
    result = client.initialize()["result"]
    assert "not reachable" in result["serverInfo"]["title"]
    socket_path = tmp_path / "nothing-here" / "engine" / "minionsd.sock"
    assert f"minionsd is not running: there is no socket at {socket_path}" \
        in result["instructions"]
    discovered = lines("--home", str(tmp_path / "nothing-here")).ask(
        "server/discover", {"_meta": ENVELOPE})["result"]
    assert "minionsd is not running" in discovered["instructions"]


def test_initialize_says_nothing_of_a_running_daemon(lines, daemon):
    result = lines("--home", str(daemon.home)).initialize()["result"]
    assert result["serverInfo"]["title"] == "minionsd memory"
    assert "not running" not in result["instructions"]


def test_a_hung_daemon_holds_up_neither_ping_nor_the_session(lines, request):
    client = lines("--socket", str(request.getfixturevalue("hung_socket")))
    client.initialize()
    client.send({"jsonrpc": "2.0", "id": 50, "method": "tools/call",
                 "params": {"name": "memory_search", "arguments": {"query": "x"}}})
    assert client.ask("ping")["result"] == {}  # answered while the call waits on the daemon
    assert len(client.ask("tools/list")["result"]["tools"]) == 9
    client.kill()


def test_sigint_stops_the_server(lines):
    client = lines()
    client.initialize()
    client.proc.send_signal(signal.SIGINT)  # Ctrl-C where someone runs it by hand
    assert client.proc.wait(timeout=20) == 130
    client.close()


def test_sigterm_stops_the_server(lines):
    client = lines()
    client.initialize()
    client.proc.send_signal(signal.SIGTERM)
    assert client.proc.wait(timeout=20) in (143, -signal.SIGTERM)
    client.close()


def test_the_server_imports_nothing_heavy(lines, daemon):
    client = lines("--home", str(daemon.home), extra=("-X", "importtime"))
    client.initialize()
    called = client.ask("tools/call", {"name": "memory_search", "arguments": {"query": "x"}})
    assert called["result"]["isError"] is False
    client.proc.stdin.close()
    assert client.proc.wait(timeout=30) == 0
    imported = {line.rsplit("|", 1)[1].strip() for line in client.stderr().splitlines()
                if line.startswith("import time:") and "|" in line}
    client.close()
    assert "minionsd.agents.mcp_server" in imported
    heavy = [m for m in imported if m.split(".")[0] in (
        "mcp", "mcp_types", "pydantic", "anyio", "starlette", "uvicorn", "jinja2", "structlog",
        "sqlite3", "asyncio", "yaml", "anthropic", "httpx", "concurrent")]
    assert not heavy, heavy
