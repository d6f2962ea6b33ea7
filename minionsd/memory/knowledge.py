"""Knowledge-base entries: direct authoring, listing, reading, and the file <-> record link.

Entries live at knowledge/<category>/<date>-<author>-<slug>.md with one front-matter block.
Authoring writes the file first (title and body redacted), then a record whose trust follows
the author, and remembers the pair in `kb_files` so the KB sweep can bring later hand edits of
the file into SQL (redacted again: a hand edit may add a secret to the file, never to SQL).
Listing and reading an entry redact its title and body on the way out for the same reason.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from minionsd.clock import date_stamp, iso
from minionsd.errors import InvalidParams, NotFound
from minionsd.fileio import ReadWarnings, create_new_text, decode_lenient
from minionsd.home import KB_CATEGORIES, Home, check_name, safe_relative
from minionsd.memory.consolidate import classify
from minionsd.memory.inbox import note_project
from minionsd.memory.submission import check_author, check_one_line
from minionsd.storage import kb_index, records
from minionsd.text.markdown import FrontMatterError, first_heading, parse_note, render_note, slugify
from minionsd.text.redact import redact

MAX_ENTRY_BYTES = 1_048_576


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _check_str(value: object, name: str, max_len: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidParams(f"'{name}' must be a non-empty string", param=name)
    if len(value) > max_len:
        raise InvalidParams(f"'{name}' is longer than {max_len} characters", param=name)
    return value


def prepare_entry(home: Home, params: Mapping[str, Any],
                  now: datetime) -> tuple[Path, str, dict[str, Any]]:
    """Validate knowledge.create params; (target path, file text, record fields).

    Direct authoring makes a `human`-trust record (SPEC §3.6): like memory.add, it is the API
    of whoever holds the socket, and the MCP server offers agents no way to it. The title and
    body are redacted before anything is written (the entry is derived text too).
    """
    category = params.get("category")
    directory = home.category_dir(category if isinstance(category, str) else "")
    title = redact(check_one_line(_check_str(params.get("title"), "title", 300),
                                  "title").strip())
    body = redact(_check_str(params.get("body"), "body", MAX_ENTRY_BYTES))
    author = check_author(params.get("author"))
    project = params.get("project")
    if project is not None:
        project = _check_str(project, "project", 200)
    tags = params.get("tags") or []
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise InvalidParams("'tags' must be a list of strings", param="tags")
    date = date_stamp(now)
    slug = slugify(title, classify.TITLE_SLUG_MAX).strip("-") or "entry"
    name = check_name(f"{date}-{author}-{slug}.md")
    rel = classify.unique_path(home.rel(directory), name, lambda p: (home.root / p).exists())
    meta: dict[str, Any] = {"title": title, "category": category, "author": author,
                            "date": date, "source": "knowledge.create"}
    if project:
        meta["project"] = project
    if tags:
        meta["tags"] = tags
    heading = "" if first_heading(body) else f"# {title}\n\n"
    text = render_note(meta, heading + body.rstrip("\n") + "\n")
    trust = params.get("trust") or "human"
    if trust not in ("human", "agent"):
        # The HTTP gateway passes `agent`: what a token writes never gets human trust.
        raise InvalidParams("'trust' must be human or agent", param="trust")
    fields = record_fields(rel, text, trust=trust, author=author)
    return home.root / rel, text, fields


def entry_scope(meta: dict[str, Any]) -> str:
    """The scope of the record a knowledge file with this front matter feeds."""
    project = meta.get("project")
    return f"project:{project}" if isinstance(project, str) and project else "global"


def record_fields(rel: str, text: str, *, trust: str, author: str | None) -> dict[str, Any]:
    """The record a knowledge file feeds (used by authoring and by the KB sweep)."""
    try:
        meta, body = parse_note(text)
    except FrontMatterError:
        meta, body = {}, text
    project = meta.get("project") if isinstance(meta.get("project"), str) else None
    title = meta.get("title") if isinstance(meta.get("title"), str) else None
    tags = meta.get("tags") if isinstance(meta.get("tags"), list) else []
    return {
        "type": "semantic", "scope": entry_scope(meta),
        "trust": trust,
        # A hand-made file name may hold a token between dashes, where redact() alone does
        # not see one: the name a prompt shows (source, a title from the stem) is redacted
        # as a dropped note's name is; the file keeps its path (kb_files binds by it).
        "title": redact((title or first_heading(body)
                         or classify.redacted_name(Path(rel).stem))[:500]),
        "body": redact(body.strip() or text), "source": classify.redacted_name(rel),
        "author": author or (str(meta["author"]) if meta.get("author") else None),
        "project": project, "agent": None, "task": None, "pr": None, "paths": [],
        "tags": [str(t) for t in tags][:50], "importance": 0.6, "confidence": 0.7,
        "expires_at": None, "created_at": None, "meta": {"kb_path": shown_path(rel)},
    }


def insert_record(conn: sqlite3.Connection, rel: str, text: str, fields: dict[str, Any],
                  now: datetime) -> str:
    """The record of a file SQL has no link for: a new one, or the active record that still
    holds the path's content hash (its file was deleted and is back before the watcher saw
    the deletion), which then takes this text."""
    record_id, created = records.upsert_by_hash(conn, fields, kb_index.fresh_hash(conn, rel),
                                                now)
    if not created and kb_index.record_body(conn, record_id) != fields["body"]:
        records.update_content(conn, record_id, fields["title"], fields["body"], now)
    kb_index.link_file(conn, rel, sha256(text), record_id, now)
    return record_id


def is_own_file(home: Home, path: Path) -> bool:
    """True for a regular file (not a symlink) that really lies inside the home: no symlink
    on the way (a linked category directory) leads out of it (SPEC §2)."""
    if path.is_symlink() or not path.is_file():
        return False
    root = os.path.realpath(home.root)
    return os.path.realpath(path).startswith(root + os.sep)


def entry_paths(home: Home, category: str | None = None) -> list[Path]:
    categories = [category] if category else list(KB_CATEGORIES)
    paths = []
    root = os.path.realpath(home.root) + os.sep
    for cat in categories:
        directory = home.category_dir(cat)
        if directory.is_dir() and not directory.is_symlink() \
                and os.path.realpath(directory).startswith(root):
            paths += [directory / e.name for e in os.scandir(directory)
                      if e.name.endswith(".md") and not e.name.startswith(".")
                      and e.is_file(follow_symlinks=False)]
    return paths


def read_entry_text(path: Path, warnings: ReadWarnings | None = None) -> str | None:
    """An entry's text, never through a symlink (O_NOFOLLOW); None when it cannot be opened.
    Bytes that are not UTF-8 are read as U+FFFD and `warnings` hears of it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        try:
            data = handle.read()
        except OSError:
            return None
    return decode_lenient(data, path, warnings)


def list_entries(home: Home, category: object = None,
                 warnings: ReadWarnings | None = None, project: object = None) -> dict[str, Any]:
    """Entries newest first, each with the project its front matter names (or None). With
    `project`, only that project's entries and those that name none (a gateway token bound
    to a project sees no other project's knowledge)."""
    if category is not None and not isinstance(category, str):
        raise InvalidParams("'category' must be a string", param="category")
    if project is not None and not isinstance(project, str):
        raise InvalidParams("'project' must be a string", param="project")
    entries = []
    for path in entry_paths(home, category):
        try:
            info = path.stat()
        except OSError:
            continue
        text = read_entry_text(path, warnings)
        if text is None:
            continue
        meta, body = _parsed(text)
        own = note_project(meta)
        if project is not None and own not in (None, project):
            continue
        entries.append({"path": shown_path(home.rel(path)), "category": path.parent.name,
                        "title": _title_of(meta, body, path), "project": own,
                        "updated_at": iso(datetime.fromtimestamp(info.st_mtime, UTC)),
                        "_mtime": info.st_mtime})
    entries.sort(key=lambda e: (-e["_mtime"], e["path"]))
    for entry in entries:
        del entry["_mtime"]
    return {"entries": entries}


def _parsed(text: str) -> tuple[dict[str, Any], str]:
    try:
        meta, body = parse_note(text)
    except FrontMatterError:
        return {}, text
    return (meta if isinstance(meta, dict) else {}), body


def _title_of(meta: dict[str, Any], body: str, path: Path) -> str:
    """The entry's title as listings show it: redacted, like the record the entry feeds (a
    hand-written file may hold a secret in its title or its name)."""
    title = meta.get("title")
    heading = str(title) if title else first_heading(body)
    return redact(heading) if heading else classify.redacted_name(path.stem)


def shown_path(rel: str) -> str:
    """An entry's path as it is shown: a secret in a hand-made file name redacted
    (`keys-AKIA….md` is listed as `keys-redacted-aws_access_key_id.md`, as the record's source
    says); get_entry accepts that path too."""
    return classify.redacted_name(rel)


def _entry_shown_as(home: Home, category: str, rel: str) -> Path | None:
    """The file listed as `rel` (the newest, should two hand-made names redact alike)."""
    if "redacted-" not in rel:
        return None
    found = []
    for path in entry_paths(home, category):
        try:
            if shown_path(home.rel(path)) == rel:
                found.append((path.stat().st_mtime, path))
        except OSError:
            continue
    return max(found)[1] if found else None


def get_entry(home: Home, rel: object, warnings: ReadWarnings | None = None,
              project: object = None) -> dict[str, Any]:
    if project is not None and not isinstance(project, str):
        raise InvalidParams("'project' must be a string", param="project")
    path = safe_relative(home.root, rel, "path")
    parts = Path(str(rel)).parts
    if len(parts) != 3 or parts[0] != "knowledge" or parts[1] not in KB_CATEGORIES \
            or not parts[2].endswith(".md"):
        raise InvalidParams("'path' must look like knowledge/<category>/<name>.md",
                            param="path")
    if not path.exists() and not path.is_symlink():
        path = _entry_shown_as(home, parts[1], str(rel)) or path
        if not path.exists():
            raise NotFound(f"no knowledge entry at {rel}", path=rel)
    text = read_entry_text(path, warnings) if is_own_file(home, path) else None
    if text is None:
        raise InvalidParams(f"cannot read {rel}: not a regular file inside the home (a "
                            "symlink is never followed)", param="path")
    meta, body = _parsed(text)
    own = note_project(meta)
    if project is not None and own not in (None, project):
        raise NotFound(f"no knowledge entry at {rel} in project {project}", path=rel)
    # The body is redacted on its way out, as an archived note is: a hand edit may have added
    # a secret to the file, which keeps what was written (SPEC §3.1).
    return {"path": shown_path(str(rel)), "category": parts[1],
            "title": _title_of(meta, body, path),
            "project": own, "body": redact(body)}


def write_entry(path: Path, text: str) -> None:
    create_new_text(path, text, mode=0o644)
