"""Who a token is, and which daemon methods each scope allows (SPEC §5.2).

`read` reads; `write` (with read) adds notes, outcomes, retractions and supersessions;
`admin` is every other method of the socket API, except the token methods, which are never
served over HTTP. The table is data, so the web view and the docs test read the same one.
"""

from __future__ import annotations

from dataclasses import dataclass

READ_METHODS = frozenset({
    "status", "memory.get", "memory.search", "memory.retrieve", "prompt.assemble",
    "knowledge.list", "knowledge.get", "pinned.get", "inbox.list"})
# Read-only views for people (the web view, SPEC §5.3) beyond §5.2's list: read scope too.
VIEW_METHODS = frozenset({"memory.browse", "memory.provenance", "telemetry.selections",
                          "agents.list", "agents.get", "digest.get", "archive.get"})
WRITE_METHODS = frozenset({"inbox.submit", "episode.capture", "memory.retract",
                           "memory.supersede"})
ADMIN_METHODS = frozenset({
    "inbox.requeue", "inbox.hold", "consolidation.run", "pinned.set", "pinned.append",
    "knowledge.create", "memory.add", "memory.pin", "memory.expire", "memory.purge",
    "config.get", "config.set", "maintenance.run", "telemetry.retrievals"})
# Socket only: a token can never make, list, revoke or test tokens.
SOCKET_ONLY = frozenset({"token.create", "token.list", "token.revoke", "token.verify",
                         "token.count", "web.session_create", "web.link_create",
                         "web.link_redeem", "web.session_verify", "web.session_end"})

SCOPE_METHODS: dict[str, frozenset[str]] = {
    "read": READ_METHODS | VIEW_METHODS,
    "write": WRITE_METHODS,
    "admin": ADMIN_METHODS,
}


# Admin methods of the socket API that came after SPEC §5.2's list.
LATER_ADMIN_METHODS = frozenset({"backup.create"})


def known(method: str) -> bool:
    """Whether `method` is one of the socket API's methods (for metric labels)."""
    return (method in SOCKET_ONLY or method in LATER_ADMIN_METHODS
            or any(method in m for m in SCOPE_METHODS.values()))


def scope_needed(method: str) -> str | None:
    """The scope a method needs; None for a socket-only method. A method the table does not
    name needs `admin`; the gateway answers such a method (not `known`) with method-not-found
    before asking for any scope."""
    if method in SOCKET_ONLY:
        return None
    for scope, methods in SCOPE_METHODS.items():
        if method in methods:
            return scope
    return "admin"


@dataclass(frozen=True)
class Identity:
    name: str                  # the token's name (never the token itself)
    agent: str                 # what the token writes as and recalls for
    scopes: frozenset[str]     # of read, write, admin
    project: str | None        # the only project it may recall and write in; None = any

    def allows(self, method: str) -> bool:
        scope = scope_needed(method)
        return scope is not None and scope in self.scopes

    @classmethod
    def from_verify(cls, answer: dict) -> Identity:
        return cls(name=answer["name"], agent=answer["agent"],
                   scopes=frozenset(answer["scopes"]), project=answer.get("project"))
