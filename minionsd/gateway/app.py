"""The gateway's ASGI application: `build_app(settings)` wires the daemon link, the token
verifier, the rate limiter and the metrics into /rpc, /mcp, /healthz and /metrics, mounts the
web view (minionsd.gateway.web, when it is installed) at `/`, and puts the Guard (Host,
Origin, query-string token, size, slow body) in front of all of them.

Every endpoint but /healthz needs a bearer token. No OAuth discovery is published: anything
under /.well-known/ is 404, so MCP clients send the configured header instead of starting an
OAuth flow.
"""

from __future__ import annotations

import contextlib
import importlib
import math
import re
import time
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qs

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import Receive, Scope, Send

from minionsd.gateway.auth import Authenticator, HttpRefusal, RateLimiter, peer
from minionsd.gateway.context import GatewayContext
from minionsd.gateway.daemon_link import DaemonLink, GatewayCaller
from minionsd.gateway.guard import Guard, send_refusal
from minionsd.gateway.mcp_http import Caller, McpEndpoint
from minionsd.gateway.metrics import CONTENT_TYPE, GatewayMetrics
from minionsd.gateway.rpc_http import RpcEndpoint
from minionsd.gateway.settings import GatewaySettings
from minionsd.gateway.tokens import TokenVerifier
from minionsd.rpc.client import DaemonUnavailable, RpcError, socket_for_home

HEALTH_TTL_S = 1.0
HEALTH_TIMEOUT_S = 5.0
_PROJECT_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")
# /.well-known/* is 404 whatever the method (never 405): no OAuth metadata to find.
ANY_METHOD = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def build_context(settings: GatewaySettings) -> GatewayContext:
    home = settings.home
    link = DaemonLink(settings.socket, locate=(lambda: socket_for_home(home))
                      if settings.follow_home and home is not None else None)
    verifier = TokenVerifier(link)
    caller = GatewayCaller(link)
    return GatewayContext(settings=settings, call=caller.call, verifier=verifier,
                          auth=Authenticator(verifier, RateLimiter(settings.rate_per_s,
                                                                   settings.rate_burst)),
                          link=link, metrics=GatewayMetrics())


class McpRoute:
    """/mcp as an ASGI app: authenticate, settle the project, hand over to the SDK."""

    def __init__(self, ctx: GatewayContext, endpoint: McpEndpoint) -> None:
        self.ctx = ctx
        self.endpoint = endpoint

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        status = 500

        async def watched(message: Any) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            request = Request(scope)
            try:
                identity = await self.ctx.auth.identify(request.headers, client=peer(request))
            except HttpRefusal as exc:
                self.ctx.metrics.refuse(exc.reason)
                await send_refusal(watched, exc.status, exc.reason, exc.detail, exc.headers)
                return
            if scope.get("method") == "GET":
                # Stateless: the server never sends a message of its own, so there is no
                # stream to open (MCP allows 405 here; an open one would only hold the
                # connection until the read timeout cut it).
                await send_refusal(watched, 405, "method", "GET /mcp opens no stream on this "
                                   "stateless server; POST requests to /mcp",
                                   {"Allow": "POST"})
                return
            project = identity.project
            if project is None:
                asked = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("project")
                if asked:
                    if not _PROJECT_RE.fullmatch(asked[0]):
                        await send_refusal(watched, 400, "project", "?project= must be a "
                                           "project name (letters, digits, '.', '_', '-')")
                        return
                    project = asked[0]
            await self.endpoint.handle(scope, receive, watched, Caller(identity, project))
        finally:
            self.ctx.metrics.observe("mcp", scope.get("method", "-"), status,
                                     time.perf_counter() - started)


class HealthCache:
    """/healthz needs no token, so anyone can call it: the daemon is asked at most once a
    second however often it is called."""

    def __init__(self, ctx: GatewayContext, ttl_s: float = HEALTH_TTL_S) -> None:
        self.ctx = ctx
        self.ttl_s = ttl_s
        self._at = -math.inf
        self._last: tuple[dict[str, Any], int] = ({"ok": False}, 503)

    async def answer(self) -> tuple[dict[str, Any], int]:
        now = time.monotonic()
        if now - self._at < self.ttl_s:
            return self._last
        try:
            await self.ctx.link.call("status", timeout=HEALTH_TIMEOUT_S)
            self._last = ({"ok": True}, 200)
        except (DaemonUnavailable, RpcError, TimeoutError, OSError, ValueError) as exc:
            self._last = ({"ok": False, "reason": "the daemon does not answer: "
                           f"{type(exc).__name__}: {exc}"}, 503)
        self._at = time.monotonic()
        return self._last


def web_routes(ctx: GatewayContext) -> list[BaseRoute]:
    """The web view's routes (h22's minionsd.gateway.web), or none when it is not there."""
    try:
        web = importlib.import_module("minionsd.gateway.web")
    except ModuleNotFoundError as exc:
        if exc.name not in ("minionsd.gateway.web",):
            raise
        return []
    return list(web.routes(ctx))


def build_app(settings: GatewaySettings, ctx: GatewayContext | None = None) -> Starlette:
    ctx = ctx or build_context(settings)
    mcp = McpEndpoint(GatewayCaller(ctx.link))
    rpc = RpcEndpoint(ctx.auth, ctx.link, ctx.metrics, ctx.settings.max_request_bytes)
    mcp_route = McpRoute(ctx, mcp)

    health = HealthCache(ctx)

    async def healthz(_request: Request) -> Response:
        body, status = await health.answer()
        return JSONResponse(body, status)

    async def metrics(request: Request) -> Response:
        try:
            await ctx.auth.identify(request.headers, client=peer(request))
        except HttpRefusal as exc:
            ctx.metrics.refuse(exc.reason)
            return JSONResponse(exc.body(), exc.status, headers=exc.headers)
        try:
            status: dict[str, Any] | None = await ctx.link.call("status")
        except (DaemonUnavailable, RpcError, TimeoutError, OSError, ValueError):
            status = None
        return Response(ctx.metrics.render(status), media_type=CONTENT_TYPE)

    async def well_known(_request: Request) -> Response:
        return JSONResponse({"error": {"status": 404, "reason": "not_found", "detail":
                                       "this gateway publishes no OAuth metadata: send "
                                       "Authorization: Bearer <token>"}}, 404)

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        async with mcp.manager.run():
            try:
                yield
            finally:
                await ctx.link.close()

    routes: list[BaseRoute] = [
        Route("/rpc", rpc.handle, methods=["POST"]),
        Route("/mcp", mcp_route, methods=["GET", "POST", "DELETE"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
        Route("/.well-known/{rest:path}", well_known, methods=list(ANY_METHOD)),
        *web_routes(ctx),
    ]
    app = Starlette(routes=routes, lifespan=lifespan,
                    middleware=[Middleware(Guard, settings=ctx.settings, metrics=ctx.metrics)])
    app.state.ctx = ctx
    return app
