"""memory_records rows as the wire shows them: the Record keys, the status a read shows (a
passed `expires_at` reads as `expired`), and search snippets without heading marks. Shared by
records.py and search.py."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

_JSON_COLUMNS = ("paths", "tags", "meta")
_WIRE_KEYS = ("id", "type", "scope", "status", "trust", "title", "body", "source", "author",
              "project", "agent", "task", "pr", "paths", "tags", "importance", "confidence",
              "pinned", "created_at", "updated_at", "expires_at", "superseded_by",
              "retracted_reason", "meta")
WIRE_KEYS = _WIRE_KEYS  # the Record keys, in column order
EFFECTIVE_STATUS = (
    "(CASE WHEN r.status = 'active' AND r.expires_at IS NOT NULL AND r.expires_at <= :now "
    "THEN 'expired' ELSE r.status END)"
)


def to_wire(row: Mapping[str, Any]) -> dict[str, Any]:
    record = {key: row[key] for key in _WIRE_KEYS}
    for column in _JSON_COLUMNS:
        record[column] = json.loads(record[column])
    record["pinned"] = bool(record["pinned"])
    if "eff_status" in row.keys():  # noqa: SIM118 - sqlite3.Row "in" tests values
        record["status"] = row["eff_status"]
    return record


_SNIPPET_HEADING_RE = re.compile(r"(^|\n)(\u2026)?[ \t]*#{1,6}[ \t]+")


def plain_snippet(snippet: str | None) -> str | None:
    """A search snippet without Markdown heading marks (`# Title` reads `Title`)."""
    return _SNIPPET_HEADING_RE.sub(r"\1\2", snippet) if snippet else snippet
