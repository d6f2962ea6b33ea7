"""Holes found by attacking a real gateway in front of a real daemon (SPEC §5.2): what a token
writes never gets `system` trust, a token's own secret never reaches memory, a project-bound
admin token changes its project's records only, and the refusals hold for odd spellings of a
query-string token, a Host header and a /.well-known method."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator

import pytest

from minionsd.rpc.client import RpcError
from tests.conftest import DaemonProcess
from tests.gateway_harness import (
    GatewayProcess,
    call_rpc,
    daemon_and_gateway,
    gateway_with,
    make_token,
)


class Env:
    def __init__(self, daemon: DaemonProcess, gateway: GatewayProcess) -> None:
        self.daemon = daemon
        self.gateway = gateway
        self.write = make_token(daemon, "writer", "writer-bot", "write")


def _episodic(daemon: DaemonProcess) -> None:
    daemon.call("config.set", key="engine.memory_episodic_capture", value=True)


@pytest.fixture(scope="module")
def env() -> Iterator[Env]:
    with daemon_and_gateway("mgr-", prepare=_episodic) as (daemon, gateway):
        yield Env(daemon, gateway)


def _raw(gateway: GatewayProcess, method: str, path: str, token: str | None = None,
         body: bytes | None = None, headers: dict[str, str] | None = None
         ) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=30)
    try:
        sent = {"Content-Type": "application/json", **(headers or {})}
        if token:
            sent["Authorization"] = f"Bearer {token}"
        connection.request(method, path, body=body, headers=sent)
        response = connection.getresponse()
        return (response.status, {k.lower(): v for k, v in response.getheaders()},
                response.read())
    finally:
        connection.close()


STATUS = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "status"}).encode()


def test_an_outcome_reported_with_a_token_gets_agent_trust_never_system(env):
    reply = call_rpc(env.gateway, env.write, "episode.capture", outcome="success",
                     task_id="T-1", agent="someone-else", summary="the build is green",
                     trust="system")
    assert reply["result"]["captured"] is True, reply
    record = env.daemon.call("memory.get", id=reply["result"]["id"])
    assert (record["trust"], record["agent"]) == ("agent", "writer-bot")
    # On the socket (a hook on this machine) an outcome keeps its system trust.
    local = env.daemon.call("episode.capture", outcome="success", task_id="T-2",
                            agent="dallas", summary="local")
    assert env.daemon.call("memory.get", id=local["id"])["trust"] == "system"
    with pytest.raises(RpcError) as refused:
        env.daemon.call("episode.capture", outcome="success", task_id="T-3", agent="dallas",
                        trust="human")
    assert refused.value.code == -32602 and refused.value.data["param"] == "trust"


def test_a_note_written_with_a_token_stays_agent_when_its_agent_becomes_human(env):
    """SPEC §5.2 Identity: what a token writes is `agent`, also when trust.human_authors lists
    its agent by the time the note is consolidated (the token itself is refused from then)."""
    token = make_token(env.daemon, "later-human", "late-bot", "write")
    daemon = env.daemon
    before = {key: daemon.call("config.get", key=key)["value"]
              for key in ("trust.human_authors", "engine.auto_consolidate_memory")}
    daemon.call("config.set", key="engine.auto_consolidate_memory", value=False)
    try:
        reply = call_rpc(env.gateway, token, "inbox.submit", title="Gateway trust probe",
                         body="Pending remote note gwtrusttoken3")
        assert reply["result"]["duplicate"] is False, reply
        # The same body on the socket, as the owner: that one is human.
        daemon.call("inbox.submit", body="Local note gwtrustlocal4", author="late-bot")
        daemon.call("config.set", key="trust.human_authors",
                    value=[*before["trust.human_authors"], "late-bot"])
        daemon.call("consolidation.run", force=True)
        found = {r["body"].split()[-1]: r["trust"] for r in
                 daemon.call("memory.search", query="gwtrusttoken3 OR gwtrustlocal4")["records"]}
        assert found == {"gwtrusttoken3": "agent", "gwtrustlocal4": "human"}
    finally:
        for key, value in before.items():
            daemon.call("config.set", key=key, value=value)
    with pytest.raises(RpcError) as refused:
        daemon.call("inbox.submit", body="x", author="bob", trust="human")
    assert refused.value.code == -32602 and refused.value.data["param"] == "trust"


def test_a_gateway_token_in_an_outcome_or_a_task_never_reaches_memory(env):
    reply = call_rpc(env.gateway, env.write, "episode.capture", outcome="success",
                     task_id="T-setup", agent="x",
                     summary=f"set MINIONS_TOKEN={env.write} on the runner")
    body = env.daemon.call("memory.get", id=reply["result"]["id"])["body"]
    assert env.write not in body and "[REDACTED:minionsd_token]" in body
    task = {"id": "T-leak", "title": f"rotate {env.write}"}
    terms = call_rpc(env.gateway, env.write, "memory.retrieve", task=task)["result"]["terms"]
    secret = env.write.removeprefix("mnt_").lower()
    assert not any(len(term) > 6 and term in secret for term in terms), terms


def test_an_admin_token_cannot_be_bound_to_a_project(env):
    """Admin methods act on the whole home (config, pinned.md, telemetry, consolidation), so a
    project-bound admin token would promise a bound it cannot keep: it is refused when made."""
    with pytest.raises(RpcError) as refused:
        env.daemon.call("token.create", name="pay-admin", agent="pay-admin-bot",
                        scopes=["admin"], project="payments")
    assert refused.value.code == -32602 and "project" in refused.value.detail
    names = [row["name"] for row in env.daemon.call("token.list")["tokens"]]
    assert "pay-admin" not in names


@pytest.mark.parametrize("query", ["q=%6Dnt_{t}", "x=mnt%5F{t}", "%6Dnt_{t}=1"])
def test_a_percent_encoded_token_in_the_query_string_is_400(env, query):
    token = env.write.removeprefix("mnt_")
    status, _, body = _raw(env.gateway, "POST", "/rpc?" + query.format(t=token), env.write,
                           STATUS)
    assert status == 400 and json.loads(body)["error"]["reason"] == "query_token"
    assert token.encode() not in body


@pytest.mark.parametrize("host", ["localhost:80@evil.example", "127.0.0.1:evil"])
def test_a_host_with_anything_but_a_port_after_the_colon_is_421(env, host):
    status, _, body = _raw(env.gateway, "POST", "/rpc", env.write, STATUS, {"Host": host})
    assert status == 421 and json.loads(body)["error"]["reason"] == "host"


@pytest.mark.parametrize("method", ["OPTIONS", "PUT", "DELETE", "PATCH"])
def test_well_known_is_404_whatever_the_method(env, method):
    status, _, _ = _raw(env.gateway, method, "/.well-known/oauth-protected-resource/mcp")
    assert status == 404


def test_get_mcp_is_405_at_once_rather_than_a_stream_held_open(env):
    status, headers, body = _raw(env.gateway, "GET", "/mcp", env.write,
                                 headers={"Accept": "text/event-stream"})
    assert status == 405 and headers["allow"] == "POST"
    assert json.loads(body)["error"]["reason"] == "method"
    status, _, _ = _raw(env.gateway, "GET", "/mcp", None, headers={"Accept": "text/event-stream"})
    assert status == 401


def _batch(n: int) -> bytes:
    return json.dumps([{"jsonrpc": "2.0", "id": i, "method": "pinned.get"} for i in range(n)],
                      separators=(",", ":")).encode()


def test_each_request_of_a_batch_counts_against_the_tokens_rate(env):
    token = make_token(env.daemon, "batcher", "batch-bot", "read")
    # gateway.rate_burst is 40: one body of 41 requests is refused, never sent to the daemon.
    status, _, raw = _raw(env.gateway, "POST", "/rpc", token, _batch(41))
    reply = json.loads(raw)
    assert status == 200 and reply["error"]["code"] == -32600
    assert "gateway.rate_burst" in reply["error"]["data"]["detail"]
    token = make_token(env.daemon, "batcher-2", "batch-bot", "read")  # a full bucket
    status, _, raw = _raw(env.gateway, "POST", "/rpc", token, _batch(40))
    assert status == 200 and len(json.loads(raw)) == 40
    # The burst is spent: the next batch waits for the rate like 40 single requests would.
    status, headers, raw = _raw(env.gateway, "POST", "/rpc", token, _batch(30))
    assert status == 429 and int(headers["retry-after"]) >= 1
    assert json.loads(raw)["error"]["reason"] == "rate"


def test_a_batch_the_daemon_refuses_as_a_whole_answers_every_request_under_its_id(env):
    # Under server.max_request_bytes as sent, over it once the gateway has filled in each
    # request's params: the daemon would refuse the line and hang up (no "daemon went away"
    # 503 for it); every request gets -32600 under its own id.
    gateway = gateway_with(env.daemon, **{"gateway.rate_burst": 50_000})
    try:
        body = _batch(20_000)
        assert 1_000_000 < len(body) < 1_048_576
        status, _, raw = _raw(gateway, "POST", "/rpc", env.write, body)
    finally:
        gateway.stop()
    replies = json.loads(raw)
    assert status == 200, replies
    assert [r["id"] for r in replies] == list(range(20_000))
    assert {r["error"]["code"] for r in replies} == {-32600}
    assert "max_request_bytes" in replies[-1]["error"]["data"]["detail"]


def test_a_second_origin_header_is_checked_too(env):
    origin = f"http://127.0.0.1:{env.gateway.port}"
    connection = http.client.HTTPConnection("127.0.0.1", env.gateway.port, timeout=30)
    try:
        connection.putrequest("POST", "/rpc")
        for name, value in (("Authorization", f"Bearer {env.write}"), ("Origin", origin),
                            ("Origin", "https://evil.example"),
                            ("Content-Type", "application/json"),
                            ("Content-Length", str(len(STATUS)))):
            connection.putheader(name, value)
        connection.endheaders(STATUS)
        response = connection.getresponse()
        assert response.status == 403
        assert json.loads(response.read())["error"]["reason"] == "origin"
    finally:
        connection.close()


@pytest.mark.parametrize("raw", [
    b'[{"jsonrpc":"2.0","id":1e400,"method":"status"},{"jsonrpc":"2.0","id":2,"method":"status"}]',
    b'[{"jsonrpc":"2.0","id":1e400,"method":"token.list"}]',
    b'{"jsonrpc":"2.0","id":NaN,"method":"status"}'])
def test_a_number_json_has_not_is_a_parse_error_never_a_500(env, raw):
    status, _, body = _raw(env.gateway, "POST", "/rpc", env.write, raw)
    assert status == 200 and json.loads(body)["error"]["code"] == -32700
