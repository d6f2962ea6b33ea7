"""`minionsctl mcp` end to end: the mcp SDK's own client starts `python -m minionsd.cli mcp`
over stdio against a real daemon, in both protocol eras (the handshake and 2026-07-28, direct
and negotiated), and a hand-written client speaks the 2025-06-18 initialize handshake as
JSON-RPC lines."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from minionsd.text.fence import FENCE_NAME
from tests.conftest import REPO, DaemonProcess, wait_for

TOOL_NAMES = ["memory_context", "memory_search", "memory_get", "memory_note", "memory_outcome",
              "memory_retract", "memory_supersede", "knowledge_list", "knowledge_get"]
# name: (readOnlyHint, destructiveHint, idempotentHint)
ANNOTATIONS = {"memory_context": (True, False, True), "memory_search": (True, False, True),
               "memory_get": (True, False, True), "memory_note": (False, False, False),
               "memory_outcome": (False, False, False), "memory_retract": (False, True, True),
               "memory_supersede": (False, True, True), "knowledge_list": (True, False, True),
               "knowledge_get": (True, False, True)}
REQUIRED = {"memory_context": [], "memory_search": ["query"], "memory_get": ["id"],
            "memory_note": ["body"], "memory_outcome": ["outcome", "task_id"],
            "memory_retract": ["id", "reason"], "memory_supersede": ["id", "by"],
            "knowledge_list": [], "knowledge_get": ["path"]}


def server_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MINIONS_", "ANTHROPIC_"))}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def server_params(home: Path, *extra: str, cwd: Path = REPO) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable,
                                 args=["-m", "minionsd.cli", "--home", str(home), "mcp", *extra],
                                 env=server_env(), cwd=str(cwd))


@asynccontextmanager
async def session(home: Path, *extra: str, mode: str = "legacy",
                  cwd: Path = REPO) -> AsyncIterator[Client]:
    async with Client(server_params(home, *extra, cwd=cwd), mode=mode,
                      read_timeout_seconds=60) as client:
        yield client


def fenced_once(text: str) -> bool:
    return text.count(f"<{FENCE_NAME} ") >= 1 and text.count(f"<{FENCE_NAME} ") == text.count(
        f"</{FENCE_NAME}>")


@pytest.fixture(scope="module")
def shared() -> Iterator[DaemonProcess]:
    """One daemon for the module's read-mostly tests (a home of its own)."""
    root = Path(tempfile.mkdtemp(prefix="mm-", dir="/tmp"))
    daemon = DaemonProcess(root / "home")
    try:
        daemon.start()
        yield daemon
    finally:
        daemon.kill()
        shutil.rmtree(root, ignore_errors=True)


def test_tools_and_resources_are_listed_with_schemas_and_annotations(shared):
    async def main() -> None:
        for mode in ("legacy", "auto", "2026-07-28"):
            async with session(shared.home, mode=mode) as client:
                listed = (await client.list_tools()).tools
                assert [t.name for t in listed] == TOOL_NAMES, mode
                for tool in listed:
                    hints = tool.annotations
                    assert (hints.read_only_hint, hints.destructive_hint,
                            hints.idempotent_hint) == ANNOTATIONS[tool.name], tool.name
                    assert hints.open_world_hint is False
                    assert tool.input_schema["type"] == "object"
                    assert tool.input_schema.get("required", []) == REQUIRED[tool.name]
                    assert len(tool.description) > 120, tool.name
                context = next(t for t in listed if t.name == "memory_context")
                assert set(context.input_schema["properties"]) == {"text", "task"}
                task = context.input_schema["properties"]["task"]["properties"]
                assert {"id", "title", "description", "files", "pr"} <= set(task)
                uris = [r.uri for r in (await client.list_resources()).resources]
                assert uris == ["minions://pinned", "minions://team-notes"]
                templates = (await client.list_resource_templates()).resource_templates
                assert [t.uri_template for t in templates] == ["minions://knowledge/{path}"]
                # auto probes server/discover and takes the newest revision the server has.
                assert client.protocol_version == (
                    "2025-11-25" if mode == "legacy" else "2026-07-28")

    anyio.run(main)


def test_every_tool_and_resource_through_the_sdk_client(shared):
    shared.call("pinned.set", text="Run `make check` before every push.")
    shared.call("config.set", key="engine.memory_episodic_capture", value=True)
    older = shared.call("memory.add", body="Ledger exports run nightly at 02:00 UTC.",
                        type="semantic", scope="project:payments", trust="agent",
                        source="test", title="Ledger export schedule")["id"]
    newer = shared.call("memory.add", body="Ledger exports run hourly since the 2026 rework.",
                        type="semantic", scope="project:payments", trust="agent",
                        source="test", title="Ledger export schedule (hourly)")["id"]
    wrong = shared.call("memory.add", body="The quokka service owns invoices.",
                        type="semantic", scope="global", trust="agent", source="test")["id"]

    async def main() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        async with session(shared.home, "--agent", "dallas", "--project", "payments") as c:
            note = await c.call_tool("memory_note", {
                "title": "Refund webhook signature",
                "body": "Refund webhooks are signed with HMAC-SHA256 over the raw body; verify "
                        "before parsing JSON (see webhooks/refunds.py)."})
            assert not note.is_error, note.content[0].text
            assert note.structured_content["duplicate"] is False
            seen["note"] = note.structured_content
            assert "author dallas" in note.content[0].text
            run = await anyio.to_thread.run_sync(
                lambda: shared.call("consolidation.run", force=True))
            assert run["notes"] == 1 and run["records_upserted"] == 1

            context = await c.call_tool("memory_context", {
                "text": "The refund webhook rejects valid signatures; fix the HMAC check"})
            text = context.content[0].text
            assert not context.is_error and context.structured_content["memory_mode"] == "relevant"
            assert "## Relevant Memory" in text and "HMAC-SHA256" in text and fenced_once(text)
            assert "Run `make check`" in text  # pinned context comes first
            selected = context.structured_content["retrieval"]["selected"]
            record_id = selected[0]["id"]
            assert record_id in text

            found = await c.call_tool("memory_search", {"query": "refund webhook", "limit": 5})
            assert not found.is_error and fenced_once(found.content[0].text)
            assert record_id in found.content[0].text
            assert all("body" not in r and "snippet" not in r
                       for r in found.structured_content["records"])
            assert found.structured_content["text"] == found.content[0].text

            got = await c.call_tool("memory_get", {"id": record_id})
            assert not got.is_error and got.structured_content["id"] == record_id
            assert f'<{FENCE_NAME} source="memory-record:{record_id}">' in got.content[0].text
            # names someone wrote are shown inside the fence, not in structured content
            assert "author: dallas" in got.content[0].text.split(f"<{FENCE_NAME} ", 1)[1]
            assert "author" not in got.structured_content
            assert "body" not in got.structured_content
            assert got.structured_content["text"] == got.content[0].text

            listed = await c.call_tool("knowledge_list", {})
            assert fenced_once(listed.content[0].text)
            # a path holds an author and a title: listed inside the fence only
            listed_path = re.search(r"knowledge/\S+-refund-webhook-signature\S*\.md",
                                    listed.content[0].text)
            assert listed_path, listed.content[0].text
            path = listed_path.group(0)
            read = await c.call_tool("knowledge_get", {"path": path})
            assert "HMAC-SHA256" in read.content[0].text and fenced_once(read.content[0].text)

            outcome = await c.call_tool("memory_outcome", {
                "outcome": "success", "task_id": "PAY-12", "summary": "Fixed the HMAC check",
                "files": ["webhooks/refunds.py"], "tests": ["tests/test_refunds.py"]})
            assert not outcome.is_error and outcome.structured_content["captured"] is True

            superseded = await c.call_tool("memory_supersede", {"id": older, "by": newer})
            assert superseded.structured_content["status"] == "superseded"
            assert superseded.structured_content["superseded_by"] == newer
            retracted = await c.call_tool("memory_retract", {"id": wrong,
                                                             "reason": "invoices moved"})
            assert retracted.structured_content["status"] == "retracted"

            pinned = (await c.read_resource("minions://pinned")).contents[0].text
            assert pinned.startswith("## Pinned Context")
            assert f'<{FENCE_NAME} source="pinned:pinned.md">' in pinned and "make check" in pinned
            team = (await c.read_resource("minions://team-notes")).contents[0].text
            assert team.startswith("## Team Notes") and "team-notes:notes.md" in team
            assert fenced_once(team)
            kb = (await c.read_resource("minions://" + path)).contents[0].text
            assert "HMAC-SHA256" in kb and fenced_once(kb)
            seen["outcome_id"] = outcome.structured_content["id"]
        return seen

    seen = anyio.run(main)
    archive = shared.home / "notes" / "archive"
    # the note memory_note wrote was consolidated: its archived copy holds the body as written
    assert any("HMAC-SHA256" in p.read_text() and "author: dallas" in p.read_text()
               for p in archive.glob("*.md"))
    episode = shared.call("memory.get", id=seen["outcome_id"])
    assert episode["type"] == "episodic" and episode["agent"] == "dallas"


def test_bad_arguments_and_daemon_errors_are_tool_errors(shared):
    async def main() -> None:
        async with session(shared.home) as c:
            cases = [("memory_search", {}, "'query' is required"),
                     ("memory_search", {"query": "x", "limit": "ten"}, "'limit' must be an int"),
                     ("memory_search", {"query": "x", "color": 1}, "'color' is not a known"),
                     ("memory_note", {"body": "x", "kind": "rumour"}, "'kind' must be one of"),
                     ("memory_context", {}, "'text' or 'task' is required"),
                     ("memory_context", {"task": {"files": "a.py"}}, "'task.files' must be"),
                     ("memory_get", {"id": "M-doesnotexist"}, "no record with id"),
                     ("memory_note", {"body": "done", "kind": "finding"}, "task"),
                     ("no_such_tool", {}, "unknown tool")]
            for name, args, expected in cases:
                result = await c.call_tool(name, args)
                assert result.is_error, (name, args)
                assert expected in result.content[0].text, result.content[0].text
            detail = (await c.call_tool("memory_get", {"id": "M-doesnotexist"}))
            assert detail.structured_content["error"]["code"] == -32001
            bad_kb = await c.call_tool("knowledge_get", {"path": "../../etc/passwd"})
            assert bad_kb.is_error
            miss = await c.call_tool("memory_context", {"text": "zebra narwhal okapi"})
            assert not miss.is_error and miss.structured_content["memory_mode"] == "legacy"
            assert "no records matched" in miss.content[0].text
            # The session survives all of it.
            assert not (await c.call_tool("knowledge_list", {})).is_error

    anyio.run(main)


def test_a_daemon_restart_during_a_session(make_daemon):
    daemon = make_daemon()

    async def main() -> None:
        async with session(daemon.home) as c:
            assert not (await c.call_tool("memory_search", {"query": "anything"})).is_error
            await anyio.to_thread.run_sync(daemon.stop)
            down = await c.call_tool("memory_search", {"query": "anything"})
            assert down.is_error
            text = down.content[0].text
            assert str(daemon.socket) in text and f"minionsd --home {daemon.home}" in text
            assert "scripts/run" in text
            assert down.structured_content["error"]["kind"] == "daemon_unreachable"
            with pytest.raises(Exception, match="not reachable"):
                await c.read_resource("minions://pinned")
            await anyio.to_thread.run_sync(daemon.start)
            back = await c.call_tool("memory_search", {"query": "anything"})
            assert not back.is_error, back.content[0].text

    anyio.run(main)


def _lines_client(home: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "minionsd.cli", "--home", str(home), "mcp"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=server_env(), cwd=REPO)


def _ask(proc: subprocess.Popen[str], message: dict[str, Any]) -> dict[str, Any] | None:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(message) + "\n")
    proc.stdin.flush()
    if "id" not in message:
        return None
    while True:
        line = proc.stdout.readline()
        assert line, proc.stderr.read() if proc.stderr else "server closed stdout"
        reply = json.loads(line)
        if reply.get("id") == message["id"]:
            return reply


def test_a_2025_06_18_client_speaking_json_rpc_lines(shared):
    proc = _lines_client(shared.home)
    try:
        init = _ask(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "handshake-era-client", "version": "1.0"}}})
        assert init["result"]["protocolVersion"] == "2025-06-18"
        assert init["result"]["serverInfo"]["name"] == "minions"
        assert "tools" in init["result"]["capabilities"]
        assert "resources" in init["result"]["capabilities"]
        _ask(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        listed = _ask(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        tools = {t["name"]: t for t in listed["result"]["tools"]}
        assert list(tools) == TOOL_NAMES
        assert tools["memory_retract"]["annotations"]["destructiveHint"] is True
        assert tools["memory_search"]["inputSchema"]["required"] == ["query"]
        called = _ask(proc, {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "memory_search", "arguments": {"query": "ledger"}}})
        assert called["result"]["isError"] is False
        assert isinstance(called["result"]["structuredContent"]["records"], list)
        assert called["result"]["content"][0]["type"] == "text"
        failed = _ask(proc, {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
            "name": "memory_get", "arguments": {}}})
        assert failed["result"]["isError"] is True
        assert "'id' is required" in failed["result"]["content"][0]["text"]
        read = _ask(proc, {"jsonrpc": "2.0", "id": 5, "method": "resources/read",
                           "params": {"uri": "minions://team-notes"}})
        assert read["result"]["contents"][0]["uri"] == "minions://team-notes"
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0


def test_project_auto_comes_from_the_git_remote(make_daemon, tmp_path):
    daemon = make_daemon()
    repo = tmp_path / "checkout-dir"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "remote", "add", "origin",
                    "git@git.example.com:team/payments.git"], check=True)
    plain = tmp_path / "scratch-project"
    plain.mkdir()

    async def note_from(cwd: Path, body: str) -> str:
        async with session(daemon.home, cwd=cwd) as c:
            result = await c.call_tool("memory_note", {"body": body})
            assert not result.is_error, result.content[0].text
            return result.structured_content["path"]

    for cwd, project in ((repo, "payments"), (plain, "scratch-project")):
        path = anyio.run(note_from, cwd, f"note from {cwd.name}")
        text = wait_for(lambda p=path: (daemon.home / p).read_text(), what="the note")
        assert f"project: {project}\n" in text and "author: agent\n" in text


def test_a_bad_agent_name_is_a_usage_error(tmp_path):
    done = subprocess.run([sys.executable, "-m", "minionsd.cli", "--home", str(tmp_path), "mcp",
                           "--agent", "not a name"], capture_output=True, text=True,
                          timeout=60, env=server_env(), cwd=REPO, stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and done.stdout == ""
    assert "agent 'not a name' must be 1-64 characters" in done.stderr
