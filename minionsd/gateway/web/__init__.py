"""The web view (SPEC §5.3): server-rendered pages for the people who run minionsd, mounted by
the gateway at `/`. Each page has a `.json` twin with the same data; every POST needs the
session, its CSRF token and our own Origin; every response carries the CSP and headers of
guard.py. Templates and the stylesheet sit beside the code (templates/, static/); nothing is
loaded from another host.

By concern: view (who is asking, calling the daemon as them, answering), guard (session,
CSRF, Origin, headers), render (Jinja2 and Markdown), pages (GET), actions (POST and the
confirm pages), signin (/login, the one-time link, /logout), assets (the stylesheet and the
one script).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from minionsd.gateway.context import GatewayContext
from minionsd.gateway.web import guard
from minionsd.gateway.web.actions import Actions
from minionsd.gateway.web.assets import static_file
from minionsd.gateway.web.pages import Pages
from minionsd.gateway.web.signin import SignIn
from minionsd.gateway.web.view import Viewer, WebError, WebView, unavailable
from minionsd.rpc.client import DaemonUnavailable

PageHandler = Callable[[Request, Viewer], Awaitable[Response]]
PostHandler = Callable[[Request, Viewer, Any], Awaitable[Response]]


def _page(view: WebView, handler: PageHandler) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        viewer = None
        try:
            viewer = await view.viewer(request)
            if viewer is None:
                return view.sign_in_redirect(request)
            return await handler(request, viewer)
        except WebError as exc:
            return view.error(request, viewer, exc)
        except DaemonUnavailable as exc:
            return view.error(request, viewer, unavailable(exc))
    return endpoint


def _post(view: WebView, handler: PostHandler) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        viewer = None
        try:
            problem = guard.origin_problem(request, view.allowed_origins)
            if problem:
                raise WebError(403, "Refused", problem)
            viewer = await view.viewer(request)
            if viewer is None:
                raise WebError(403, "Refused", "sign in first: this form needs a session")
            form = await request.form()
            if not guard.csrf_matches(viewer.csrf, form.get("csrf")):
                raise WebError(403, "Refused", "the form's CSRF token is missing or wrong; "
                               "reload the page and try again")
            return await handler(request, viewer, form)
        except WebError as exc:
            return view.error(request, viewer, exc)
        except DaemonUnavailable as exc:
            return view.error(request, viewer, unavailable(exc))
    return endpoint


def _plain(view: WebView, handler: Callable[[Request], Awaitable[Response]], *,
           post: bool = False) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        try:
            if post:
                problem = guard.origin_problem(request, view.allowed_origins)
                if problem:
                    raise WebError(403, "Refused", problem)
            return await handler(request)
        except WebError as exc:
            return view.error(request, None, exc)
        except DaemonUnavailable as exc:
            return view.error(request, None, unavailable(exc))
    return endpoint


def build_routes(view: WebView) -> list[BaseRoute]:
    pages, actions, signin = Pages(view), Actions(view), SignIn(view)
    routes: list[BaseRoute] = [
        Route("/login", _plain(view, signin.login_page), methods=["GET"]),
        Route("/login", _plain(view, signin.login, post=True), methods=["POST"]),
        Route("/logout", _post(view, signin.logout), methods=["POST"]),
        Route("/static/{name}", static_file, methods=["GET"]),
    ]
    for path, handler in (
        ("/", pages.overview), ("/index.json", pages.overview), ("/.json", pages.overview),
        ("/inbox", pages.inbox), ("/inbox.json", pages.inbox),
        ("/records", pages.records), ("/records.json", pages.records),
        ("/records/{id}", pages.record),
        ("/records/{id}/{action}", actions.confirm),
        ("/knowledge", pages.knowledge), ("/knowledge.json", pages.knowledge),
        ("/knowledge/{category}/{name}", pages.knowledge_entry),
        ("/digest", pages.digest), ("/digest.json", pages.digest),
        ("/archive/{name}", pages.archived),
        ("/agents", pages.agents), ("/agents.json", pages.agents),
        ("/agents/{id}", pages.agent),
        ("/try", pages.try_task), ("/try.json", pages.try_task),
        ("/pinned", pages.pinned), ("/pinned.json", pages.pinned),
    ):
        routes.append(Route(path, _page(view, handler), methods=["GET"]))
    for path, post in (
        ("/consolidate", actions.consolidate), ("/inbox/hold", actions.hold),
        ("/inbox/requeue", actions.requeue), ("/pinned", actions.save_pinned),
        ("/records/{id}/{action}", actions.record_action),
    ):
        routes.append(Route(path, _post(view, post), methods=["POST"]))
    return routes


def routes(ctx: GatewayContext) -> list[BaseRoute]:
    """The view's routes on the gateway's context: its scope-checked call, its daemon link
    (for the socket-only web.* sign-in methods) and its settings."""
    settings = ctx.settings
    origins = tuple(settings.allowed_origins) + ((settings.public_url,)
                                                  if settings.public_url else ())
    view = WebView(call_as=ctx.call, daemon=ctx.link.call,
                   session_hours=float(settings.session_hours), allowed_origins=origins)
    return build_routes(view)
