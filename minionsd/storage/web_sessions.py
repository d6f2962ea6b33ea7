"""web_sessions: the web view's sign-ins and one-time sign-in links, by digest only.

A row is a session (`kind` 'session') or a one-time link (`kind` 'link'); either belongs to a
gateway token by name and is good only while that token is (not revoked, not expired), so
`token revoke` ends every session made with it. Secrets are never stored: a row is keyed by
the SHA-256 of the secret the browser holds.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime
from typing import Any

from minionsd.clock import iso


def token_by_digest(conn: sqlite3.Connection, digest: str) -> dict[str, Any] | None:
    row = conn.execute("SELECT * FROM gateway_tokens WHERE digest = ?", (digest,)).fetchone()
    return dict(row) if row else None


def token_by_name(conn: sqlite3.Connection, name: str) -> dict[str, Any] | None:
    row = conn.execute("SELECT * FROM gateway_tokens WHERE name = ?", (name,)).fetchone()
    return dict(row) if row else None


def usable_admin_token(conn: sqlite3.Connection, agent: str, now: datetime) -> str | None:
    """The name of a usable admin token of `agent` with no project, newest first."""
    row = conn.execute(
        """SELECT name FROM gateway_tokens
           WHERE agent = ? AND project IS NULL AND revoked_at IS NULL
             AND (expires_at IS NULL OR expires_at > ?)
             AND (',' || scopes || ',') LIKE '%,admin,%'
           ORDER BY created_at DESC LIMIT 1""", (agent, iso(now))).fetchone()
    return row[0] if row else None


def insert(conn: sqlite3.Connection, digest: str, kind: str, token_name: str,
           now: datetime, expires_at: datetime) -> None:
    conn.execute(
        """INSERT INTO web_sessions (digest, kind, token_name, created_at, expires_at)
           VALUES (?, ?, ?, ?, ?)""", (digest, kind, token_name, iso(now), iso(expires_at)))


def fetch(conn: sqlite3.Connection, digest: str, kind: str) -> dict[str, Any] | None:
    row = conn.execute("SELECT * FROM web_sessions WHERE digest = ? AND kind = ?",
                       (digest, kind)).fetchone()
    return dict(row) if row else None


def use_link(conn: sqlite3.Connection, digest: str, now: datetime) -> dict[str, Any] | None:
    """Mark a one-time link used; the row when this call was its one use, else None."""
    cursor = conn.execute(
        """UPDATE web_sessions SET used_at = ?
           WHERE digest = ? AND kind = 'link' AND used_at IS NULL AND expires_at > ?""",
        (iso(now), digest, iso(now)))
    if cursor.rowcount != 1:
        return None
    return fetch(conn, digest, "link")


def delete(conn: sqlite3.Connection, digest: str) -> int:
    return conn.execute("DELETE FROM web_sessions WHERE digest = ?", (digest,)).rowcount


def prune(conn: sqlite3.Connection, now: datetime) -> int:
    return conn.execute("DELETE FROM web_sessions WHERE expires_at <= ?",
                        (iso(now),)).rowcount
