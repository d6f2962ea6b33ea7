"""Checks every HTTP request passes before any endpoint sees it (SPEC §5.2, browser and
network safety), as one ASGI middleware:

* `Host` must be the listen host, `public_url`'s host or in `allowed_hosts` (421), against
  DNS rebinding;
* an `Origin`, when sent, must be `public_url`'s own or in `allowed_origins` (403);
* a token in the query string is refused (400): URLs end up in logs and browser history;
* a body over `server.max_request_bytes` is 413, by its Content-Length or as it arrives;
* a body that arrives too slowly is cut off (408) once `read_timeout_s` has passed since the
  request began (the server cuts off slow headers, serve.py).

Refusals are JSON `{"error": {status, reason, detail}}` and are counted in the metrics.
"""

from __future__ import annotations

import json
import time
from urllib.parse import parse_qsl

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from minionsd.gateway.metrics import GatewayMetrics
from minionsd.gateway.settings import GatewaySettings, host_only

_TOKEN_PARAMS = frozenset({"token", "access_token", "bearer", "auth", "authorization", "key",
                           "api_key"})


# An oversized body up to this many times server.max_request_bytes is read (and dropped)
# before the 413, so the client sees the answer.
DRAIN_FACTOR = 4


class BodyTooLarge(Exception):
    pass


class BodyTooSlow(Exception):
    pass


async def send_refusal(send: Send, status: int, reason: str, detail: str,
                       headers: dict[str, str] | None = None) -> None:
    body = json.dumps({"error": {"status": status, "reason": reason, "detail": detail}}).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
           (b"cache-control", b"no-store")]
    raw += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return value.decode("latin-1")
    return None


def query_holds_token(query: str) -> bool:
    if "mnt_" in query:
        return True
    # Keys and values as the server decodes them: `%6Dnt_...` is a token too.
    return any(key.lower() in _TOKEN_PARAMS or "mnt_" in key or "mnt_" in value
               for key, value in parse_qsl(query, keep_blank_values=True))


class Guard:
    def __init__(self, app: ASGIApp, settings: GatewaySettings, metrics: GatewayMetrics) -> None:
        self.app = app
        self.settings = settings
        self.metrics = metrics
        self.hosts = settings.accepted_hosts()
        self.origins = settings.accepted_origins()

    def problem(self, scope: Scope) -> tuple[int, str, str] | None:
        host = _header(scope, b"host")
        if host is None or host_only(host) not in self.hosts:
            return (421, "host", f"Host {host!r} is not one this gateway serves; add it to "
                    "gateway.allowed_hosts if it should be")
        # Every Origin header sent must be accepted, not only the first.
        for key, value in scope["headers"]:
            origin = value.decode("latin-1")
            if key == b"origin" and origin.rstrip("/").lower() not in self.origins:
                return (403, "origin", f"Origin {origin!r} may not call this gateway; add it "
                        "to gateway.allowed_origins if it should")
        if query_holds_token(scope.get("query_string", b"").decode("latin-1")):
            return (400, "query_token", "a token in the URL is refused (URLs are logged and "
                    "kept in histories); send it as Authorization: Bearer <token>")
        length = _header(scope, b"content-length")
        if length is not None and (not length.isdigit()
                                   or int(length) > self.settings.max_request_bytes):
            return (413, "size", f"the request body is over {self.settings.max_request_bytes} "
                    "bytes (server.max_request_bytes)")
        return None

    async def _drain(self, scope: Scope, receive: Receive) -> None:
        """Read and drop an oversized body, when it is at most DRAIN_FACTOR times the limit
        and arrives in time, before answering 413: a client still sending when the server
        answers and closes sees a reset, not the answer. A bigger body is not read at all."""
        length = _header(scope, b"content-length") or ""
        if not length.isdigit() or int(length) > DRAIN_FACTOR * self.settings.max_request_bytes:
            return
        with anyio.move_on_after(self.settings.read_timeout_s):
            while True:
                message = await receive()
                if message["type"] != "http.request" or not message.get("more_body"):
                    return

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        found = self.problem(scope)
        if found is not None:
            status, reason, detail = found
            self.metrics.refuse(reason)
            if status == 413:
                await self._drain(scope, receive)
            await send_refusal(send, status, reason, detail)
            return
        limit = self.settings.max_request_bytes
        deadline = time.monotonic() + self.settings.read_timeout_s
        seen = 0
        started = False

        async def bounded_receive() -> Message:
            nonlocal seen
            left = deadline - time.monotonic()
            try:
                with anyio.fail_after(max(left, 0.001)):
                    message = await receive()
            except TimeoutError:
                raise BodyTooSlow from None
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise BodyTooLarge
            return message

        async def watched_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, bounded_receive, watched_send)
        except Exception as exc:
            kind = _body_problem(exc)
            if kind is None:
                raise
            self.metrics.refuse("size" if kind is BodyTooLarge else "slow")
            if started:
                return
            if kind is BodyTooLarge:
                await send_refusal(send, 413, "size", f"the request body is over {limit} bytes "
                                   "(server.max_request_bytes)")
            else:
                await send_refusal(send, 408, "slow", "the request body did not arrive within "
                                   f"{self.settings.read_timeout_s:g} s",
                                   {"Connection": "close"})


def _body_problem(exc: BaseException) -> type[Exception] | None:
    """BodyTooLarge or BodyTooSlow when `exc` is one, or an exception group holding one (the
    MCP transport reads the body inside a task group)."""
    if isinstance(exc, BodyTooLarge | BodyTooSlow):
        return type(exc)
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = _body_problem(inner)
            if found is not None:
                return found
    return None
