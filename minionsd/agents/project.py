"""Who a session is and which project it works on: `--agent` and `--project NAME|auto`.

`--agent` falls back to `$MINIONS_AGENT`, then to `agent`. `--project auto` is the repository
name of the directory's git remote `origin` (`git@host:team/payments.git` and
`https://host/team/payments` both give `payments`), else the directory's own name. Standard
library only.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

DEFAULT_AGENT = "agent"
AUTO = "auto"
_AGENT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
GIT_TIMEOUT_S = 2.0


class IdentityError(ValueError):
    """An --agent or --project value the daemon would refuse."""


def resolve_agent(value: str | None) -> str:
    agent = value or os.environ.get("MINIONS_AGENT") or DEFAULT_AGENT
    if not _AGENT_RE.match(agent):
        raise IdentityError(f"agent {agent!r} must be 1-64 characters of letters, digits, '.', "
                            "'_' or '-', starting with a letter or digit")
    return agent


def repo_name_from_url(url: str) -> str | None:
    """The last path segment of a git remote URL, without `.git`; None when there is none."""
    text = url.strip().rstrip("/")
    if text.endswith(".git"):
        text = text[:-4].rstrip("/")
    # scp-like `git@host:team/payments`, URLs and local paths all end in the repository name.
    name = re.split(r"[/:\\]", text)[-1] if text else ""
    return name or None


def git_origin(directory: Path) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(directory), "remote", "get-url", "origin"],
                              capture_output=True, text=True, timeout=GIT_TIMEOUT_S,
                              env={**os.environ, "GIT_TERMINAL_PROMPT": "0"})
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None


def resolve_project(value: str | None, directory: str | os.PathLike[str] | None = None
                    ) -> str | None:
    """The project name for `value` (`auto` or None = from `directory`, default the cwd)."""
    if value and value != AUTO:
        name = value
    else:
        where = Path(directory) if directory else Path.cwd()
        origin = git_origin(where)
        name = (repo_name_from_url(origin) if origin else None) or where.absolute().name
    name = name.strip()
    if not name:
        return None
    if len(name) > 200:
        raise IdentityError(f"project name {name[:40]!r}... is longer than 200 characters")
    return name
