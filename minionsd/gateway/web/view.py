"""The web view's shared machinery: who is asking, calling the daemon as them, and answering
with a page or its `.json` twin (same data), an error page that says what went wrong, or a
redirect to sign-in.

`WebView` owns the template environment and the session cache; the handlers in pages.py,
actions.py and signin.py receive it. Its `call` is the gateway's scope-checked call, so what
a page offers and what the server does follow the session token's scopes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from minionsd.gateway.identity import Identity
from minionsd.gateway.web import guard
from minionsd.gateway.web.render import build_environment
from minionsd.rpc.client import DaemonUnavailable, RpcError

# Messages a finished action can show (chosen by code, so a link cannot put words on a page).
DONE = {
    "consolidated": "Consolidation ran.",
    "held": "The note is held: consolidation leaves it in the inbox.",
    "released": "The note is released: the next batch may take it.",
    "requeued": "The file is back in the inbox.",
    "retracted": "The record is retracted: no agent will recall it.",
    "superseded": "The record is superseded.",
    "pinned": "The record is pinned.",
    "expired": "The record is expired: no agent will recall it.",
    "pinned-saved": "pinned.md is saved.",
    "signed-out": "You are signed out.",
}
NAV = (("/", "Overview"), ("/inbox", "Inbox"), ("/records", "Records"),
       ("/knowledge", "Knowledge"), ("/digest", "Digest"), ("/agents", "Agents"),
       ("/try", "Try a task"), ("/pinned", "Pinned"))


class WebError(Exception):
    """A page that cannot be shown: HTTP status, a title and a plain sentence."""

    def __init__(self, status: int, title: str, detail: str) -> None:
        super().__init__(detail)
        self.status, self.title, self.detail = status, title, detail


@dataclass
class Viewer:
    identity: Identity
    secret: str

    @property
    def csrf(self) -> str:
        return guard.csrf_for(self.secret)

    def can(self, scope: str) -> bool:
        return scope in self.identity.scopes


@dataclass
class WebView:
    call_as: Callable[[str, dict[str, Any], Identity], Awaitable[Any]]
    daemon: Callable[[str, dict[str, Any]], Awaitable[Any]]
    session_hours: float = 12.0
    allowed_origins: Iterable[str] = ()
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))

    def __post_init__(self) -> None:
        self.env = build_environment()
        self.sessions = guard.SessionCache(
            lambda secret: self.daemon("web.session_verify", {"session": secret}))

    # --- who ------------------------------------------------------------------------------

    async def viewer(self, request: Request) -> Viewer | None:
        secret = request.cookies.get(guard.SESSION_COOKIE)
        if not secret:
            return None
        answer = await self.sessions.check(secret)
        if not answer.get("valid"):
            return None
        return Viewer(Identity.from_verify(answer), secret)

    async def call(self, viewer: Viewer, method: str, params: dict[str, Any] | None = None,
                   *, identity: Identity | None = None) -> Any:
        try:
            return await self.call_as(method, params or {}, identity or viewer.identity)
        except RpcError as exc:
            raise rpc_to_web(exc) from None

    # --- answers ----------------------------------------------------------------------------

    def page(self, request: Request, viewer: Viewer | None, template: str,
             data: dict[str, Any], *, status: int = 200, extra: dict[str, Any] | None = None
             ) -> Response:
        if wants_json(request):
            return guard.secure_headers(JSONResponse(data, status_code=status))
        done = request.query_params.get("done")
        context = {
            "data": data, "viewer": viewer, "nav": NAV, "path": request.url.path,
            "done": DONE.get(done or ""), "now": self.clock(),
            "json_url": json_url(request),
        } | (extra or {})
        html = self.env.get_template(template).render(context)
        return guard.secure_headers(HTMLResponse(html, status_code=status))

    def error(self, request: Request, viewer: Viewer | None, exc: WebError) -> Response:
        data = {"error": {"status": exc.status, "title": exc.title, "detail": exc.detail}}
        return self.page(request, viewer, "error.html", data, status=exc.status)

    def sign_in_redirect(self, request: Request) -> Response:
        if wants_json(request):
            return guard.secure_headers(JSONResponse(
                {"error": {"status": 401, "title": "Not signed in",
                           "detail": "sign in at /login with a token first"}},
                status_code=401))
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        return guard.secure_headers(
            RedirectResponse(f"/login?next={quote(target, safe='')}", status_code=303))

    def redirect(self, to: str, done: str | None = None) -> Response:
        if done:
            to += ("&" if "?" in to else "?") + f"done={done}"
        return guard.secure_headers(RedirectResponse(to, status_code=303))


def wants_json(request: Request) -> bool:
    if request.url.path.endswith(".json"):
        return True
    accept = request.headers.get("accept", "")
    return accept.split(",")[0].strip().startswith("application/json")


def json_url(request: Request) -> str:
    path = request.url.path
    base = "/index" if path == "/" else path.rstrip("/")
    return base + ".json" + (f"?{request.url.query}" if request.url.query else "")


def strip_json(value: str) -> str:
    return value[:-5] if value.endswith(".json") else value


def rpc_to_web(exc: RpcError) -> WebError:
    detail = exc.detail if hasattr(exc, "detail") and exc.detail else str(exc)
    if exc.code == -32001:
        return WebError(404, "Not found", detail)
    if exc.code == -32004:
        return WebError(403, "Not allowed", f"your sign-in token cannot do this: {detail}")
    if exc.code == -32602:
        return WebError(400, "That did not work", detail)
    if exc.code in (-32002, -32003):
        return WebError(409, "That did not work", detail)
    return WebError(502, "The daemon could not answer", detail)


def unavailable(exc: DaemonUnavailable) -> WebError:
    return WebError(503, "The daemon is not running",
                    f"{exc}. Start it with `minionsd` (or `systemctl --user start minionsd`) "
                    "and reload this page.")
