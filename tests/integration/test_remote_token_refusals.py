"""Remote clients and their token (SPEC §5.2: a token never appears in a log line, telemetry row
or error message), against a real daemon and gateway: a token read from the environment with a
trailing newline (a secret file's) is used without it; one that still is not a token's shape is
a usage error that does not show it, for commands, hooks and `mcp --url`. A gateway's refusal
(401, 429) reaches an MCP tool and a resource read as a clear error naming the HTTP status and
the gateway's reason, never as a defect, and never unanswered. /rpc never echoes `"id": true`."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.gateway_harness import daemon_and_gateway, gateway_with, make_token
from tests.integration.test_gateway_remote import ctl
from tests.integration.test_mcp_malformed import Bounded

PROMPT = json.dumps({"session_id": "s1", "hook_event_name": "UserPromptSubmit",
                     "prompt": "where are card numbers masked?"})


class Env:
    def __init__(self, daemon, gateway) -> None:
        self.daemon = daemon
        self.gateway = gateway
        self.token = make_token(daemon, "tok-reader", "reader-bot", "read")


@pytest.fixture(scope="module")
def env() -> Iterator[Env]:
    with daemon_and_gateway("tk-") as (daemon, gateway):
        daemon.call("memory.add", body="Card numbers are masked by mask_pan() in pan.py.",
                    type="semantic", scope="global", trust="agent", source="test",
                    title="Masking card numbers")
        yield Env(daemon, gateway)


def _shown(token: str, *texts: str) -> bool:
    """Whether any text shows the token, or a good part of what follows its mnt_ prefix."""
    secret = token.strip()[4:]
    return any(secret[i:i + 12] in text for text in texts for i in range(0, len(secret) - 11))


@pytest.mark.parametrize("padding", ["\n", "\r", "\r\n", " \n", "\t", "\n\n"],
                         ids=["LF", "CR", "CRLF", "space-LF", "tab", "LF-LF"])
def test_a_token_with_surrounding_whitespace_is_used_without_it(env, padding):
    remote = ("--url", env.gateway.url, "--token-env", "GW_TOKEN")
    done = ctl(*remote, "status", GW_TOKEN=env.token + padding)
    assert done.returncode == 0, done.stderr
    by_default = ctl("--url", env.gateway.url, "search", "card numbers",
                     MINIONS_TOKEN=padding + env.token + padding)
    assert by_default.returncode == 0 and "Masking card numbers" in by_default.stdout
    hook = ctl(*remote, "hook", "claude-code", "user-prompt", stdin=PROMPT,
               GW_TOKEN=env.token + padding)
    assert hook.returncode == 0 and "mask_pan()" in hook.stdout, hook.stderr


def _malformed(token: str) -> dict[str, str]:
    return {
        "a space inside": token[:20] + " " + token[20:],
        "a newline inside": token[:20] + "\n" + token[20:],
        "a control character": token[:30] + "\x01" + token[31:],
        "written with its header word": "Bearer " + token,
        "one character short": token[:-1],
        "a character a token never has": token[:-1] + "!",
        "a non-ASCII letter": token[:-1] + "é",
    }


@pytest.mark.parametrize("case", list(_malformed("mnt_" + "x" * 43)))
def test_a_malformed_token_is_a_usage_error_that_never_shows_it(env, case):
    bad = _malformed(env.token)[case]
    remote = ("--url", env.gateway.url, "--token-env", "GW_TOKEN")
    for words in (("status",), ("--json", "show", "M-1")):
        done = ctl(*remote, *words, GW_TOKEN=bad)
        assert done.returncode == 2, (case, done.stdout, done.stderr)
        assert "GW_TOKEN" in done.stderr or "GW_TOKEN" in done.stdout
        assert not _shown(bad, done.stdout, done.stderr), case
        assert "Traceback" not in done.stderr
    by_default = ctl("--url", env.gateway.url, "status", MINIONS_TOKEN=bad)
    assert by_default.returncode == 2 and "MINIONS_TOKEN" in by_default.stderr
    assert not _shown(bad, by_default.stdout, by_default.stderr)
    hook = ctl(*remote, "hook", "claude-code", "user-prompt", stdin=PROMPT, GW_TOKEN=bad)
    assert (hook.returncode, hook.stdout) == (0, ""), case  # a hook never fails a session
    assert len(hook.stderr.strip().splitlines()) == 1 and "GW_TOKEN" in hook.stderr
    assert not _shown(bad, hook.stderr)
    server = ctl(*remote, "mcp", stdin="", GW_TOKEN=bad)
    assert server.returncode == 2 and "GW_TOKEN" in server.stderr
    assert not _shown(bad, server.stdout, server.stderr)


def test_the_http_client_never_quotes_a_token_it_cannot_send(env):
    """minionsd.rpc.http_client is a public client too: http.client's own error about a bad
    header quotes the whole header, token included."""
    from minionsd.rpc.http_client import HttpClient

    for bad in (env.token + "\n", env.token + "\r", env.token[:10] + "\n" + env.token[10:]):
        with pytest.raises(ValueError) as info, HttpClient(env.gateway.url, bad,
                                                          timeout=10) as client:
            client.call("status")
        assert not _shown(bad, str(info.value), repr(info.value)), info.value
        assert "token" in str(info.value)


INIT = {"protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "refusals", "version": "1"}}


def _bridge(monkeypatch, url: str, token: str) -> Bounded:
    monkeypatch.setenv("GW_TOKEN", token)
    client = Bounded("--url", url, "--token-env", "GW_TOKEN")
    client.initialize()
    return client


def test_mcp_url_with_an_unknown_token_says_the_gateway_refused_it(env, monkeypatch):
    unknown = "mnt_" + "Q" * 43
    client = _bridge(monkeypatch, env.gateway.url, unknown)
    try:
        result = client.ask("tools/call", {"name": "memory_search",
                                           "arguments": {"query": "card numbers"}})["result"]
        text = result["content"][0]["text"]
        assert result["isError"] is True
        assert "HTTP 401" in text and "unknown" in text and "not known" in text, text
        assert "inside minionsd's MCP server" not in text and "not reachable" not in text
        assert "token" in text and not _shown(unknown, text, json.dumps(result))
        error = result["structuredContent"]["error"]
        assert error["kind"] == "gateway_refused" and error["data"]["status"] == 401
        assert error["data"]["reason"] == "unknown"
        # Every resource read is answered, with the same reason.
        for uri in ("minions://pinned", "minions://team-notes",
                    "minions://knowledge/conventions/x.md"):
            refused = client.ask("resources/read", {"uri": uri})["error"]
            assert refused["code"] == -32603 and "HTTP 401" in refused["message"], refused
            assert "inside minionsd's MCP server" not in refused["message"]
        assert client.ask("ping")["result"] == {}
        assert client.close() == 0, client.stderr()
    finally:
        if client.proc.poll() is None:
            client.kill()


def test_mcp_url_over_the_rate_says_when_to_try_again(env, monkeypatch):
    slow = gateway_with(env.daemon, **{"gateway.rate_per_s": 1, "gateway.rate_burst": 2})
    client = _bridge(monkeypatch, slow.url, env.token)
    try:
        ids = []
        for _ in range(6):  # at once: each runs in a thread of its own
            client.next_id += 1
            ids.append(client.next_id)
            client.send({"jsonrpc": "2.0", "id": client.next_id, "method": "tools/call",
                         "params": {"name": "memory_search", "arguments": {"query": "card"}}})
        replies = [client.read() for _ in ids]
        assert sorted(r["id"] for r in replies) == ids
        limited = [r["result"] for r in replies if "HTTP 429" in r["result"]["content"][0]["text"]]
        assert limited, [r["result"]["content"][0]["text"][:120] for r in replies]
        text = limited[0]["content"][0]["text"]
        assert "rate" in text and "retry after" in text and "wait" in text, text
        error = limited[0]["structuredContent"]["error"]
        assert error["data"]["status"] == 429 and int(error["data"]["retry_after"]) >= 1
        assert client.close() == 0, client.stderr()
    finally:
        if client.proc.poll() is None:
            client.kill()
        slow.stop()


@pytest.mark.parametrize("request_id", [True, False])
def test_rpc_never_echoes_a_boolean_id(env, request_id):
    for body in ({"jsonrpc": "1.0", "id": request_id, "method": "status"},
                 {"jsonrpc": "2.0", "id": request_id, "method": "status"},
                 {"jsonrpc": "2.0", "id": request_id, "method": 5}):
        status, _, reply = env.gateway.rpc(env.token, body)
        assert status == 200 and reply["error"]["code"] == -32600, reply
        assert reply["id"] is None, (body, reply)
