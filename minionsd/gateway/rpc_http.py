"""`POST /rpc`: JSON-RPC 2.0 over HTTP, one message or a batch as the body (SPEC §5.2).

Each request of a batch is judged on its own (policy.admit): one outside the token's scopes
gets its -32004 answer here, the others go to the daemon together as one batch, so the
daemon commits their writes together as it does on the socket. Any JSON-RPC answer is HTTP
200 (204 when the body held notifications only); the daemon not answering is 503 with a
JSON-RPC error, so a client can tell "refused" from "unreachable".
"""

from __future__ import annotations

import json
import time
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from minionsd.gateway.auth import Authenticator, HttpRefusal, peer
from minionsd.gateway.daemon_link import DaemonLink, DaemonTimeout, timeout_for
from minionsd.gateway.identity import Identity, known
from minionsd.gateway.metrics import GatewayMetrics
from minionsd.gateway.policy import Forbidden, admit, check_project
from minionsd.rpc.client import DaemonUnavailable

UNREACHABLE = -32000


def _error(request_id: Any, code: int, message: str, detail: str, **data: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id,
            "error": {"code": code, "message": message, "data": {"detail": detail, **data}}}


def _envelope_problem(message: Any) -> str | None:
    if not isinstance(message, dict):
        return "a request must be a JSON object"
    request_id = message.get("id")
    if request_id is not None and (isinstance(request_id, bool)
                                   or not isinstance(request_id, str | int | float)):
        return "'id' must be a string, a number or null"
    if message.get("jsonrpc") != "2.0":
        return "'jsonrpc' must be \"2.0\""
    if not isinstance(message.get("method"), str):
        return "'method' must be a string"
    if "params" in message and not isinstance(message["params"], dict | list):
        return "'params' must be an object or an array"
    return None


def judge(message: Any, identity: Identity) -> tuple[dict[str, Any] | None, dict[str, Any] | None,
                                                     dict[str, Any]]:
    """(message to forward or None, local answer or None, note for the answer)."""
    problem = _envelope_problem(message)
    if problem is not None:
        request_id = message.get("id") if isinstance(message, dict) else None
        return None, _error(request_id if isinstance(request_id, str | int) else None,
                            -32600, "Invalid Request", problem), {}
    try:
        admitted = admit(message["method"], message.get("params"), identity)
    except Forbidden as exc:
        if "id" not in message:
            return None, None, {}
        return None, _error(message["id"], exc.code, exc.message, exc.detail, **exc.data), {}
    forward = {"jsonrpc": "2.0", "method": message["method"], "params": admitted.params}
    if "id" in message:
        forward["id"] = message["id"]
    return forward, None, admitted.note


async def _in_project(judged: tuple[dict[str, Any] | None, dict[str, Any] | None,
                                     dict[str, Any]], identity: Identity, link: DaemonLink
                      ) -> tuple[dict[str, Any] | None, dict[str, Any] | None, dict[str, Any]]:
    """A forwarded request that a project-bound token may not make becomes a local answer."""
    forward, local, note = judged
    if forward is None or identity.project is None:
        return judged
    try:
        await check_project(forward["method"], forward["params"], identity,
                            link.record_or_none)
    except Forbidden as exc:
        if "id" not in forward:
            return None, None, {}
        return None, _error(forward["id"], exc.code, exc.message, exc.detail, **exc.data), {}
    return forward, local, note


async def answer(messages: list[Any], identity: Identity,
                 link: DaemonLink) -> list[dict[str, Any]]:
    """The answers to a batch, in request order (notifications have none)."""
    judged = [await _in_project(judge(m, identity), identity, link) for m in messages]
    forward = [f for f, _, _ in judged if f is not None]
    replies: list[dict[str, Any]] = []
    if forward:
        payload = json.dumps(forward if len(forward) > 1 else forward[0],
                             separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        line = await link.exchange_bytes(payload, timeout_for([f["method"] for f in forward]))
        if line is not None:
            decoded = json.loads(line)
            replies = decoded if isinstance(decoded, list) else [decoded]
    pending = iter(replies)
    out = []
    for forwarded, local, note in judged:
        if local is not None:
            out.append(local)
        elif forwarded is not None and "id" in forwarded:
            reply = next(pending, None)
            if reply is None:
                reply = _error(forwarded["id"], -32603, "Internal error",
                               "the daemon gave no answer to this request")
            if note and isinstance(reply, dict):
                reply["data"] = note
            out.append(reply)
    out.extend(pending)  # never expected: answers the daemon gave beyond the requests
    return out


class RpcEndpoint:
    def __init__(self, auth: Authenticator, link: DaemonLink, metrics: GatewayMetrics) -> None:
        self.auth = auth
        self.link = link
        self.metrics = metrics

    async def handle(self, request: Request) -> Response:
        started = time.perf_counter()
        method = "-"
        status = 200
        try:
            response, method = await self._handle(request)
            status = response.status_code
            return response
        except HttpRefusal as exc:
            self.metrics.refuse(exc.reason)
            status = exc.status
            return JSONResponse(exc.body(), exc.status, headers=exc.headers)
        finally:
            self.metrics.observe("rpc", method, status, time.perf_counter() - started)

    async def _handle(self, request: Request) -> tuple[Response, str]:
        identity = await self.auth.identify(request.headers, client=peer(request))
        body = await request.body()
        try:
            decoded = json.loads(body)
        except (ValueError, UnicodeDecodeError) as exc:
            return JSONResponse(_error(None, -32700, "Parse error",
                                       f"the body is not valid UTF-8 JSON: {exc}")), "-"
        except RecursionError:
            return JSONResponse(_error(None, -32600, "Invalid Request",
                                       "the body is nested too deeply")), "-"
        batch = isinstance(decoded, list)
        if batch and not decoded:
            return JSONResponse(_error(None, -32600, "Invalid Request", "empty batch")), "-"
        messages = decoded if batch else [decoded]
        label = (messages[0].get("method") if not batch and isinstance(messages[0], dict)
                 else "batch")
        # Only known method names become metric labels: a client must not be able to grow
        # the metrics with made-up names.
        label = label if label == "batch" or (isinstance(label, str) and known(label)) else "other"
        try:
            if not batch and identity.project is None:
                forward, _local, note = judge(decoded, identity)
                if forward is not None and not note and "id" in forward:
                    # One request whose answer needs nothing added: the daemon's bytes as
                    # they are, without decoding and encoding them again.
                    line = await self.link.exchange_bytes(json.dumps(
                        forward, separators=(",", ":"), ensure_ascii=False).encode("utf-8"),
                        timeout_for([forward["method"]]))
                    return Response((line or b"").rstrip(b"\n"),
                                    media_type="application/json"), label
            out = await answer(messages, identity, self.link)
        except DaemonTimeout as exc:
            return JSONResponse(_error(None, UNREACHABLE, "internal", str(exc),
                                       kind="daemon_timeout"), 504), label
        except (DaemonUnavailable, TimeoutError, OSError) as exc:
            return JSONResponse(_error(None, UNREACHABLE, "internal",
                                       "the minionsd daemon behind this gateway is not "
                                       f"reachable: {exc}", kind="daemon_unreachable"),
                                503), label
        if not out:
            return Response(status_code=204), label
        return JSONResponse(out if batch else out[0]), label
