"""The field filters memory.search and the browse listings share: a record's type, trust,
scope, project and agent, validated and turned into SQL conditions on `memory_records r`.

A caller bound to a project (`project_bound`, which the HTTP gateway sends for a token bound to
one) sees that project's records and those of no project; a record of another project, named by
its scope (`project:<other>`) or by its `project` column, is not there for it, as `memory.get`
refuses it through the gateway."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from minionsd.errors import InvalidParams
from minionsd.storage.record_fields import TRUSTS, TYPES, check_choice, check_scope

MAX_NAME = 200
PROJECT_PREFIX = "project:"
# A record a caller bound to :project may see: no other project in its project column or scope.
BOUND_CONDITION = (f"(r.project IS NULL OR r.project = :project) AND "
                   f"(substr(r.scope, 1, {len(PROJECT_PREFIX)}) <> '{PROJECT_PREFIX}' "
                   f"OR r.scope = :project_scope)")


def check_project_bound(value: Any, project: str | None) -> bool:
    """`project_bound` as a caller gave it: absent or false is False; true needs `project`."""
    if value is None or value is False:
        return False
    if value is not True:
        raise InvalidParams("'project_bound' must be true or false", param="project_bound")
    if project is None:
        raise InvalidParams("'project_bound' needs 'project': it keeps the answer to that "
                            "project and to what belongs to no project", param="project_bound")
    return True


def field_filters(params: Mapping[str, Any], *, trust: bool,
                  empty_names: bool) -> tuple[list[str], dict[str, Any]]:
    """(conditions, binds) for the filters `params` gives: type, scope, project, agent, and
    trust when `trust`. A project or agent is a string of at most MAX_NAME characters; an
    empty one is refused unless `empty_names` (then it matches what holds an empty name).
    `project` is an exact column match, unless `project_bound` is true: then it is
    BOUND_CONDITION (that project's records and those of no project)."""
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
    if check_project_bound(params.get("project_bound"), params.get("project")):
        where.remove("r.project = :project")
        where.append(BOUND_CONDITION)
        binds["project_scope"] = PROJECT_PREFIX + binds["project"]
    return where, binds


def _name_error(column: str, empty_names: bool) -> str:
    kind = "a string" if empty_names else "a non-empty string"
    return f"'{column}' must be {kind} of at most {MAX_NAME} characters"
