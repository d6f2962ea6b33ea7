"""The web view's doors: who the session is, the CSRF token and Origin check every POST needs,
and the headers every response carries (SPEC §5.3).

* Session: an HttpOnly, SameSite=Strict cookie (Secure over HTTPS) holding a secret the daemon
  knows by digest (`web.session_verify`); answers are remembered for at most CACHE_S seconds,
  keyed by the secret's digest, so a signed-out session or a revoked token stops working on
  every gateway within that time.
* CSRF: the form token is an HMAC of the session secret, so a page of another site (which can
  read neither the cookie nor our pages) cannot make one; before sign-in, a random cookie and
  the same value in the form (double submit). Every POST must also come from our own origin:
  its `Origin` header, or where a browser sends none, `Sec-Fetch-Site: same-origin`.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

SESSION_COOKIE = "minions_session"
LOGIN_COOKIE = "minions_login"
CACHE_S = 5.0
CACHE_MAX = 1024
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}


def secure_headers(response: Response, *, cache: bool = False) -> Response:
    for name, value in HEADERS.items():
        response.headers[name] = value
    if not cache:
        response.headers["Cache-Control"] = "no-store"
    return response


def csrf_for(secret: str) -> str:
    """The form token that goes with a session (or pre-sign-in) secret."""
    return hmac.new(secret.encode("utf-8"), b"minions-web-csrf", hashlib.sha256).hexdigest()


def new_login_secret() -> str:
    return secrets.token_urlsafe(32)


def is_https(request: Request) -> bool:
    return request.url.scheme == "https"


def set_cookie(response: Response, request: Request, name: str, value: str,
               max_age: int) -> None:
    response.set_cookie(name, value, max_age=max_age, path="/", httponly=True,
                        samesite="strict", secure=is_https(request))


def clear_cookie(response: Response, request: Request, name: str) -> None:
    response.delete_cookie(name, path="/", httponly=True, samesite="strict",
                           secure=is_https(request))


def own_origin(request: Request) -> str:
    host = request.headers.get("host", "")
    return f"{request.url.scheme}://{host}"


def origin_problem(request: Request, allowed: Iterable[str]) -> str | None:
    """Why a POST does not come from our own pages, or None when it does."""
    origin = request.headers.get("origin")
    if origin is None:
        if request.headers.get("sec-fetch-site") == "same-origin":
            return None
        return "the request has no Origin header and is not marked same-origin"
    if origin == own_origin(request) or origin in set(allowed):
        return None
    return f"requests from {origin[:100]} are not accepted"


def csrf_matches(expected: str | None, given: Any) -> bool:
    return bool(expected) and isinstance(given, str) and hmac.compare_digest(
        expected.encode(), given.encode())


class SessionCache:
    """web.session_verify answers by digest of the session secret, for at most CACHE_S."""

    def __init__(self, verify: Callable[[str], Awaitable[dict[str, Any]]],
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self._verify = verify
        self._monotonic = monotonic
        self._cache: OrderedDict[str, tuple[float, dict[str, Any]]] = OrderedDict()

    async def check(self, secret: str) -> dict[str, Any]:
        key = hashlib.sha256(secret.encode("utf-8", "replace")).hexdigest()
        now = self._monotonic()
        hit = self._cache.get(key)
        if hit is not None and hit[0] > now:
            return hit[1]
        answer = await self._verify(secret)
        self._cache[key] = (now + (CACHE_S if answer.get("valid") else 1.0), answer)
        self._cache.move_to_end(key)
        while len(self._cache) > CACHE_MAX:
            self._cache.popitem(last=False)
        return answer

    def forget(self, secret: str) -> None:
        self._cache.pop(hashlib.sha256(secret.encode("utf-8", "replace")).hexdigest(), None)
