"""The gateway's bearer tokens in storage: the table `gateway_tokens` (migration 0011).

Only a token's SHA-256 digest is kept, never the token: a lookup hashes what a client
presented and finds the row by digest. What a token may do, and whether it is still good, is
memory/tokens.py's decision; this module reads and writes rows.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime
from typing import Any

from minionsd.clock import iso
from minionsd.errors import Conflict, NotFound

_COLUMNS = ("name", "agent", "scopes", "project", "created_at", "expires_at", "last_used",
            "revoked_at")


def _row(row: sqlite3.Row | tuple[Any, ...]) -> dict[str, Any]:
    out = dict(zip(_COLUMNS, tuple(row), strict=True))
    out["scopes"] = [s for s in out["scopes"].split(",") if s]
    return out


def insert(conn: sqlite3.Connection, fields: dict[str, Any], digest: str) -> dict[str, Any]:
    """A new token row; Conflict when the name is taken (revoked tokens keep their names)."""
    if conn.execute("SELECT 1 FROM gateway_tokens WHERE name = ?",
                    (fields["name"],)).fetchone():
        raise Conflict(f"a token named {fields['name']!r} exists already (names stay taken "
                       "after a revoke, so the audit trail stays readable); pick another name",
                       name=fields["name"])
    conn.execute(
        "INSERT INTO gateway_tokens (name, digest, agent, scopes, project, created_at, "
        "expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (fields["name"], digest, fields["agent"], ",".join(fields["scopes"]),
         fields["project"], fields["created_at"], fields["expires_at"]))
    return fetch(conn, fields["name"])


def fetch(conn: sqlite3.Connection, name: str) -> dict[str, Any]:
    row = conn.execute(f"SELECT {', '.join(_COLUMNS)} FROM gateway_tokens WHERE name = ?",
                       (name,)).fetchone()
    if row is None:
        raise NotFound(f"no token named {name!r}; `minionsctl token list` shows them",
                       name=name)
    return _row(row)


def list_all(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    rows = conn.execute(f"SELECT {', '.join(_COLUMNS)} FROM gateway_tokens "
                        "ORDER BY created_at, name").fetchall()
    return [_row(r) for r in rows]


def count_usable(conn: sqlite3.Connection, now: datetime) -> int:
    """Tokens neither revoked nor expired at `now`."""
    return conn.execute("SELECT count(*) FROM gateway_tokens WHERE revoked_at IS NULL AND "
                        "(expires_at IS NULL OR expires_at > ?)", (iso(now),)).fetchone()[0]


def by_digest(conn: sqlite3.Connection, digest: str) -> dict[str, Any] | None:
    row = conn.execute(f"SELECT {', '.join(_COLUMNS)} FROM gateway_tokens WHERE digest = ?",
                       (digest,)).fetchone()
    return None if row is None else _row(row)


def revoke(conn: sqlite3.Connection, name: str, now: datetime) -> dict[str, Any]:
    """Revoke a token (a second revoke keeps the first time); NotFound for an unknown name."""
    fetch(conn, name)
    conn.execute("UPDATE gateway_tokens SET revoked_at = ? WHERE name = ? AND "
                 "revoked_at IS NULL", (iso(now), name))
    return fetch(conn, name)


def touch(conn: sqlite3.Connection, name: str, now: datetime) -> None:
    conn.execute("UPDATE gateway_tokens SET last_used = ? WHERE name = ?", (iso(now), name))
