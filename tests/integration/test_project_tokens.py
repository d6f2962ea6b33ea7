"""A gateway token bound to a project recalls, searches and writes in that project only
(SPEC §5.2), through /rpc and through the mcp SDK's own client on /mcp: no other project's text
through the legacy Team Notes / Personal Memory, no other project's agent-scoped record through
retrieval, no other project's note named by a finding's conflict; its search finds the records
of no project that its recall finds. The socket answers as before. Projects retrieval could
never ask for are refused when written; hand-edited digest text is redacted into a prompt."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from minionsd.rpc.client import RpcError
from tests.conftest import DaemonProcess
from tests.gateway_harness import GatewayProcess, call_rpc, daemon_and_gateway, make_token

ZEUS_WORD = "narwhalbluefin"  # only ever written in project zeus


class Env:
    def __init__(self, daemon: DaemonProcess, gateway: GatewayProcess) -> None:
        self.daemon = daemon
        self.gateway = gateway
        self.bound = make_token(daemon, "carol-atlas", "carol", "read,write", project="atlas")
        self.free = make_token(daemon, "alice-any", "alice", "read,write")


def _prepare(daemon: DaemonProcess) -> None:
    # carol has a notebook; she and zed write notes in zeus, consolidated into notes.md
    daemon.call("config.set", key="agents.carol.name", value="Carol")
    for author in ("carol", "zed"):
        daemon.call("inbox.submit", author=author, project="zeus",
                    title=f"zeus {ZEUS_WORD} merger by {author}",
                    body=f"Merger codename {ZEUS_WORD}: keep it inside zeus.")
    assert daemon.call("consolidation.run", force=True)["notes"] == 2


@pytest.fixture(scope="module")
def env() -> Iterator[Env]:
    with daemon_and_gateway("ptk-", prepare=_prepare) as (daemon, gateway):
        yield Env(daemon, gateway)


@asynccontextmanager
async def mcp_session(env: Env, token: str) -> AsyncIterator[Client]:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                                  timeout=60) as http, Client(
            streamable_http_client(env.gateway.url + "/mcp", http_client=http),
            read_timeout_seconds=60) as client:
        yield client


def _result(reply: dict[str, Any]) -> Any:
    assert "result" in reply, reply
    return reply["result"]


def _add(env: Env, word: str, scope: str, project: str | None = None) -> str:
    params: dict[str, Any] = {"body": f"{word}: restart the ledger worker after a deploy.",
                              "title": f"{word} ledger worker", "type": "semantic",
                              "scope": scope, "trust": "human", "source": "test"}
    if project is not None:
        params["project"] = project
    return env.daemon.call("memory.add", **params)["id"]


def test_a_bound_token_gets_no_other_projects_team_notes_or_notebook(env):
    notes = (env.daemon.home / "notes.md").read_text()
    notebook = (env.daemon.home / "knowledge" / "agents" / "carol.md").read_text()
    assert ZEUS_WORD in notes and ZEUS_WORD in notebook  # the legacy pair holds zeus's notes
    task = {"id": "T-legacy"}  # no terms: prompt.assemble falls back to the legacy pair
    bound = _result(call_rpc(env.gateway, env.bound, "prompt.assemble", task=task))
    assert bound["memory_mode"] == "legacy"
    assert ZEUS_WORD not in bound["text"]
    assert {s["name"] for s in bound["sections"]} <= {"pinned"}
    # a socket caller naming the project, and an unbound token, still get the pair
    socket = env.daemon.call("prompt.assemble", task=task, project="atlas", agent="carol")
    assert [s["name"] for s in socket["sections"]] == ["team_notes", "personal_memory"]
    assert ZEUS_WORD in socket["text"]
    free = _result(call_rpc(env.gateway, env.free, "prompt.assemble", task=task))
    assert ZEUS_WORD in free["text"]

    async def main() -> None:
        async with mcp_session(env, env.bound) as client:
            shown = await client.read_resource("minions://team-notes")
            assert ZEUS_WORD not in shown.contents[0].text
            assert "bound to a project" in shown.contents[0].text  # says why it is empty
            context = await client.call_tool("memory_context",
                                             {"text": "an unrelated question about nothing"})
            assert ZEUS_WORD not in context.content[0].text
            assert ZEUS_WORD not in str(context.structured_content)
        async with mcp_session(env, env.free) as client:
            shown = await client.read_resource("minions://team-notes")
            assert ZEUS_WORD in shown.contents[0].text

    anyio.run(main)


def test_retrieval_through_a_bound_token_leaves_out_other_projects_agent_records(env):
    word = "kestrelquill"
    zeus = _add(env, word, "agent:carol", project="zeus")
    atlas = _add(env, word + " atlas", "agent:carol", project="atlas")
    plain = _add(env, word + " plain", "agent:carol")
    global_zeus = _add(env, word + " gz", "global", project="zeus")
    task = {"id": "T-agent", "title": f"{word} ledger worker restart"}
    got = _result(call_rpc(env.gateway, env.bound, "memory.retrieve", task=task))
    chosen = {s["id"] for s in got["selected"]}
    assert {atlas, plain} <= chosen and not {zeus, global_zeus} & chosen
    assert "zeus" not in got["text"]
    # memory.get through the same token refuses them, as before
    for hidden in (zeus, global_zeus):
        assert call_rpc(env.gateway, env.bound, "memory.get", id=hidden)["error"]["code"] == -32001
    # prompt.assemble packs the same candidates
    packed = _result(call_rpc(env.gateway, env.bound, "prompt.assemble", task=task))
    assert packed["memory_mode"] == "relevant"
    assert {s["id"] for s in packed["retrieval"]["selected"]} == chosen

    async def main() -> None:
        async with mcp_session(env, env.bound) as client:
            shown = await client.call_tool("memory_context", {"text": f"{word} ledger worker"})
            assert zeus not in shown.content[0].text and atlas in shown.content[0].text

    anyio.run(main)
    # the socket, naming the project and agent, keeps its rule: every agent:carol record
    socket = env.daemon.call("memory.retrieve", task=task, project="atlas", agent="carol")
    assert {zeus, atlas, plain} <= {s["id"] for s in socket["selected"]}


def test_a_bound_tokens_search_finds_its_project_and_no_project_only(env):
    word = "sandpiperowl"
    glob = _add(env, word + " global", "global")
    own = _add(env, word + " atlas", "project:atlas")
    own_col = _add(env, word + " atlascol", "global", project="atlas")
    other = _add(env, word + " zeus", "project:zeus")
    other_col = _add(env, word + " zeuscol", "agent:zed", project="zeus")
    someone = _add(env, word + " agent", "agent:zed")
    found = _result(call_rpc(env.gateway, env.bound, "memory.search", query=word, limit=50))
    ids = {r["id"] for r in found["records"]}
    assert ids == {glob, own, own_col, someone}, found
    assert found["total"] == 4
    # an unbound token (no project) and the socket's explicit filter are unchanged
    free = _result(call_rpc(env.gateway, env.free, "memory.search", query=word, limit=50))
    assert {r["id"] for r in free["records"]} == ids | {other, other_col}
    exact = env.daemon.call("memory.search", query=word, project="atlas", limit=50)
    assert {r["id"] for r in exact["records"]} == {own_col}

    async def main() -> None:
        async with mcp_session(env, env.bound) as client:
            shown = await client.call_tool("memory_search", {"query": word})
            text = shown.content[0].text
            assert glob in text and own in text and other not in text

    anyio.run(main)


def test_a_bound_tokens_finding_conflict_names_no_other_projects_note(env):
    first = env.daemon.call("inbox.submit", author="zed", kind="finding", task="SHARED-9",
                            outcome="success", project="zeus",
                            title="zeus acquires acme for 40M", body="Acquisition closed.")
    reply = call_rpc(env.gateway, env.bound, "inbox.submit", kind="finding", task="SHARED-9",
                     outcome="success", body="Fixed the shared build.")
    error = reply["error"]
    assert error["code"] == -32002
    assert "of another project" in error["data"]["detail"] and "atlas" in error["data"]["detail"]
    assert "first" not in error["data"]
    assert first["name"] not in str(error) and "acme" not in str(error) and "zed" not in str(error)
    # a finding of the token's own project, or of none, is named as before
    for project, task in (("atlas", "OWN-1"), (None, "OWN-2")):
        params = {"project": project} if project else {}
        own = env.daemon.call("inbox.submit", author="zed", kind="finding", task=task,
                              outcome="success", body=f"Done {task}.", **params)
        error = call_rpc(env.gateway, env.bound, "inbox.submit", kind="finding", task=task,
                         outcome="success", body="Me too.")["error"]
        assert error["code"] == -32002 and error["data"]["first"] == own["name"]
    # the socket always names the first finding
    with pytest.raises(RpcError) as refused:
        env.daemon.call("inbox.submit", author="ripley", kind="finding", task="SHARED-9",
                        outcome="success", project="atlas", body="Socket retry.")
    assert refused.value.code == -32002 and first["name"] in refused.value.detail


@pytest.mark.parametrize("project", ["  atlas ", "atlas\n", "", "   ", "p" * 201])
def test_a_project_retrieval_could_never_ask_for_is_refused(env, project):
    with pytest.raises(RpcError) as refused:
        env.daemon.call("inbox.submit", author="dave", body="puffin note", project=project)
    assert refused.value.code == -32602 and refused.value.data["param"] == "project"
    reply = call_rpc(env.gateway, env.free, "inbox.submit", body="puffin note", project=project)
    assert reply["error"]["code"] == -32602 and reply["error"]["data"]["param"] == "project"
    for params in ({"project": project, "scope": "global"}, {"scope": f"project:{project}"}):
        with pytest.raises(RpcError) as refused:
            env.daemon.call("memory.add", body="puffin record", type="semantic",
                            trust="agent", source="test", **params)
        assert refused.value.code == -32602
        assert refused.value.data["param"] in params and "project" in refused.value.detail


def test_a_project_name_retrieval_takes_is_kept_and_recalled(env):
    name = "p" * 200
    written = env.daemon.call("inbox.submit", author="dave", project=name, title="puffinlong",
                              body="puffinlong: settle batches after 02:00")
    assert f"project: {name}" in (env.daemon.home / written["path"]).read_text()
    env.daemon.call("consolidation.run", force=True)
    got = env.daemon.call("memory.retrieve", task={"id": "T-long", "title": "puffinlong settle"},
                          project=name)
    assert [s["scope"] for s in got["selected"]] == [f"project:{name}"]


def test_project_bound_is_checked_on_the_socket(env):
    for method, params in (("memory.search", {"query": "x"}),
                           ("memory.retrieve", {"task": {"id": "T"}}),
                           ("prompt.assemble", {"task": {"id": "T"}}),
                           ("inbox.submit", {"author": "dave", "body": "x"})):
        with pytest.raises(RpcError) as refused:
            env.daemon.call(method, project_bound=True, **params)
        assert refused.value.data["param"] == "project_bound", method
        with pytest.raises(RpcError) as refused:
            env.daemon.call(method, project_bound="yes", project="atlas", **params)
        assert refused.value.data["param"] == "project_bound", method


def test_hand_added_secrets_in_notes_and_notebook_never_reach_a_prompt(env):
    secret = "ghp_" + "Q7xk2LmN9pRt4VwYz8Ab3Cd5Ef6Gh1Jk0Lm"
    notes = env.daemon.home / "notes.md"
    notebook = env.daemon.home / "knowledge" / "agents" / "carol.md"
    before = notes.read_text(), notebook.read_text()
    try:
        notes.write_text(before[0] + f"\nHand-added: the CI token is {secret}\n")
        notebook.write_text(before[1] + f"\nMy own copy of the token: {secret}\n")
        got = env.daemon.call("prompt.assemble", task={"id": "T-secret"}, agent="carol")
        assert [s["name"] for s in got["sections"]] == ["team_notes", "personal_memory"]
        assert secret not in got["text"]
        assert got["text"].count("[REDACTED:github_token]") == 2
        assert secret in notes.read_text()  # the file itself is the operator's
    finally:
        notes.write_text(before[0])
        notebook.write_text(before[1])
