"""The gateway's bearer tokens: token.create, token.list, token.revoke and token.verify.

These methods exist on the socket only (the gateway refuses to forward them, SPEC §5.2). A
token is `mnt_` and 43 URL-safe characters (32 random bytes), shown once by token.create;
state.db keeps its SHA-256 digest. token.verify is what a gateway asks for each token it has
not seen within the last few seconds: it answers the token's identity, or why it is no good,
and notes when it was last used. A token is never written to a log line or an error.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from datetime import datetime, timedelta
from typing import Any

import structlog

from minionsd.clock import iso, parse_iso
from minionsd.errors import InvalidParams
from minionsd.memory.app import Surface
from minionsd.storage import tokens as store

log = structlog.get_logger()

PREFIX = "mnt_"
SCOPES = ("read", "write", "admin")
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_TOKEN_RE = re.compile(r"mnt_[A-Za-z0-9_-]{43}")
# last_used is written at most this often per token: a gateway's cache already limits
# verifications to one every few seconds, this keeps several gateways from adding more.
TOUCH_EVERY = timedelta(seconds=30)
RESERVED_AGENTS = frozenset({"engine", "system", "human"})


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_token() -> str:
    return PREFIX + secrets.token_urlsafe(32)


def _name(value: Any, param: str) -> str:
    if not isinstance(value, str) or not _NAME_RE.fullmatch(value):
        raise InvalidParams(f"'{param}' must be 1 to 64 letters, digits, '.', '_' or '-', "
                            "starting with a letter or digit", param=param)
    return value


def check_scopes(value: Any) -> list[str]:
    """Scopes as a list of read/write/admin; `write` implies `read`, `admin` implies both."""
    if isinstance(value, str):
        value = [s.strip() for s in value.split(",") if s.strip()]
    if not isinstance(value, list) or not value or not all(isinstance(s, str) for s in value):
        raise InvalidParams("'scopes' must name at least one of read, write, admin",
                            param="scopes")
    unknown = sorted(set(value) - set(SCOPES))
    if unknown:
        raise InvalidParams(f"'scopes': unknown scope {unknown[0]!r}; the scopes are read, "
                            "write and admin", param="scopes")
    top = max(SCOPES.index(s) for s in value)
    return list(SCOPES[: top + 1])


def check_new(params: dict[str, Any], human_authors: frozenset[str],
              now: datetime) -> dict[str, Any]:
    agent = _name(params.get("agent"), "agent")
    if agent in human_authors or agent in RESERVED_AGENTS:
        raise InvalidParams(f"'agent': {agent!r} is a human author or reserved name; what a "
                            "token writes gets agent trust, so give it an agent's id",
                            param="agent")
    project = params.get("project")
    scopes = check_scopes(params.get("scopes"))
    if project is not None:
        project = _name(project, "project")
        if "admin" in scopes:
            # Admin methods (config, pinned.md, consolidation, telemetry, backups) act on the
            # whole home; a project cannot bound them, so the pair would promise what it can't.
            raise InvalidParams("'scopes': admin acts on the whole home and cannot be bound to "
                                "a project; give a project-bound token read or read,write",
                                param="scopes")
    expires = params.get("expires_days")
    if expires is not None and (isinstance(expires, bool) or not isinstance(expires, int | float)
                                or not 0 < expires <= 3650):
        raise InvalidParams("'expires_days' must be a number of days more than 0 and at most 3650",
                            param="expires_days")
    return {"name": _name(params.get("name"), "name"), "agent": agent,
            "scopes": scopes, "project": project,
            "created_at": iso(now),
            "expires_at": iso(now + timedelta(days=expires)) if expires else None}


def judge(row: dict[str, Any] | None, human_authors: frozenset[str],
          now: datetime) -> dict[str, Any]:
    """token.verify's answer for a row found by digest (or None)."""
    if row is None:
        return {"valid": False, "reason": "unknown"}
    if row["revoked_at"]:
        return {"valid": False, "reason": "revoked"}
    if row["expires_at"] and parse_iso(row["expires_at"]) <= now:
        return {"valid": False, "reason": "expired"}
    if row["agent"] in human_authors:
        return {"valid": False, "reason": "agent_is_human"}
    return {"valid": True, "name": row["name"], "agent": row["agent"], "scopes": row["scopes"],
            "project": row["project"], "expires_at": row["expires_at"]}


def _touch(app: Any, name: str, now: datetime) -> None:
    """Note the token's last use without waiting for the write; a failure is logged (by the
    token's name) and changes nothing else."""
    def report(done: Any) -> None:
        if done.exception() is not None:
            log.warning("tokens.touch_failed", name=name, error=str(done.exception())[:300])

    try:
        app.db.write_unsynced_nowait(store.touch, name, now).add_done_callback(report)
    except RuntimeError as exc:  # the database closed during shutdown
        log.warning("tokens.touch_failed", name=name, error=str(exc)[:300])


class TokenSurface(Surface):
    def methods(self) -> dict[str, Any]:
        app = self.app

        async def token_create(name: Any, agent: Any, scopes: Any, project: Any = None,
                               expires_days: Any = None) -> dict[str, Any]:
            fields = check_new({"name": name, "agent": agent, "scopes": scopes,
                                "project": project, "expires_days": expires_days},
                               app.human_authors(), app.now())
            token = new_token()
            row = await app.db.write(store.insert, fields, digest(token))
            return row | {"token": token}

        async def token_list() -> dict[str, Any]:
            return {"tokens": await app.db.read(store.list_all)}

        async def token_revoke(name: Any) -> dict[str, Any]:
            return await app.db.write(store.revoke, _name(name, "name"), app.now())

        async def token_verify(token: Any) -> dict[str, Any]:
            # The token never goes into an error: a malformed one is just not valid.
            if not isinstance(token, str) or not _TOKEN_RE.fullmatch(token):
                return {"valid": False, "reason": "malformed"}
            now = app.now()
            row = await app.db.read(store.by_digest, digest(token))
            answer = judge(row, app.human_authors(), now)
            if answer["valid"] and (row["last_used"] is None
                                    or parse_iso(row["last_used"]) + TOUCH_EVERY <= now):
                _touch(app, row["name"], now)
            return answer

        async def token_count() -> dict[str, Any]:
            return {"usable": await app.db.read(store.count_usable, app.now())}

        return {"token.create": token_create, "token.list": token_list,
                "token.revoke": token_revoke, "token.verify": token_verify,
                "token.count": token_count}
