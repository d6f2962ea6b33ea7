"""Who wrote an inbox note, and whether that author gets a personal notebook.

Identity comes from front matter first (`agent`, then `author`) and only then from the file
name; a front-matter value that cannot be a name (a path, markup, a control character, over
200 characters, a leading dot) is passed over. The file-name fallback prefers the longest
configured agent id, so hyphenated ids such as `command-center` are not cut at their first
dash (the original's `^\\w+-` rule turned them into `command`), and keeps `temp-<uid>` whole
so temporary agents stay recognisable.

Trust follows the author and nothing else (SPEC §3.2): `system` for the daemon's own author
`engine`, `human` only for the authors the owner listed (`trust.human_authors`, by default the
login name the daemon runs as: `App.human_authors()`), `agent` for everyone else. No
front-matter key can raise it. The one key that counts, `trust: agent`, only lowers it: the
daemon writes it into every note a gateway token submits (SPEC §5.2: what a token writes is
`agent`), so such a note stays `agent` even if its author is listed as human by the time it is
consolidated. It travels in the file itself, so it holds through a hold, a quarantine and
requeue (which renames the note), a backup and restore, and a batch redone after a crash;
anyone who could forge it could only lower a note's trust.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

UNKNOWN = "unknown"
ENGINE = "engine"
TEMP_PREFIX = "temp-"
AGENT_TRUST = "agent"
_LEADING_ID_RE = re.compile(r"[A-Za-z0-9_]+(?=-)")
_TEMP_ID_RE = re.compile(r"temp-[A-Za-z0-9_]+(?=-)")
# What no author's name holds: path separators, markup brackets, control characters. A
# front-matter value with one of them is passed over (the next key, then the file name, decides),
# so `agent: ../../etc` or an HTML tag never becomes an author, an agent id or a file-name slug.
_NOT_A_NAME_RE = re.compile(r"[/\\<>\x00-\x1f\x7f]|^.{201,}$", re.DOTALL)


def declared_author(meta: Mapping[str, Any]) -> str | None:
    """The author front matter names (`agent`, then `author`), or None."""
    return _meta_identity(meta)


def _meta_identity(meta: Mapping[str, Any]) -> str | None:
    for key in ("agent", "author"):
        value = meta.get(key)
        if value is not None and not isinstance(value, (dict, list)):
            name = str(value).strip()
            if name and not _NOT_A_NAME_RE.search(name) and not name.startswith("."):
                return name
    return None


def _name_identity(file_name: str, configured_agents: Iterable[str]) -> str | None:
    # Longest first, so `command-center` wins over a configured `command`.
    for agent in sorted(configured_agents, key=len, reverse=True):
        if agent and file_name.startswith(f"{agent}-"):
            return agent
    for pattern in (_TEMP_ID_RE, _LEADING_ID_RE):
        match = pattern.match(file_name)
        if match:
            return match.group(0)
    return None


def note_author(meta: Mapping[str, Any], file_name: str, configured_agents: Iterable[str]) -> str:
    """The note's author: front matter `agent`, `author`, then the file name, else `unknown`."""
    return _meta_identity(meta) or _name_identity(file_name, configured_agents) or UNKNOWN


def is_temporary(author: str, agents_config: Mapping[str, Mapping[str, Any]]) -> bool:
    """True for `temp`/`temp-…` ids and for agents configured with `temporary = true`."""
    if author == "temp" or author.startswith(TEMP_PREFIX):
        return True
    return bool(agents_config.get(author, {}).get("temporary", False))


def has_notebook(author: str, agents_config: Mapping[str, Mapping[str, Any]]) -> bool:
    """Only configured, non-temporary agents get `knowledge/agents/<author>.md`."""
    return author in agents_config and not is_temporary(author, agents_config)


def author_trust(author: str | None, human_authors: Iterable[str], *,
                 daemon_wrote: bool = False, declared: Any = None) -> str:
    """The trust a record written by `author` gets: `system`, `human` or `agent`.

    `engine` is `system` only for a note the daemon wrote itself (`daemon_wrote`): anyone can
    put `author: engine` in a file they drop into the inbox. `declared` is the note's
    front-matter `trust`: `agent` caps the answer at `agent`, any other value is ignored.
    """
    if declared == AGENT_TRUST:
        return AGENT_TRUST
    if author == ENGINE:
        return "system" if daemon_wrote else "agent"
    if author and author in frozenset(human_authors):
        return "human"
    return "agent"
