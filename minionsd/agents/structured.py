"""What a tool result's structured content may carry: never raw recalled text.

Claude Code and Codex show the model a tool result's structured content instead of its text
when it has some, so anything recalled (a body, a title, a snippet, a source string, a
retraction reason, tags, paths inside a record) must not be there raw. The structured content
of every tool is therefore the readable text itself (`text`, where recalled text is fenced)
plus fields picked by name whose values the daemon makes or checks: ids, enum values, numbers,
flags and timestamps, each one plain word (see :func:`plain`). Names that someone wrote (a
scope, project, author or agent, a knowledge path, which holds a title and an author) are
never picked, however ordinary they look: one word of letters and dashes can still be a
sentence. The fenced text holds them. Pure functions, standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

# One word of letters, digits and . _ : / @ + = - (no spaces, no angle brackets, no quotes):
# an id, an enum value, a timestamp, the inbox path of the session's own note. It cannot
# close a fence. It is checked on the fields below, which hold only values the daemon makes.
_PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@+=-]{0,254}")

RECORD_FIELDS = ("id", "type", "status", "trust", "importance", "confidence", "pinned",
                 "created_at", "updated_at", "expires_at", "superseded_by", "rank")
SELECTED_FIELDS = ("id", "type", "trust", "date", "score", "bytes")
ENTRY_FIELDS = ("category", "updated_at")
# Of an error's `data`, the fields the daemon or the gateway makes: the parameter or key at
# fault, an id, an HTTP status, reason and Retry-After. Not a name it quotes (another agent's
# note named after its title, a path): the fenced text holds those.
ERROR_DATA_FIELDS = ("param", "key", "field", "id", "status", "reason", "retry_after")


def plain(value: Any) -> bool:
    """Whether `value` is a string that is one plain word (see the module docstring)."""
    return isinstance(value, str) and _PLAIN.fullmatch(value) is not None


def _safe(value: Any) -> bool:
    if value is None or isinstance(value, bool | int | float):
        return True
    return plain(value)


def pick(source: Mapping[str, Any], names: Iterable[str]) -> dict[str, Any]:
    """The named fields of `source` whose values are safe to show raw; others are left out."""
    return {name: source[name] for name in names if name in source and _safe(source[name])}


def record(data: Mapping[str, Any]) -> dict[str, Any]:
    return pick(data, RECORD_FIELDS)


def error(data: Mapping[str, Any]) -> dict[str, Any]:
    """A ToolFailure's data with only safe fields (the daemon's detail may quote a record)."""
    inner = data.get("error")
    if not isinstance(inner, Mapping):
        return {}
    kept = pick(inner, ("kind", "method", "code", "message", "field", "name", "socket"))
    extra = inner.get("data")
    if isinstance(extra, Mapping):
        kept["data"] = pick(extra, ERROR_DATA_FIELDS)
    return {"error": kept}


def unsafe_strings(value: Any, path: str = "$") -> list[str]:
    """Where `value` (a structured content) holds a string that is neither plain nor the
    readable `text`: the places raw recalled text could hide. Empty for a safe result."""
    found: list[str] = []
    if isinstance(value, str):
        if not plain(value):
            found.append(path)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if path == "$" and key == "text":
                continue
            found += unsafe_strings(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += unsafe_strings(item, f"{path}[{index}]")
    return found
