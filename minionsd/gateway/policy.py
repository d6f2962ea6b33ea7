"""What a token may ask of the daemon, and as whom (SPEC §5.2 Identity and Scopes).

`admit(method, params, identity)` refuses a method outside the token's scopes (-32004
forbidden, its detail naming the scope needed) and a socket-only token method, and returns
the params the daemon gets: whatever the request said, what a token writes is written as its
agent with `agent` trust, and a token bound to a project recalls and writes in that project
only. A pure function: /rpc, /mcp and the web view all go through it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from minionsd.gateway.identity import VIEW_METHODS, Identity, scope_needed

FORBIDDEN = -32004
INVALID_PARAMS = -32602
NOT_FOUND = -32001
_MESSAGES = {FORBIDDEN: "forbidden", INVALID_PARAMS: "Invalid params", NOT_FOUND: "not_found"}
# Methods that name records by id; a project-bound token reaches only its project's records
# (global ones it may read, never change).
_ID_PARAMS = {"memory.get": ("id",), "memory.retract": ("id",), "memory.supersede": ("id", "by"),
              "memory.pin": ("id",), "memory.expire": ("id",), "memory.purge": ("id",)}
_CHANGES_ITS_ID = frozenset({"memory.retract", "memory.supersede", "memory.pin",
                             "memory.expire", "memory.purge"})

# method -> the params that carry the writer's or reader's identity, forced to the token's.
_AUTHOR_PARAMS: dict[str, tuple[str, ...]] = {
    "inbox.submit": ("author",),
    "knowledge.create": ("author",),
    "memory.add": ("author", "agent"),
    "episode.capture": ("agent",),
    "memory.retrieve": ("agent",),
    "prompt.assemble": ("agent",),
}
# methods whose `project` a project-bound token fixes.
_PROJECT_METHODS = frozenset({"inbox.submit", "knowledge.create", "memory.add",
                              "episode.capture", "memory.retrieve", "prompt.assemble",
                              "memory.search", "knowledge.list", "knowledge.get",
                              "inbox.list"})
# methods told the caller is bound (`project_bound`): a search finds that project's records and
# those of no project, recall leaves out other projects' records and the whole-home Team Notes
# and notebook, a finding's conflict does not name another project's note.
_BOUND_METHODS = frozenset({"memory.search", "memory.retrieve", "prompt.assemble",
                            "inbox.submit"})


# The web view's reads show every project's records, retrievals, digest and notes: a token
# bound to a project is refused them (it signs in to no web view either).
WHOLE_HOME_READS = VIEW_METHODS


class Forbidden(Exception):
    """A request the gateway refuses before the daemon sees it."""

    def __init__(self, detail: str, code: int = FORBIDDEN, **data: Any) -> None:
        super().__init__(detail)
        self.code = code
        self.message = _MESSAGES[code]
        self.detail = detail
        self.data = data


@dataclass(frozen=True)
class Admitted:
    params: dict[str, Any]
    # {"author": agent} when the request's identity params were replaced (SPEC: data.author)
    note: dict[str, Any] = field(default_factory=dict)


def admit(method: str, params: Any, identity: Identity) -> Admitted:
    needed = scope_needed(method)
    if needed is None:
        raise Forbidden(f"{method} is served on the daemon's socket only, never over HTTP",
                        method=method)
    if needed not in identity.scopes:
        raise Forbidden(f"{method} needs the '{needed}' scope; token {identity.name!r} has "
                        + ", ".join(sorted(identity.scopes)), method=method, scope=needed)
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise Forbidden("params must be an object (named params) through the gateway",
                        code=INVALID_PARAMS, param="params")
    out = dict(params)
    note: dict[str, Any] = {}
    for key in _AUTHOR_PARAMS.get(method, ()):
        out[key] = identity.agent
        note["author"] = identity.agent
    if method in ("memory.add", "knowledge.create", "episode.capture", "inbox.submit"):
        out["trust"] = "agent"
    if identity.project is not None and method in WHOLE_HOME_READS:
        raise Forbidden(f"{method} shows the whole home, and token {identity.name!r} is bound "
                        f"to project {identity.project}", method=method)
    if identity.project is not None and method == "inbox.list" and out.get("quarantined"):
        raise Forbidden(f"token {identity.name!r} is bound to project {identity.project}, and "
                        "quarantined files name no project they could be checked against; "
                        "list them with an unbound token", method=method)
    if identity.project is not None and method in _PROJECT_METHODS:
        out["project"] = identity.project
        if method == "memory.add":
            out["scope"] = f"project:{identity.project}"
        if method in _BOUND_METHODS:
            out["project_bound"] = True
    return Admitted(out, note)


async def check_project(method: str, params: dict[str, Any], identity: Identity,
                        fetch: Callable[[str], Awaitable[dict[str, Any] | None]]) -> None:
    """For a project-bound token, refuse a record outside its project: another project's
    record reads as missing (-32001, its existence is not confirmed), and only the token's
    own project's records may be retracted or superseded (-32004). `fetch(id)` is the record,
    or None when there is none (the daemon then answers the request itself)."""
    if identity.project is None or method not in _ID_PARAMS:
        return
    own = f"project:{identity.project}"
    for key in _ID_PARAMS[method]:
        value = params.get(key)
        if not isinstance(value, str) or not value:
            continue
        record = await fetch(value)
        if record is None:
            continue
        scope = str(record.get("scope") or "")
        # Another project's record, by its scope or (an agent-scoped one) by its project.
        elsewhere = record.get("project") not in (None, identity.project)
        if (scope.startswith("project:") and scope != own) or elsewhere:
            raise Forbidden(f"no record with id {value!r} in project {identity.project}",
                            code=NOT_FOUND, id=value)
        if method in _CHANGES_ITS_ID and key == "id" and scope != own:
            raise Forbidden(f"token {identity.name!r} is bound to project {identity.project}: "
                            f"it may change that project's records only, and {value} is "
                            f"{scope}", method=method, id=value)
