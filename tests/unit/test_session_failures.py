"""What an MCP tool answers when the way to the daemon fails (minionsd.agents.tools.answer over
a Session whose transport raises, as a gateway's does): a gateway refusal is a tool error
naming the HTTP status, its reason and what to do; an exception whose text holds a token never
puts it in front of the model (SPEC §5.2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from minionsd.agents import tools
from minionsd.agents.session import Session
from minionsd.rpc.client import DaemonUnavailable, GatewayRefused

TOKEN = "mnt_Zq3xV9kLmN2pR7sT4uW8yA1bC5dE6fG0hJ-iK_oPqRs"
URL = "http://127.0.0.1:9/rpc"


def _session(failure: BaseException) -> Session:
    def transport(method: str, params: dict[str, Any]) -> Any:
        raise failure

    return Session(Path("/nonexistent/minionsd.sock"), None, "tester", None,
                   transport=transport, endpoint=URL)


@pytest.mark.parametrize("failure", [
    ValueError(f"Invalid header value b'Bearer {TOKEN}\\n'"),
    ValueError(f"Invalid header value b'Bearer {TOKEN}\\r'"),
    OSError(f"cannot send 'Authorization: Bearer {TOKEN}'"),
    DaemonUnavailable(f"the gateway at {URL} is not reachable: token={TOKEN}"),
    GatewayRefused(401, "unknown", f"token {TOKEN} is not known"),
], ids=["ValueError-LF", "ValueError-CR", "OSError", "DaemonUnavailable", "GatewayRefused"])
def test_a_token_in_an_exception_never_reaches_the_tool_result(failure):
    result = tools.answer(_session(failure), "memory_search", {"query": "deploy"})
    assert result["isError"] is True
    wire = json.dumps(result)
    assert TOKEN[4:20] not in wire and TOKEN[20:] not in wire, wire
    assert "[token hidden]" in result["content"][0]["text"]


@pytest.mark.parametrize(("status", "reason", "detail", "retry", "says"), [
    (401, "revoked", "the bearer token was revoked", None, "not accepted"),
    (403, "origin", "the Origin header names another site", None, "does not allow"),
    (429, "rate", "token 'x' is over its rate; retry later (retry after 3 s)", "3",
     "wait 3 s"),
])
def test_a_gateway_refusal_is_a_tool_error_naming_status_and_reason(status, reason, detail,
                                                                    retry, says):
    refusal = GatewayRefused(status, reason, detail, retry)
    result = tools.answer(_session(refusal), "memory_note", {"body": "x"})
    text = result["content"][0]["text"]
    assert result["isError"] is True
    assert f"HTTP {status}" in text and reason in text and detail in text and says in text
    assert URL in text and "refused inbox.submit" in text, text
    assert "inside minionsd's MCP server" not in text and "not reachable" not in text
    error = result["structuredContent"]["error"]
    assert error["kind"] == "gateway_refused" and error["message"] == reason
    assert error["data"]["status"] == status
    assert error["data"].get("retry_after") == retry
