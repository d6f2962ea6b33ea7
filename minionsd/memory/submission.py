"""inbox.submit's notes: validating the params, naming the file, and telling a duplicate.

A submission is rendered to a note file (front matter the daemon writes, then the body) and
claimed under `<author>-<slug>-<YYYY-MM-DD>.md` in state.db, or the next free numbered name;
only an identical body with the same project, kind, task, PR and outcome under one of those
names makes it a duplicate (SPEC §2 v2: a note whose content differs is never dropped).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from minionsd.clock import date_stamp
from minionsd.errors import Conflict, InvalidParams
from minionsd.memory.consolidate.breaker import content_hash
from minionsd.memory.identity import AGENT_TRUST
from minionsd.memory.inbox import KINDS, note_project
from minionsd.storage import journal, submissions
from minionsd.storage.record_fields import check_project_name
from minionsd.storage.record_filters import check_project_bound
from minionsd.text.markdown import (
    FrontMatterError,
    first_heading,
    parse_note,
    readable_slug,
    render_note,
)
from minionsd.text.redact import redact

_AUTHOR_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


@dataclass(frozen=True)
class Submission:
    name: str
    text: str
    kind: str
    author: str
    task: str | None
    body: str  # the body as written under the front matter
    identity: str  # what duplicates compare: identity_hash(body, front matter)
    project: str | None = None
    # the caller is bound to `project` (a gateway token): a finding's conflict does not name
    # another project's note
    bound: bool = False


def check_author(author: object) -> str:
    if not isinstance(author, str) or not _AUTHOR_RE.match(author):
        raise InvalidParams("'author' must be 1-64 characters of letters, digits, '.', '_' "
                            "or '-', starting with a letter or digit", param="author")
    return author


def check_one_line(value: str, key: str) -> str:
    """`value` unless a line break (any Unicode one) is inside it: a title is a heading and a
    file name, and a second line would spill into the body."""
    if len(value.strip().splitlines()) > 1:
        raise InvalidParams(f"'{key}' must be one line; it holds a line break", param=key)
    return value


def _opt(params: dict[str, Any], key: str) -> str | None:
    value = params.get(key)
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and key == "pr":
        return str(value)
    if not isinstance(value, str):
        raise InvalidParams(f"'{key}' must be a string", param=key)
    return value


def prepare_submission(params: dict[str, Any], now: datetime) -> Submission:
    """Validate inbox.submit params and render the note file (name and text)."""
    body = params.get("body")
    if not isinstance(body, str) or not body.strip():
        raise InvalidParams("'body' must be a non-empty string", param="body")
    author = check_author(params.get("author"))
    kind = params.get("kind") or "note"
    if kind not in KINDS:
        raise InvalidParams(f"'kind' must be one of {', '.join(KINDS)}; got {kind!r}",
                            param="kind")
    title, project, task, pr, outcome = (_opt(params, k) for k in
                                         ("title", "project", "task", "pr", "outcome"))
    check_project_name(project)  # retrieval's rule: a note it could never ask for is unseen
    bound = check_project_bound(params.get("project_bound"), project)
    if title is not None:
        check_one_line(title, "title")
    hold = params.get("hold", False)
    if not isinstance(hold, bool):
        raise InvalidParams("'hold' must be true or false", param="hold")
    trust = params.get("trust")
    if trust not in (None, AGENT_TRUST):
        raise InvalidParams(f"'trust' can only be \"{AGENT_TRUST}\" (a note can lower its "
                            f"trust, never raise it); got {trust!r}", param="trust")
    if kind == "finding":
        if not task:
            raise InvalidParams("a finding needs 'task'", param="task")
        if outcome != "success":
            raise InvalidParams("a finding is kept only for a successful task: 'outcome' must "
                                f"be \"success\", got {outcome!r}", param="outcome")
    date = date_stamp(now)
    slug_source = title or first_heading(body) or (task if kind == "finding" else None) \
        or " ".join(body.split()[:8])
    # The name is made from redacted text: slugging lower-cases a token into a shape the
    # redactor no longer knows, and the name reaches archive paths and every record's source.
    name = f"{author}-{readable_slug(redact(slug_source))}-{date}.md"
    meta: dict[str, Any] = {"author": author, "date": date, "kind": kind}
    if kind in ("finding", "feedback", "alert") or author == "engine":
        meta["agent"] = author
    for key, value in (("title", title), ("project", project), ("task", task), ("pr", pr),
                       ("outcome", outcome)):
        if value is not None:
            meta[key] = value
    if hold:
        meta["hold"] = True
    if trust:
        meta["trust"] = trust  # what a gateway token wrote stays `agent` (identity.py)
    if title and not first_heading(body):
        body = f"# {title}\n\n{body}"  # a readable note, and a KB entry named after it
    body = body if body.endswith("\n") else body + "\n"
    return Submission(name, render_note(meta, body), kind, author, task, body,
                      identity_hash(body, meta), project, bound)


# Front-matter keys that change what a note becomes (its record's scope, kind, task and PR):
# two submissions that differ in one are two notes, even with the same body.
IDENTITY_KEYS = ("project", "kind", "task", "pr", "outcome")


def identity_hash(body: str, meta: dict[str, Any]) -> str:
    """What duplicates are compared by: the body, plus the IDENTITY_KEYS the note sets (a
    plain note, with none of them and kind `note`, hashes as its body alone)."""
    extra = {key: str(meta[key]) for key in IDENTITY_KEYS
             if meta.get(key) is not None and not (key == "kind" and meta[key] == "note")}
    if not extra:
        return content_hash(body)
    return content_hash(body + "\0" + json.dumps(extra, sort_keys=True))


def body_hash(text: str) -> str:
    """identity_hash of a note file (as duplicates are compared)."""
    try:
        meta, body = parse_note(text)
    except FrontMatterError:
        meta, body = {}, text
    return identity_hash(body, meta if isinstance(meta, dict) else {})


def _known_hash(conn: Any, name: str, inbox_dir: Path,
                claim: submissions.Claim | None) -> str | None:
    """Body hash of what was submitted (or lies in the inbox) as `name`; None = unknown."""
    if claim is not None and claim.body_hash:
        return claim.body_hash
    try:
        return body_hash((inbox_dir / name).read_bytes().decode("utf-8", "replace"))
    except FileNotFoundError:
        pass
    except OSError:
        return None
    journalled = journal.latest_content(conn, name)
    return body_hash(journalled) if journalled is not None else None


def where_now(conn: Any, name: str, inbox_dir: Path, root: Path) -> Path:
    """The file that holds the note submitted as `name`: the inbox file while it is there,
    else its archived copy once a batch took it (else, unknown, the inbox path)."""
    in_inbox = inbox_dir / name
    if in_inbox.exists():
        return in_inbox
    archived = journal.latest_archive_path(conn, name)
    if archived and (root / archived).exists():
        return root / archived
    return in_inbox


def numbered_name(name: str, n: int) -> str:
    """The n-th name for a submission: `x.md`, then `x-2.md`, `x-3.md`, …"""
    return name if n == 1 else f"{name.removesuffix('.md')}-{n}.md"


def _visible_to(conn: Any, name: str, inbox_dir: Path, project: str | None) -> bool:
    """Whether the note submitted as `name` is one a caller bound to `project` may be told
    about: its front matter names that project or none. A note that can no longer be read
    (pruned) is not."""
    try:
        text: str | None = (inbox_dir / name).read_bytes().decode("utf-8", "replace")
    except OSError:
        text = journal.latest_content(conn, name)
    if text is None:
        return False
    try:
        meta, _body = parse_note(text)
    except FrontMatterError:
        return False
    return note_project(meta if isinstance(meta, dict) else {}) in (None, project)


def record_submission(conn: Any, sub: Submission, inbox_dir: Path,
                      now: datetime) -> tuple[str, bool]:
    """Claim a name (and the task, for a finding) in state.db: (name, written).

    The first name not yet taken (in state.db or as an inbox file) is claimed, unless one of
    the taken names already holds this exact body: then it is a duplicate, (that name, False),
    and nothing is claimed. A note is never dropped because its name is taken.
    """
    digest = sub.identity
    n = 1
    while True:
        name = numbered_name(sub.name, n)
        claim = submissions.claim_of(conn, name)
        path = inbox_dir / name
        if claim is None and not (path.exists() or path.is_symlink()):
            break
        if _known_hash(conn, name, inbox_dir, claim) == digest:
            return name, False
        n += 1
    if sub.kind == "finding":
        first = submissions.finding_for(conn, sub.task)
        if first and sub.bound and not _visible_to(conn, first[0], inbox_dir, sub.project):
            raise Conflict(f"task {sub.task!r} already has a finding (one is kept per task), "
                           f"of another project: a caller bound to project {sub.project} is "
                           "not shown it", task=sub.task)
        if first:
            raise Conflict(f"task {sub.task!r} already has a finding: {first[0]} "
                           f"by {first[1]}", first=first[0])
        submissions.claim_finding(conn, sub.task, name, sub.author, now)
    submissions.claim_name(conn, name, digest, now)
    return name, True
