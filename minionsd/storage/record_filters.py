"""The field filters memory.search and the browse listings share: a record's type, trust,
scope, project and agent, validated and turned into SQL conditions on `memory_records r`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from minionsd.errors import InvalidParams
from minionsd.storage.record_fields import TRUSTS, TYPES, check_choice, check_scope

MAX_NAME = 200


def field_filters(params: Mapping[str, Any], *, trust: bool,
                  empty_names: bool) -> tuple[list[str], dict[str, Any]]:
    """(conditions, binds) for the filters `params` gives: type, scope, project, agent, and
    trust when `trust`. A project or agent is a string of at most MAX_NAME characters; an
    empty one is refused unless `empty_names` (then it matches what holds an empty name)."""
    where: list[str] = []
    binds: dict[str, Any] = {}
    choices = {"type": TYPES, "trust": TRUSTS} if trust else {"type": TYPES}
    for column, allowed in choices.items():
        if params.get(column) is not None:
            binds[column] = check_choice(params[column], column, allowed)
            where.append(f"r.{column} = :{column}")
    if params.get("scope") is not None:
        binds["scope"] = check_scope(params["scope"])
        where.append("r.scope = :scope")
    for column in ("project", "agent"):
        value = params.get(column)
        if value is None:
            continue
        if not isinstance(value, str) or len(value) > MAX_NAME or not (value or empty_names):
            raise InvalidParams(_name_error(column, empty_names), param=column)
        binds[column] = value
        where.append(f"r.{column} = :{column}")
    return where, binds


def _name_error(column: str, empty_names: bool) -> str:
    kind = "a string" if empty_names else "a non-empty string"
    return f"'{column}' must be {kind} of at most {MAX_NAME} characters"
