"""The MCP resources of SPEC §5.1: `minions://pinned`, `minions://team-notes` and the template
`minions://knowledge/{path}`, each one daemon call, with recalled text fenced as in a prompt.
Standard library only (protocol.py serves them).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote

from minionsd.agents.session import Session, ToolFailure, extract_section, standing_prompt
from minionsd.agents.tools import knowledge_text

PINNED_URI = "minions://pinned"
TEAM_NOTES_URI = "minions://team-notes"
KNOWLEDGE_PREFIX = "minions://knowledge/"
KNOWLEDGE_TEMPLATE = KNOWLEDGE_PREFIX + "{path}"
MARKDOWN = "text/markdown"


@dataclass(frozen=True)
class ResourceSpec:
    uri: str
    name: str
    title: str
    description: str


RESOURCES = (
    ResourceSpec(PINNED_URI, "pinned", "Pinned context",
                 "The operator's pinned context (pinned.md): standing guidance for every task, "
                 "as the Pinned Context section of a prompt holds it (capped, fenced)."),
    ResourceSpec(TEAM_NOTES_URI, "team-notes", "Team Notes",
                 "The newest sections of the team digest (notes.md), as the Team Notes "
                 "section of a prompt holds it (capped, fenced as untrusted evidence)."),
)
TEMPLATE = ResourceSpec(KNOWLEDGE_TEMPLATE, "knowledge", "Knowledge entry",
                        "One knowledge-base entry, e.g. minions://knowledge/conventions/"
                        "2026-01-02-alice-retry-policy.md for knowledge/conventions/"
                        "2026-01-02-alice-retry-policy.md; the body fenced as untrusted "
                        "evidence. knowledge_list shows the paths.")


class ResourceNotFound(LookupError):
    pass


def knowledge_path(uri: str) -> str:
    rest = unquote(uri[len(KNOWLEDGE_PREFIX):]).lstrip("/")
    if not rest:
        raise ResourceNotFound(f"{uri} names no entry; use {KNOWLEDGE_TEMPLATE}")
    return rest if rest.startswith("knowledge/") else "knowledge/" + rest


def read(session: Session, uri: str) -> str:
    """The text of a resource; ToolFailure when the daemon fails, ResourceNotFound for a URI
    that names nothing."""
    if uri in (PINNED_URI, TEAM_NOTES_URI):
        prompt = standing_prompt(session)
        source = "pinned:pinned.md" if uri == PINNED_URI else "team-notes:notes.md"
        section = extract_section(prompt["text"], source)
        if section is None:
            if uri == PINNED_URI:
                return "(pinned.md is empty or missing: nothing to show.)"
            return ("(no Team Notes to show: notes.md is empty or missing, or this session's "
                    "token is bound to a project, and Team Notes mix every project's notes.)")
        return section
    if uri.startswith(KNOWLEDGE_PREFIX):
        path = knowledge_path(uri)
        try:
            entry = session.call("knowledge.get", {"path": path})
        except ToolFailure as exc:
            # -32001: no such entry; -32602: a path the daemon refuses (`..`, absolute...)
            if exc.data.get("error", {}).get("code") in (-32001, -32602):
                raise ResourceNotFound(exc.text) from None
            raise
        return knowledge_text(entry)
    raise ResourceNotFound(f"unknown resource {uri}; the resources are {PINNED_URI}, "
                           f"{TEAM_NOTES_URI} and {KNOWLEDGE_TEMPLATE}")
