"""POST /mcp (SPEC §5.2): the mcp SDK's own Streamable HTTP client against a real gateway and
daemon, in every protocol era the SDK speaks, plus a 2025-06-18 handshake written by hand;
tools filtered by scope, the same definitions and fencing as over stdio, identity and
project from the token."""

from __future__ import annotations

import json
import os
import subprocess
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from minionsd.agents import structured, tools
from minionsd.text.fence import FENCE_NAME
from tests.conftest import DaemonProcess
from tests.gateway_harness import GatewayProcess, daemon_and_gateway, make_token

READ_TOOLS = ["memory_context", "memory_search", "memory_get", "knowledge_list",
              "knowledge_get"]


class Env:
    def __init__(self, daemon: DaemonProcess, gateway: GatewayProcess) -> None:
        self.daemon = daemon
        self.gateway = gateway
        self.read = make_token(daemon, "mcp-reader", "reader-bot", "read")
        self.write = make_token(daemon, "mcp-writer", "dallas", "write")
        self.bound = make_token(daemon, "mcp-bound", "pay-bot", "write", project="payments")


@pytest.fixture(scope="module")
def env() -> Iterator[Env]:
    with daemon_and_gateway("mq-") as (daemon, gateway):
        yield Env(daemon, gateway)


@asynccontextmanager
async def session(url: str, token: str, mode: str) -> AsyncIterator[Client]:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                                  timeout=60) as http, Client(
            streamable_http_client(url, http_client=http), mode=mode,
            read_timeout_seconds=60) as client:
        yield client


def test_tools_listed_follow_the_scopes_with_the_stdio_definitions(env):
    by_name = {spec.name: spec for spec in tools.TOOLS}

    async def main() -> None:
        for mode, expected in (("legacy", "2025-11-25"), ("auto", "2026-07-28"),
                               ("2026-07-28", "2026-07-28")):
            async with session(env.gateway.url + "/mcp", env.read, mode) as client:
                assert client.protocol_version == expected
                listed = (await client.list_tools()).tools
                assert [t.name for t in listed] == READ_TOOLS, mode
                for tool in listed:
                    spec = by_name[tool.name]
                    assert tool.description == spec.description
                    assert tool.input_schema == spec.input_schema
                    assert tool.annotations.read_only_hint == spec.annotations["readOnlyHint"]
                uris = [r.uri for r in (await client.list_resources()).resources]
                assert uris == ["minions://pinned", "minions://team-notes"]
            async with session(env.gateway.url + "/mcp", env.write, mode) as client:
                names = [t.name for t in (await client.list_tools()).tools]
                assert names == [spec.name for spec in tools.TOOLS], mode

    anyio.run(main)


def test_tools_and_resources_work_fenced_with_the_tokens_identity(env):
    env.daemon.call("pinned.set", text="Run `make check` before every push.")
    env.daemon.call("memory.add", body="Ledger exports run hourly since the rework.",
                    type="semantic", scope="project:payments", trust="agent", source="test",
                    title="Ledger export schedule")

    async def main() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        async with session(env.gateway.url + "/mcp?project=payments", env.write,
                           "legacy") as client:
            context = await client.call_tool("memory_context",
                                             {"text": "change the ledger export schedule"})
            assert not context.is_error
            seen["context"] = context.content[0].text
            # structured content carries no raw recalled text, as over stdio
            assert structured.unsafe_strings(context.structured_content) == []
            found = await client.call_tool("memory_search", {"query": "ledger export"})
            assert structured.unsafe_strings(found.structured_content) == []
            note = await client.call_tool("memory_note", {"body": "Hourly exports confirmed.",
                                                          "title": "Exports"})
            assert not note.is_error, note.content[0].text
            seen["note"] = note.structured_content
            pinned = await client.read_resource("minions://pinned")
            seen["pinned"] = pinned.contents[0].text
            seen["refused"] = await client.call_tool("memory_retract",
                                                     {"id": "M-nope", "reason": "x"})
        async with session(env.gateway.url + "/mcp", env.read, "2026-07-28") as client:
            denied = await client.call_tool("memory_note", {"body": "not allowed"})
            seen["denied"] = denied
        return seen

    seen = anyio.run(main)
    assert "Ledger exports run hourly" in seen["context"]
    assert f'<{FENCE_NAME} source="memory-retrieval:' in seen["context"]
    assert f"<{FENCE_NAME} " in seen["pinned"] and "make check" in seen["pinned"]
    note = (env.daemon.home / seen["note"]["path"]).read_text()
    assert "author: dallas" in note and "project: payments" in note
    assert seen["refused"].is_error  # the daemon's not_found, as a tool error
    assert seen["denied"].is_error
    assert "'write' scope" in seen["denied"].content[0].text


def test_the_tokens_project_wins_over_the_url(env):
    async def main() -> str:
        async with session(env.gateway.url + "/mcp?project=billing", env.bound,
                           "legacy") as client:
            result = await client.call_tool("memory_note", {"body": "Bound note."})
            assert not result.is_error
            return result.structured_content["path"]

    path = anyio.run(main)
    assert "project: payments" in (env.daemon.home / path).read_text()


def _post(env: Env, token: str | None, message: dict[str, Any],
          headers: dict[str, str] | None = None) -> tuple[int, Any]:
    request = urllib.request.Request(
        env.gateway.url + "/mcp", data=json.dumps(message).encode(), method="POST",
        headers={"Content-Type": "application/json",
                 "Accept": "application/json, text/event-stream", **(headers or {})})
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            body = response.read()
            return response.status, json.loads(body) if body else None
    except urllib.error.HTTPError as exc:
        body = exc.read()
        exc.close()
        return exc.code, json.loads(body) if body else None


def test_a_2025_06_18_client_handshake_by_hand(env):
    status, reply = _post(env, env.read, {
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "hand-written", "version": "1"}}})
    assert status == 200
    assert reply["result"]["protocolVersion"] == "2025-06-18"
    assert reply["result"]["serverInfo"]["name"] == "minions"
    version = {"MCP-Protocol-Version": "2025-06-18"}
    assert _post(env, env.read, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                 version)[0] == 202
    status, reply = _post(env, env.read, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                          version)
    assert status == 200
    assert [t["name"] for t in reply["result"]["tools"]] == READ_TOOLS
    status, reply = _post(env, env.read, {
        "jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "knowledge_list", "arguments": {}}}, version)
    assert status == 200 and reply["result"]["isError"] is False


def test_mcp_without_a_token_is_401_and_oauth_is_not_offered(env):
    status, body = _post(env, None, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert status == 401 and body["error"]["reason"] == "missing"
    status, _ = _post(env, "mnt_" + "C" * 43, {"jsonrpc": "2.0", "id": 1,
                                               "method": "tools/list"})
    assert status == 401


MCP1_CLIENT = '''
import json, sys, anyio
from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client

async def main(url, token):
    headers = {"Authorization": f"Bearer {token}"}
    async with streamablehttp_client(url, headers=headers) as (read, write, _):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            tools = [t.name for t in (await session.list_tools()).tools]
            result = await session.call_tool("knowledge_list", {})
            print(json.dumps({"protocol": init.protocolVersion, "tools": tools,
                              "isError": result.isError}))

anyio.run(main, sys.argv[1], sys.argv[2])
'''


@pytest.mark.skipif(not os.environ.get("MINIONS_TEST_MCP1_PYTHON"),
                    reason="set MINIONS_TEST_MCP1_PYTHON to a Python with mcp 1.x installed")
def test_an_mcp_1x_client(env, tmp_path):
    """The handshake-era SDK (mcp 1.x, e.g. `python -m venv v && v/bin/pip install
    'mcp<2'`) against the gateway; its own environment, so it is opt-in."""
    script = tmp_path / "client.py"
    script.write_text(MCP1_CLIENT)
    done = subprocess.run([os.environ["MINIONS_TEST_MCP1_PYTHON"], str(script),
                           env.gateway.url + "/mcp", env.read], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["protocol"] in ("2025-06-18", "2025-11-25")
    assert answer["tools"] == READ_TOOLS and answer["isError"] is False
