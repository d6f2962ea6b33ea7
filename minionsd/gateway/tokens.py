"""Bearer tokens on the gateway's side: is this token good, and whose is it?

`TokenVerifier.verify(token)` asks the daemon (`token.verify` on the socket) and remembers
the answer for at most CACHE_S seconds, so a revoked token stops working on every gateway
within that time, and a busy agent costs the daemon one verification every few seconds. The
cache is keyed by the token's SHA-256 digest, never by the token, and holds at most
CACHE_MAX entries. Unknown tokens are remembered too (briefly), so guessing costs the daemon
nothing more than the rate of distinct guesses.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable

from minionsd.clock import parse_iso, system_clock
from minionsd.gateway.daemon_link import DaemonLink
from minionsd.gateway.identity import Identity

CACHE_S = 5.0
CACHE_MAX = 4096
BAD_CACHE_S = 1.0
# A daemon that cannot check a token within this is treated as unreachable (503).
VERIFY_TIMEOUT_S = 10.0
# How long a token found valid stays exempt from its address's bad-token throttle.
GOOD_MEMORY_S = 24 * 3600.0


def fingerprint(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


class TokenVerifier:
    def __init__(self, link: DaemonLink, *, cache_s: float = CACHE_S,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.link = link
        self.cache_s = min(cache_s, CACHE_S)
        self._monotonic = monotonic
        self._cache: OrderedDict[str, tuple[float, Identity | None, str]] = OrderedDict()
        # Fingerprints of tokens this gateway found valid, and when: an address throttled for
        # bad tokens (a guesser behind a shared NAT or proxy) does not lock out agents whose
        # token is known good. They are still checked in full, revocation included.
        self._good: OrderedDict[str, float] = OrderedDict()

    def recently_valid(self, token: str) -> bool:
        seen = self._good.get(fingerprint(token))
        return seen is not None and self._monotonic() - seen < GOOD_MEMORY_S

    async def verify(self, token: str) -> Identity | None:
        """The token's identity, or None when it is missing, unknown, revoked or expired.
        DaemonUnavailable when the daemon cannot be asked (and nothing is cached)."""
        return (await self.check(token))[0]

    async def check(self, token: str) -> tuple[Identity | None, str]:
        """(identity or None, reason): reason is "ok" or why the token is no good."""
        key = fingerprint(token)
        now = self._monotonic()
        hit = self._cache.get(key)
        if hit is not None and hit[0] > now:
            return hit[1], hit[2]
        answer = await self.link.call("token.verify", {"token": token}, VERIFY_TIMEOUT_S)
        if answer.get("valid"):
            identity: Identity | None = Identity.from_verify(answer)
            reason, ttl = "ok", self.cache_s
            self._good[key] = now
            self._good.move_to_end(key)
            while len(self._good) > CACHE_MAX:
                self._good.popitem(last=False)
            if answer.get("expires_at"):
                left = (parse_iso(answer["expires_at"]) - system_clock()).total_seconds()
                ttl = max(0.0, min(ttl, left))
        else:
            identity, reason, ttl = None, str(answer.get("reason") or "unknown"), BAD_CACHE_S
        self._cache[key] = (now + ttl, identity, reason)
        self._cache.move_to_end(key)
        while len(self._cache) > CACHE_MAX:
            self._cache.popitem(last=False)
        return identity, reason
