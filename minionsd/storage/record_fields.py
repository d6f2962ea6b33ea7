"""What a memory record may hold: the allowed types, statuses and trusts, and the validation of
a new record's fields (`memory.add`, consolidation, knowledge entries, episodes). Pure: no
SQL; records.py stores what this accepts.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from minionsd.clock import iso, parse_iso
from minionsd.errors import InvalidParams
from minionsd.text.fence import scrub_surrogates

TYPES = ("semantic", "episodic", "procedural")
STATUSES = ("active", "superseded", "retracted", "expired")
TRUSTS = ("human", "system", "agent", "external")
PIN_FLOOR = 0.9
DEFAULT_IMPORTANCE = 0.5
DEFAULT_CONFIDENCE = 0.5
MAX_BODY_BYTES = 1_048_576


def opt_str(params: Mapping[str, Any], name: str, max_len: int = 1000) -> str | None:
    value = params.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidParams(f"'{name}' must be a string", param=name)
    if len(value) > max_len:
        raise InvalidParams(f"'{name}' is longer than {max_len} characters", param=name)
    return value


def _str_list(params: Mapping[str, Any], name: str, max_items: int = 200) -> list[str]:
    value = params.get(name)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidParams(f"'{name}' must be a list of strings", param=name)
    if len(value) > max_items:
        raise InvalidParams(f"'{name}' has more than {max_items} items", param=name)
    return list(dict.fromkeys(value))


def _unit(params: Mapping[str, Any], name: str, default: float) -> float:
    value = params.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidParams(f"'{name}' must be a number between 0 and 1", param=name)
    if not 0 <= value <= 1:
        raise InvalidParams(f"'{name}' must be between 0 and 1, got {value}", param=name)
    return float(value)


# A timestamp already as clock.iso writes it, or without its milliseconds (a four-digit year
# from 1000: iso writes smaller years without leading zeros).
_STORED_FORM = re.compile(
    r"[1-9][0-9]{3}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{3})?Z")


def _timestamp(params: Mapping[str, Any], name: str) -> str | None:
    value = opt_str(params, name, 64)
    if value is None:
        return None
    try:
        if _STORED_FORM.fullmatch(value):  # iso(parse_iso(value)) without formatting a date
            datetime.fromisoformat(value[:-1])  # a real date and time, or ValueError
            return value if len(value) == 24 else value[:-1] + ".000Z"
        return iso(parse_iso(value))
    except ValueError:
        raise InvalidParams(f"'{name}' must be an ISO 8601 timestamp, got {value!r}",
                            param=name) from None


def check_scope(scope: object, name: str = "scope") -> str:
    if not isinstance(scope, str):
        raise InvalidParams(f"'{name}' must be a string", param=name)
    if scope == "global":
        return scope
    prefix, _, rest = scope.partition(":")
    if prefix in ("project", "agent") and rest and len(rest) <= 200 and "\0" not in rest:
        return scope
    raise InvalidParams(f"'{name}' must be global, project:<name> or agent:<id>; got {scope!r}",
                        param=name)


MAX_PROJECT = 200


def project_name_problem(value: str) -> str | None:
    """What keeps `value` from being a project name retrieval can ask for (SPEC §3.3: 1 to
    MAX_PROJECT characters, matched exactly, so no space or line break before or after it),
    or None when it is one."""
    if not value.strip():
        return "got an empty name (leave it out for no project)"
    if len(value) > MAX_PROJECT:
        return f"got {len(value)} characters"
    if value != value.strip():
        return f"got {value[:60]!r}, which begins or ends with a space or line break"
    return None


def check_project_name(value: object, name: str = "project") -> str | None:
    """`value` when it is None or a project name (project_name_problem), else -32602 naming
    `name`: a note or record of a project retrieval can never match would go unseen."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidParams(f"'{name}' must be a string (a project name)", param=name)
    problem = project_name_problem(value)
    if problem is not None:
        raise InvalidParams(f"'{name}' must be a project name of 1 to {MAX_PROJECT} characters "
                            f"without spaces around it; {problem}", param=name)
    return value


def check_choice(value: object, name: str, choices: Sequence[str]) -> str:
    if value not in choices:
        raise InvalidParams(f"'{name}' must be one of {', '.join(choices)}; got {value!r}",
                            param=name)
    return value  # type: ignore[return-value]


def _scrub(value: Any) -> Any:
    """`value` with every lone surrogate in its strings (JSON can carry them, UTF-8 cannot)
    replaced by U+FFFD, at any depth."""
    if isinstance(value, str):
        return scrub_surrogates(value)
    if isinstance(value, list):  # strings inline: no call per path or tag
        return [scrub_surrogates(v) if isinstance(v, str) else _scrub(v) for v in value]
    if isinstance(value, dict):
        return {_scrub(k): scrub_surrogates(v) if isinstance(v, str) else _scrub(v)
                for k, v in value.items()}
    return value


def _new_scope(value: object) -> str:
    """A new record's scope: `project:<name>` names a project retrieval can ask for."""
    scope = check_scope(value)
    problem = project_name_problem(scope.removeprefix("project:")) \
        if scope.startswith("project:") else None
    if problem is not None:
        raise InvalidParams(f"'scope' project:<name> needs a project name of 1 to {MAX_PROJECT} "
                            f"characters without spaces around it; {problem}", param="scope")
    return scope


def validate_new(params: Mapping[str, Any]) -> dict[str, Any]:
    """Check memory.add params; return the column values (without id and timestamps)."""
    params = _scrub(dict(params))
    body = params.get("body")
    if not isinstance(body, str) or not body.strip():
        raise InvalidParams("'body' must be a non-empty string", param="body")
    if len(body.encode("utf-8")) > MAX_BODY_BYTES:
        raise InvalidParams(f"'body' is larger than {MAX_BODY_BYTES} bytes", param="body")
    source = params.get("source")
    if not isinstance(source, str) or not source.strip():
        raise InvalidParams("'source' must be a non-empty string (provenance)", param="source")
    meta = params.get("meta") or {}
    if not isinstance(meta, dict):
        raise InvalidParams("'meta' must be an object", param="meta")
    pr = params.get("pr")
    if (pr is not None and not isinstance(pr, str | int)) or isinstance(pr, bool):
        raise InvalidParams("'pr' must be a string or number", param="pr")
    return {
        "type": check_choice(params.get("type"), "type", TYPES),
        "scope": _new_scope(params.get("scope")),
        "trust": check_choice(params.get("trust"), "trust", TRUSTS),
        "title": opt_str(params, "title", 500) or "",
        "body": body,
        "source": source[:1000],
        "author": opt_str(params, "author", 200),
        "project": check_project_name(params.get("project")),
        "agent": opt_str(params, "agent", 200),
        "task": opt_str(params, "task", 200),
        "pr": None if pr is None else str(pr),
        "paths": _str_list(params, "paths"),
        "tags": _str_list(params, "tags"),
        "importance": _unit(params, "importance", DEFAULT_IMPORTANCE),
        "confidence": _unit(params, "confidence", DEFAULT_CONFIDENCE),
        "expires_at": _timestamp(params, "expires_at"),
        "created_at": _timestamp(params, "created_at"),
        "meta": meta,
    }
