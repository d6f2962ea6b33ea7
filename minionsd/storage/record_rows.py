"""The row a new memory record is stored as: its public id, its column values, and the
statements that insert one record or a whole batch (records.insert, memory.add's batches).

A batch is stored by one INSERT … SELECT over a JSON text of its rows, built beside the
writer: SQLite runs every row and its triggers in one call, so the writer thread neither steps
row by row in Python nor waits for the GIL between rows.
"""

from __future__ import annotations

import json
import re
import secrets
import sqlite3
from collections.abc import Mapping, Sequence
from datetime import datetime
from json.encoder import encode_basestring_ascii  # type: ignore[attr-defined]
from typing import Any

from minionsd.clock import iso


def new_id(now: datetime) -> str:
    """Time-ordered, collision-resistant public id: M-<ms hex>-<random hex>."""
    return f"M-{int(now.timestamp() * 1000):011x}{secrets.token_hex(6)}"


# The columns a new record is stored with, in the order of row()'s values; status 'active'
# and pinned 0 are written as constants.
INSERT_COLUMNS = ("id", "type", "scope", "trust", "title", "body", "source", "author",
                  "project", "agent", "task", "pr", "paths", "tags", "importance",
                  "confidence", "created_at", "updated_at", "expires_at", "meta",
                  "content_hash", "search_aux", "term_counts")
INSERT_INTO = (f"INSERT INTO memory_records ({', '.join(INSERT_COLUMNS)}, status, pinned) ")
INSERT_ONE = INSERT_INTO + f"VALUES ({', '.join('?' * len(INSERT_COLUMNS))}, 'active', 0)"
# Many records in one statement (see the module docstring).
INSERT_FROM_JSON = (INSERT_INTO + "SELECT "
                    + ", ".join(f"value ->> {i}" for i in range(len(INSERT_COLUMNS)))
                    + ", 'active', 0 FROM json_each(?)")


def json_text(value: Any) -> str:
    """json.dumps(value) (as paths, tags and meta are stored), with the common shapes (a list
    of strings, an empty object) written without building an encoder for each value."""
    if type(value) is list and all(type(item) is str for item in value):
        return "[" + ", ".join(map(encode_basestring_ascii, value)) + "]"
    if type(value) is dict and not value:
        return "{}"
    return json.dumps(value)


def row(fields: Mapping[str, Any], record_id: str, stamp: str,
        content_hash: str | None) -> list[Any]:
    """The values of INSERT_COLUMNS for a record whose derived columns are in `fields`."""
    return [record_id, fields["type"], fields["scope"], fields["trust"], fields["title"],
            fields["body"], fields["source"], fields["author"], fields["project"],
            fields["agent"], fields["task"], fields["pr"], json_text(fields["paths"]),
            json_text(fields["tags"]), fields["importance"], fields["confidence"],
            fields.get("created_at") or stamp, stamp, fields["expires_at"],
            json_text(fields["meta"]), content_hash, fields["search_aux"],
            fields["term_counts"]]


def batch_rows(prepared: Sequence[Mapping[str, Any]],
               now: datetime) -> tuple[list[str], str | None]:
    """The new ids of `prepared` (records.derive()'s output) and the one text insert_batch() stores
    them from; built beside the writer. The text is None when a value cannot go through it
    (SQLite's JSON functions end a string at an escaped NUL): records.insert() them one by one.
    Only a NUL in a column's own text counts: one inside paths, tags or meta is already an
    escape in their JSON text, and a body that spells out `\\u0000` is six plain characters."""
    stamp = iso(now)
    ids = new_ids(now, len(prepared))
    rows = [row(fields, record_id, stamp, None)
            for fields, record_id in zip(prepared, ids, strict=True)]
    text = json.dumps(rows, ensure_ascii=False, separators=(",", ":"))
    return ids, (None if has_escaped_nul(text) else text)


def new_ids(now: datetime, count: int) -> list[str]:
    """`count` ids as new_id(now) makes them, with the random parts drawn at once."""
    prefix = f"M-{int(now.timestamp() * 1000):011x}"
    random = secrets.token_hex(6 * count)
    return [prefix + random[i:i + 12] for i in range(0, 12 * count, 12)]


# In JSON text, a NUL inside a string is written \u0000; a backslash is written \\, so the
# six characters \u0000 stand for a NUL exactly when an odd number of backslashes precedes u.
_ESCAPED_NUL = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")


def has_escaped_nul(text: str) -> bool:
    """Whether JSON `text` holds a string with a NUL character in it."""
    return "\\u0000" in text and _ESCAPED_NUL.search(text) is not None


def insert_batch(conn: sqlite3.Connection, rows: str) -> int:
    """Insert the records batch_rows() encoded in `rows`, in their order, in one statement
    (all or none); returns how many."""
    return conn.execute(INSERT_FROM_JSON, (rows,)).rowcount
