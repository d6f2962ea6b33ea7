"""`POST /rpc`: JSON-RPC 2.0 over HTTP, one message or a batch as the body (SPEC §5.2).

Each request of a batch is judged on its own (policy.admit): one outside the token's scopes
gets its -32004 answer here, the others go to the daemon together as one batch, so the
daemon commits their writes together as it does on the socket. Any JSON-RPC answer is HTTP
200 (204 when the body held notifications only); the daemon not answering is 503 with a
JSON-RPC error, so a client can tell "refused" from "unreachable".
"""

from __future__ import annotations

import json
import math
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


def _not_json(literal: str) -> Any:
    raise ValueError(f"{literal} is not a JSON number")


def _finite(literal: str) -> float:
    value = float(literal)
    if math.isinf(value):
        raise ValueError(f"the number {literal[:40]} is too large")
    return value


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
        usable = isinstance(request_id, str | int) and not isinstance(request_id, bool)
        return None, _error(request_id if usable else None,
                            -32600, "Invalid Request", problem), {}
    if not known(message["method"]):  # whatever the token's scopes: nothing to refuse
        if "id" not in message:
            return None, None, {}
        return None, _error(message["id"], -32601, "Method not found",
                            f"no method named {message['method']!r}"), {}
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


def _too_big(max_bytes: int) -> dict[str, Any]:
    return _error(None, -32600, "Invalid Request", "the request is over "
                  f"server.max_request_bytes ({max_bytes}) once the gateway has filled in its "
                  "params; send fewer requests at once")


async def answer(messages: list[Any], identity: Identity, link: DaemonLink,
                 max_bytes: int | None = None) -> list[dict[str, Any]]:
    """The answers to a batch, in request order (notifications have none). A batch that
    would be over the daemon's `max_bytes` once forwarded is not sent: every request gets
    -32600 (the daemon would refuse the line and close the connection)."""
    judged = [await _in_project(judge(m, identity), identity, link) for m in messages]
    forward = [f for f, _, _ in judged if f is not None]
    replies: list[dict[str, Any]] = []
    if forward:
        payload = json.dumps(forward if len(forward) > 1 else forward[0],
                             separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        line = (json.dumps(_too_big(max_bytes)).encode()
                if max_bytes is not None and len(payload) > max_bytes else
                await link.exchange_bytes(payload, timeout_for([f["method"] for f in forward])))
        if line is not None:
            decoded = json.loads(line)
            if isinstance(decoded, dict) and len(forward) > 1:
                # One answer to a batch: the daemon refused the line as a whole (over
                # server.max_request_bytes once the gateway filled in params), so that is
                # every request's answer, each under its own id.
                replies = [decoded | {"id": f["id"]} for f in forward if "id" in f]
            else:
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
    def __init__(self, auth: Authenticator, link: DaemonLink, metrics: GatewayMetrics,
                 max_bytes: int | None = None) -> None:
        self.auth = auth
        self.link = link
        self.metrics = metrics
        self.max_bytes = max_bytes  # the daemon's server.max_request_bytes

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
            # NaN, Infinity and a number too big for a float are not JSON (the daemon refuses
            # them too): an id of 1e400 could not even be answered.
            decoded = json.loads(body, parse_constant=_not_json, parse_float=_finite)
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
        if len(messages) > self.auth.limiter.burst:
            return JSONResponse(_error(None, -32600, "Invalid Request", f"a batch of "
                                       f"{len(messages)} requests is over the token's burst "
                                       f"of {self.auth.limiter.burst:g} (gateway.rate_burst); "
                                       "send fewer at once")), "batch"
        if len(messages) > 1:
            self.auth.charge(identity, len(messages) - 1)
        label = (messages[0].get("method") if not batch and isinstance(messages[0], dict)
                 else "batch")
        # Only known method names become metric labels: a client must not be able to grow
        # the metrics with made-up names.
        label = label if label == "batch" or (isinstance(label, str) and known(label)) else "other"
        try:
            if not batch and identity.project is None:
                forward, _local, note = judge(decoded, identity)
                payload = json.dumps(forward, separators=(",", ":"),
                                     ensure_ascii=False).encode("utf-8")
                if (forward is not None and not note and "id" in forward
                        and (self.max_bytes is None or len(payload) <= self.max_bytes)):
                    # One request whose answer needs nothing added: the daemon's bytes as
                    # they are, without decoding and encoding them again.
                    line = await self.link.exchange_bytes(payload,
                                                          timeout_for([forward["method"]]))
                    return Response((line or b"").rstrip(b"\n"),
                                    media_type="application/json"), label
            out = await answer(messages, identity, self.link, self.max_bytes)
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
