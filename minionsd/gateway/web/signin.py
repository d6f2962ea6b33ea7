"""Signing in and out (SPEC §5.3): a token typed at /login, or the one-time link `minionsctl
web` prints (/login?code=…, valid 5 minutes, for one use). Either becomes a session cookie;
the token itself never goes into a cookie, a URL or a page.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from minionsd.gateway.web import guard
from minionsd.gateway.web.view import Viewer, WebView

REASONS = {
    "unknown": "That token is not known to this minionsd.",
    "malformed": "That is not a minionsd token (they start with mnt_ and have 47 characters).",
    "revoked": "That token was revoked.",
    "expired": "That token has expired.",
    "agent_is_human": "That token's agent is a human author, which tokens may not be.",
    "no_read_scope": "That token has no read scope.",
    "project_bound": "That token is bound to one project, and the web view shows the whole "
                     "home; sign in with a token that is not bound to a project.",
    "used_or_expired": "That sign-in link was already used or is more than 5 minutes old. "
                       "Run `minionsctl web` again for a new one.",
}


def safe_next(value: Any) -> str:
    """Where to go after signing in: a path on this site only."""
    if isinstance(value, str) and value.startswith("/") and not value.startswith("//") \
            and "\\" not in value and len(value) < 2000:
        return value
    return "/"


class SignIn:
    def __init__(self, view: WebView) -> None:
        self.view = view

    def _form(self, request: Request, *, error: str | None = None, status: int = 200,
              next_path: str = "/") -> Response:
        secret = request.cookies.get(guard.LOGIN_COOKIE) or guard.new_login_secret()
        data = {"error": error, "next": next_path}
        response = self.view.page(request, None, "login.html", data, status=status,
                                  extra={"login_csrf": guard.csrf_for(secret)})
        guard.set_cookie(response, request, guard.LOGIN_COOKIE, secret, 3600)
        return response

    def _signed_in(self, request: Request, answer: dict[str, Any], next_path: str) -> Response:
        response = self.view.redirect(safe_next(next_path))
        guard.set_cookie(response, request, guard.SESSION_COOKIE, answer["session"],
                         int(self.view.session_hours * 3600))
        guard.clear_cookie(response, request, guard.LOGIN_COOKIE)
        return response

    async def login_page(self, request: Request) -> Response:
        next_path = safe_next(request.query_params.get("next"))
        code = request.query_params.get("code")
        if code:
            answer = await self.view.daemon(
                "web.link_redeem", {"code": code, "hours": self.view.session_hours})
            if answer.get("valid"):
                return self._signed_in(request, answer, next_path)
            return self._form(request, error=REASONS.get(answer.get("reason"), "Not valid."),
                              status=401, next_path=next_path)
        return self._form(request, next_path=next_path)

    async def login(self, request: Request) -> Response:
        form = await request.form()
        next_path = safe_next(form.get("next"))
        secret = request.cookies.get(guard.LOGIN_COOKIE)
        if not guard.csrf_matches(guard.csrf_for(secret) if secret else None,
                                  form.get("csrf")):
            return self._form(request, error="The sign-in form had expired; please try "
                              "again.", status=403, next_path=next_path)
        token = form.get("token")
        token = token.strip() if isinstance(token, str) else ""
        answer = await self.view.daemon(
            "web.session_create", {"token": token, "hours": self.view.session_hours})
        if not answer.get("valid"):
            return self._form(request, error=REASONS.get(answer.get("reason"), "Not valid."),
                              status=401, next_path=next_path)
        return self._signed_in(request, answer, next_path)

    async def logout(self, request: Request, viewer: Viewer, form: Any) -> Response:
        await self.view.daemon("web.session_end", {"session": viewer.secret})
        self.view.sessions.forget(viewer.secret)
        response = self.view.redirect("/login", "signed-out")
        guard.clear_cookie(response, request, guard.SESSION_COOKIE)
        return response
