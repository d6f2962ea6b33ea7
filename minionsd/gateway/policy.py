"""What a token may ask of the daemon, and as whom (SPEC §5.2 Identity and Scopes).

`admit(method, params, identity)` refuses a method outside the token's scopes (-32004
forbidden, its detail naming the scope needed) and a socket-only token method, and returns
the params the daemon gets: whatever the request said, what a token writes is written as its
agent with `agent` trust, and a token bound to a project recalls and writes in that project
only. A pure function: /rpc, /mcp and the web view all go through it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from minionsd.gateway.identity import Identity, scope_needed

FORBIDDEN = -32004
INVALID_PARAMS = -32602

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
                              "memory.search"})


class Forbidden(Exception):
    """A request the gateway refuses before the daemon sees it."""

    def __init__(self, detail: str, code: int = FORBIDDEN, **data: Any) -> None:
        super().__init__(detail)
        self.code = code
        self.message = "forbidden" if code == FORBIDDEN else "Invalid params"
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
    if method in ("memory.add", "knowledge.create"):
        out["trust"] = "agent"
    if identity.project is not None and method in _PROJECT_METHODS:
        out["project"] = identity.project
        if method == "memory.add":
            out["scope"] = f"project:{identity.project}"
    return Admitted(out, note)
