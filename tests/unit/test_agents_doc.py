"""docs/agents.md's tool reference is what the MCP server lists: the generated block matches
the definitions, and its table and descriptions match the server's tools/list (in-process SDK
client; no daemon needed to list tools)."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
from mcp import Client

from minionsd.agents import reference
from minionsd.agents.mcp_server import build_server
from minionsd.agents.session import Session

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
        session = Session.create(str(tmp_path), None, "agent", None)
        async with Client(build_server(session), mode="legacy") as client:
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
