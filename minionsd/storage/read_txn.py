"""One read transaction around several reads, so they all see one state of the database."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def snapshot(conn: sqlite3.Connection) -> Iterator[None]:
    """Run the block's reads in one read transaction (unless the caller has one open), so
    they all see one state of the database."""
    own = not conn.in_transaction
    if own:
        conn.execute("BEGIN")
    try:
        yield
    finally:
        if own and conn.in_transaction:
            conn.execute("COMMIT")
