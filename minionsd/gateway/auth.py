"""Who is asking: the bearer token of a request, checked with the TokenVerifier, and the
per-token rate limit (a token bucket: `rate_per_s` sustained, `rate_burst` at once).

`Authenticator.identify(headers)` returns the Identity or raises HttpRefusal: 401 with
`WWW-Authenticate: Bearer error="invalid_token"` for a missing, unknown, revoked or expired
token, 429 with `Retry-After` over the rate, 503 when the daemon cannot be asked. The
token itself never reaches a message, a log line or a metric label.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import Any

from minionsd.gateway.identity import Identity
from minionsd.gateway.tokens import TokenVerifier
from minionsd.rpc.client import DaemonUnavailable, RpcError

CHALLENGE = 'Bearer error="invalid_token"'
_WHY = {"missing": "no bearer token: send Authorization: Bearer <token>",
        "malformed": "the bearer token is not a minionsd token (mnt_...)",
        "unknown": "the bearer token is not known to this minionsd",
        "revoked": "the bearer token was revoked",
        "expired": "the bearer token has expired",
        "agent_is_human": "the token's agent is now a human author; make a new token"}


class HttpRefusal(Exception):
    """An HTTP error answer: status, reason word, plain-words detail, extra headers."""

    def __init__(self, status: int, reason: str, detail: str,
                 headers: Mapping[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.reason = reason
        self.detail = detail
        self.headers = dict(headers or {})

    def body(self) -> dict[str, Any]:
        return {"error": {"status": self.status, "reason": self.reason, "detail": self.detail}}


def bearer(headers: Mapping[str, str]) -> str | None:
    value = headers.get("authorization", "")
    scheme, _, token = value.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


class RateLimiter:
    """Token buckets by key; state belongs to the gateway app."""

    def __init__(self, per_s: float, burst: int,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.per_s = per_s
        self.burst = float(burst)
        self._monotonic = monotonic
        self._buckets: dict[str, tuple[float, float]] = {}

    def blocked(self, key: str) -> float:
        """Like take, without spending: 0 when a request may go now."""
        level, at = self._buckets.get(key, (self.burst, self._monotonic()))
        level = min(self.burst, level + (self._monotonic() - at) * self.per_s)
        return 0.0 if level >= 1.0 else (1.0 - level) / self.per_s

    def take(self, key: str, cost: float = 1.0) -> float:
        """0 when `cost` requests may go now (and they are spent), else the seconds until
        they may."""
        now = self._monotonic()
        level, at = self._buckets.get(key, (self.burst, now))
        level = min(self.burst, level + (now - at) * self.per_s)
        if level >= cost:
            self._buckets[key] = (level - cost, now)
            return 0.0
        self._buckets[key] = (level, now)
        return (cost - level) / self.per_s


# Failed sign-ins per client address: a burst, then one a second. Guessing tokens from one
# address is refused with 429 before the daemon is asked.
FAILURES_PER_S = 1.0
FAILURE_BURST = 20


class Authenticator:
    def __init__(self, verifier: TokenVerifier, limiter: RateLimiter,
                 failures: RateLimiter | None = None) -> None:
        self.verifier = verifier
        self.limiter = limiter
        self.failures = failures or RateLimiter(FAILURES_PER_S, FAILURE_BURST)

    async def identify(self, headers: Mapping[str, str], *, count: bool = True,
                       client: str | None = None) -> Identity:
        """The token's identity. `client` (the peer address) throttles failed attempts."""
        if client is not None:
            wait = self.failures.blocked(client)
            token = bearer(headers)
            if wait > 0 and not (token and self.verifier.recently_valid(token)):
                raise HttpRefusal(429, "rate", "too many requests with bad tokens from this "
                                  "address; retry later",
                                  {"Retry-After": str(max(1, math.ceil(wait)))})
        try:
            return await self._identify(headers, count)
        except HttpRefusal as exc:
            if client is not None and exc.status == 401:
                self.failures.take(client)
            raise

    async def _identify(self, headers: Mapping[str, str], count: bool) -> Identity:
        token = bearer(headers)
        if token is None:
            raise HttpRefusal(401, "missing", _WHY["missing"], {"WWW-Authenticate": CHALLENGE})
        try:
            identity, reason = await self.verifier.check(token)
        except (DaemonUnavailable, TimeoutError, OSError, RpcError) as exc:
            raise HttpRefusal(503, "daemon_unreachable",
                              "the minionsd daemon behind this gateway is not reachable, so "
                              f"the token cannot be checked ({type(exc).__name__})") from None
        if identity is None:
            raise HttpRefusal(401, reason, _WHY.get(reason, _WHY["unknown"]),
                              {"WWW-Authenticate": CHALLENGE})
        if count:
            wait = self.limiter.take(identity.name)
            if wait > 0:
                raise HttpRefusal(429, "rate", f"token {identity.name!r} is over its rate of "
                                  f"{self.limiter.per_s:g} requests per second; retry later",
                                  {"Retry-After": str(max(1, math.ceil(wait)))})
        return identity


    def charge(self, identity: Identity, extra: int) -> None:
        """Spend `extra` more of the token's rate (the other requests of a batch: each
        request counts, however it is packed); 429 when they cannot be spent now."""
        wait = self.limiter.take(identity.name, float(extra))
        if wait > 0:
            raise HttpRefusal(429, "rate", f"token {identity.name!r} is over its rate of "
                              f"{self.limiter.per_s:g} requests per second (each request of "
                              "a batch counts); retry later",
                              {"Retry-After": str(max(1, math.ceil(wait)))})


def peer(request: Any) -> str | None:
    """The client's address as the server saw it (behind_proxy: uvicorn has already put
    X-Forwarded-For's address there)."""
    return request.client.host if request.client else None
