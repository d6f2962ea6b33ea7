"""The web view's sign-in (SPEC §5.3): sessions made from a gateway token, and the one-time
links `minionsctl web` prints. Socket only, like the token methods: a gateway asks, a browser
never can.

* `web.session_create {token, hours}`: a person typed a token at /login; the answer is a new
  session secret (the browser's cookie), good for `hours` and only while its token is.
* `web.link_create {}`: a one-time sign-in code for a local admin token (made once, named
  `web-local`, for agent `web`, when none is usable), valid LINK_MINUTES, for one use.
* `web.link_redeem {code, hours}`: the code's one use, answered with a session secret.
* `web.session_verify {session}`: the session's identity, in token.verify's shape.
* `web.session_end {session}`: sign out.

Only SHA-256 digests of secrets are stored. A session is checked against its token each time
it is verified, so revoking the token ends the session within the gateway's cache time.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from datetime import timedelta
from typing import Any

from minionsd.clock import parse_iso
from minionsd.errors import InvalidParams
from minionsd.memory import tokens
from minionsd.memory.app import Surface
from minionsd.storage import tokens as token_store
from minionsd.storage import web_sessions as store

LINK_MINUTES = 5
MAX_HOURS = 24 * 30
LOCAL_TOKEN = "web-local"
LOCAL_AGENT = "web"
_SECRET_RE = re.compile(r"[A-Za-z0-9_-]{43}")
_TOKEN_RE = re.compile(r"mnt_[A-Za-z0-9_-]{43}")


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def _hours(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not 0 < value <= MAX_HOURS:
        raise InvalidParams(f"'hours' must be a number of hours above 0 and at most "
                            f"{MAX_HOURS}", param="hours")
    return float(value)


def _scopes(value: Any) -> list[str]:
    if isinstance(value, str):
        return [s for s in value.split(",") if s]
    return list(value or [])


def judge_token(row: dict[str, Any] | None, human_authors: frozenset[str],
                now: Any) -> dict[str, Any]:
    """Whether a token row may sign in: token.verify's rules (tokens.judge), then the view's
    own: read scope, and no project binding (the view shows the whole home: digest,
    quarantine, every agent's retrievals, which a project cannot bound)."""
    answer = tokens.judge(row, human_authors, now)
    if not answer["valid"]:
        return answer
    scopes = _scopes(answer["scopes"])
    if "read" not in scopes:
        return {"valid": False, "reason": "no_read_scope"}
    if answer.get("project"):
        return {"valid": False, "reason": "project_bound"}
    return answer | {"scopes": scopes}


def make_local_token(conn: Any, name: str, human_authors: frozenset[str], now: Any) -> None:
    """The admin token one-time links sign in with; its secret is thrown away at once (the
    sessions refer to it by name), so it can be used through a link only."""
    fields = tokens.check_new({"name": name, "agent": LOCAL_AGENT, "scopes": ["admin"]},
                              human_authors, now)
    token_store.insert(conn, fields, tokens.digest(tokens.new_token()))


class WebSessionSurface(Surface):
    """The web.* methods."""

    def _new_session(self, conn: Any, token_name: str, hours: float, now: Any) -> dict[str, Any]:
        secret = secrets.token_urlsafe(32)
        expires = now + timedelta(hours=hours)
        store.insert(conn, digest(secret), "session", token_name, now, expires)
        store.prune(conn, now)
        return {"session": secret, "expires_at": expires.isoformat().replace("+00:00", "Z")}

    def methods(self) -> dict[str, Any]:
        app = self.app

        async def session_create(token: Any, hours: Any) -> dict[str, Any]:
            hours = _hours(hours)
            if not isinstance(token, str) or not _TOKEN_RE.fullmatch(token):
                return {"valid": False, "reason": "malformed"}
            now = app.now()

            def create(conn: Any) -> dict[str, Any]:
                answer = judge_token(store.token_by_digest(conn, digest(token)),
                                     app.human_authors(), now)
                if not answer["valid"]:
                    return answer
                return answer | self._new_session(conn, answer["name"], hours, now)

            return await app.db.write(create)

        async def link_create() -> dict[str, Any]:
            now = app.now()

            def create(conn: Any) -> dict[str, Any]:
                name = store.usable_admin_token(conn, LOCAL_AGENT, now)
                if name is None:
                    name = LOCAL_TOKEN
                    taken = store.token_by_name(conn, name)
                    n = 2
                    while taken is not None:
                        name = f"{LOCAL_TOKEN}-{n}"
                        taken = store.token_by_name(conn, name)
                        n += 1
                    make_local_token(conn, name, app.human_authors(), now)
                code = secrets.token_urlsafe(32)
                expires = now + timedelta(minutes=LINK_MINUTES)
                store.insert(conn, digest(code), "link", name, now, expires)
                return {"code": code, "token_name": name,
                        "expires_at": expires.isoformat().replace("+00:00", "Z")}

            return await app.db.write(create)

        async def link_redeem(code: Any, hours: Any) -> dict[str, Any]:
            hours = _hours(hours)
            if not isinstance(code, str) or not _SECRET_RE.fullmatch(code):
                return {"valid": False, "reason": "malformed"}
            now = app.now()

            def redeem(conn: Any) -> dict[str, Any]:
                link = store.use_link(conn, digest(code), now)
                if link is None:
                    return {"valid": False, "reason": "used_or_expired"}
                answer = judge_token(store.token_by_name(conn, link["token_name"]),
                                     app.human_authors(), now)
                if not answer["valid"]:
                    return answer
                return answer | self._new_session(conn, answer["name"], hours, now)

            return await app.db.write(redeem)

        async def session_verify(session: Any) -> dict[str, Any]:
            if not isinstance(session, str) or not _SECRET_RE.fullmatch(session):
                return {"valid": False, "reason": "malformed"}
            now = app.now()

            def verify(conn: Any) -> dict[str, Any]:
                row = store.fetch(conn, digest(session), "session")
                if row is None:
                    return {"valid": False, "reason": "unknown"}
                if parse_iso(row["expires_at"]) <= now:
                    return {"valid": False, "reason": "expired"}
                answer = judge_token(store.token_by_name(conn, row["token_name"]),
                                     app.human_authors(), now)
                return answer | ({"session_expires_at": row["expires_at"]}
                                 if answer["valid"] else {})

            return await app.db.read(verify)

        async def session_end(session: Any) -> dict[str, Any]:
            if not isinstance(session, str) or not _SECRET_RE.fullmatch(session):
                return {"ended": False}
            return {"ended": bool(await app.db.write(store.delete, digest(session)))}

        return {"web.session_create": session_create, "web.link_create": link_create,
                "web.link_redeem": link_redeem, "web.session_verify": session_verify,
                "web.session_end": session_end}
