"""docs/agents.md's tool reference is what the MCP server lists: the generated block matches
the definitions, and its table and descriptions match the server's tools/list (the SDK's own
stdio client on `minionsctl mcp`; no daemon needed to list tools)."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

from minionsd.agents import reference

DOC = Path(__file__).resolve().parents[2] / "docs" / "agents.md"


def doc_block() -> str:
    text = DOC.read_text(encoding="utf-8")
    match = re.search(r"<!-- tools:begin -->\n(.*)<!-- tools:end -->", text, re.S)
    assert match, "docs/agents.md lost its tools:begin/tools:end block"
    return match.group(1)


def test_the_reference_is_generated_from_the_definitions():
    assert doc_block() == reference.render(), (
        "docs/agents.md is out of date: paste the output of python -m minionsd.agents.reference")


def test_the_doc_matches_what_the_server_lists(tmp_path):
    async def listed():
        repo = DOC.parents[1]
        env = {k: v for k, v in os.environ.items() if not k.startswith("MINIONS_")}
        env["PYTHONPATH"] = str(repo) + os.pathsep + env.get("PYTHONPATH", "")
        server = StdioServerParameters(command=sys.executable, args=[
            "-m", "minionsd.cli", "--home", str(tmp_path), "mcp", "--project", "docs"],
            env=env, cwd=str(repo))
        async with Client(server, mode="legacy", read_timeout_seconds=60) as client:
            return (await client.list_tools()).tools

    tools = anyio.run(listed)
    block = doc_block()
    rows = {m.group(1): m.group(2, 3, 4) for m in re.finditer(
        r"^\| `(\w+)` \| `[\w.]+` \| .* \| (yes|no) \| (yes|no) \| (yes|no) \|$", block, re.M)}
    assert list(rows) == [t.name for t in tools]
    for tool in tools:
        hints = tool.annotations
        flags = tuple("yes" if h else "no" for h in (
            hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint))
        assert rows[tool.name] == flags, tool.name
        assert f"### `{tool.name}`: {tool.title}\n\n{tool.description}\n" in block
