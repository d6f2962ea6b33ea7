"""memory.purge: a record deleted for good, an audit row in its place, and where its text still is.

A purge is for a leaked secret or a record that must go. In one write transaction it

* deletes the record's row; the FTS index follows through the delete trigger (migration 0001);
* writes the audit row (migration 0008);
* clears the note's full text from the consolidation journal (``batch_notes.content``, and a
  finished batch's digest when it quotes the note); a record whose note is not through its
  batch yet is refused (-32003), since a redo of the batch would write it again;
* records the record's KB file as known but linked to no record, so the KB sweep does not
  import it again unless someone edits it;
* rewrites the FTS index into one segment: an FTS5 delete only adds a tombstone segment, and
  until segments merge the deleted words stay readable in ``memory_fts_data``.

SQLite's ``secure_delete`` is on for that transaction, and a checkpoint afterwards moves the
zeroed pages from the WAL into the database file. Then the retrieval caches in this process
are dropped.

Files are not edited: the result names the ones that still hold the text, so the operator can
edit them (SPEC §3.2). See :func:`files_holding` for how they are found.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

import structlog

from minionsd.clock import iso
from minionsd.errors import InvalidParams, InvalidState, MinionsError, NotFound
from minionsd.fileio import read_text
from minionsd.home import Home, safe_relative
from minionsd.memory import knowledge
from minionsd.memory.app import App
from minionsd.memory.consolidate import notebooks
from minionsd.storage import journal, kb_index, purged

log = structlog.get_logger()

REASON_MAX_CHARS = 1000
# Text fragments that mark a file as holding the record: long words (keys, tokens, URLs and
# paths are long words), the start of every line or sentence of some length, and the title.
_LONG_WORD_CHARS = 16
_PIECE_MIN_CHARS = 20
_PIECE_KEEP_CHARS = 48
_TITLE_MIN_CHARS = 12
_MAX_FRAGMENTS = 400
_PIECE_SPLIT_RE = re.compile(r"\n+|(?<=[.!?])\s+")
_BULLET_RE = re.compile(r"^(?:[-*+>#]+|\d+[.)])\s+")
_WS_RE = re.compile(r"\s+")


def check_reason(reason: object) -> str:
    if not isinstance(reason, str) or not reason.strip():
        raise InvalidParams("'reason' must be a non-empty string saying why the record goes",
                            param="reason")
    if len(reason) > REASON_MAX_CHARS:
        raise InvalidParams(f"'reason' is longer than {REASON_MAX_CHARS} characters",
                            param="reason")
    return reason.strip()


def purged_error(audit: dict[str, Any]) -> NotFound:
    return NotFound(f"record {audit['id']} was purged at {audit['purged_at']}: "
                    f"{audit['reason']}", id=audit["id"], purged_at=audit["purged_at"])


def explain_missing(conn: Any, record_id: object) -> NotFound | None:
    """The not-found error for a purged id (with its reason), or None if it never was one."""
    if not isinstance(record_id, str):
        return None
    audit = purged.audit_row(conn, record_id)
    return purged_error(audit) if audit else None


# --- where the text still is -------------------------------------------------------------

def _squash(text: str) -> str:
    return _WS_RE.sub(" ", text).strip()


def fragments(title: str, body: str) -> list[str]:
    """Pieces of the record's text; a file holding any of them holds (part of) the record."""
    found: dict[str, None] = {}
    for word in body.split():
        word = word.strip("`'\"()[]{}<>,;:.")
        if len(word) >= _LONG_WORD_CHARS:
            found[word] = None
    for piece in _PIECE_SPLIT_RE.split(body):
        piece = _squash(_BULLET_RE.sub("", piece.strip()))
        if len(piece) >= _PIECE_MIN_CHARS:
            found[piece[:_PIECE_KEEP_CHARS]] = None
    if len(title.strip()) >= _TITLE_MIN_CHARS:
        found[_squash(title)] = None
    return list(found)[:_MAX_FRAGMENTS]


def locate(conn: Any, record_id: str) -> dict[str, Any]:
    """The record (or NotFound, with the purge reason for a purged id) and the files that may
    hold its text: {record, own: [rel] (its archived note and KB file), others: [rel] (shared
    files), kb: [rel] (its KB files), entry_ids: {notebook rel: the note's entry id}}."""
    row = purged.record_text(conn, record_id)
    if row is None:
        raise explain_missing(conn, record_id) or NotFound(f"no record with id {record_id!r}",
                                                           id=record_id)
    own: list[str] = []  # the record's origin: its archived note and its KB file
    kb: list[str] = kb_index.paths_of_record(conn, record_id)
    notebook_entries: dict[str, str] = {}
    others = ["notes.md", "notes/archive/notes-history.md", "pinned.md"]
    if row["source"]:
        own.append(row["source"])
        if row["source"].startswith("knowledge/"):
            kb.append(row["source"])
    authors = {row["author"], row["agent"]}
    for note in journal.notes_of_record(conn, record_id):
        own += [p for p in (note["archive_path"], note["kb_path"]) if p]
        kb += [note["kb_path"]] if note["kb_path"] else []
        authors.add(note["author"])
        notebook_entries[f"knowledge/agents/{note['author']}.md"] = note["content_hash"][:16]
    others += [f"knowledge/agents/{a}.md" for a in sorted(a for a in authors if a)]
    return {"record": row, "own": list(dict.fromkeys(own + kb)), "others": others,
            "kb": list(dict.fromkeys(kb)), "entry_ids": notebook_entries}


def kb_hashes(home: Home, found: dict[str, Any]) -> dict[str, str]:
    """The current hash of each of the record's KB files, for the unlinked kb_files rows."""
    hashes = {}
    for rel in found["kb"]:
        path = _existing(home, rel)
        text = read_text(path) if path is not None else None
        if text is not None:
            hashes[rel] = knowledge.sha256(text)
    return hashes


def _existing(home: Home, rel: str) -> Path | None:
    try:
        path = safe_relative(home.root, rel)
    except MinionsError:
        return None  # a source that is not a home path (an episode, an import)
    return path if path.is_file() else None


def files_holding(home: Home, found: dict[str, Any]) -> list[str]:
    """Home-relative paths of the files that still hold the record's text.

    The record's own files (the archived note its source names, the KB files bound to it) are
    listed when they exist: they are the note. The shared ones (notes.md, notes-history.md,
    pinned.md, the author's notebook, anything under knowledge/_swept/) and every other
    knowledge entry (one moved or copied by hand, another entry quoting it) are listed when
    they contain one of :func:`fragments`, or, for a notebook, the note's entry marker.
    Knowledge entries are read as the sweep reads them, never through a symlink.
    """
    record = found["record"]
    pieces = [_squash(p) for p in fragments(record["title"] or "", record["body"] or "")]
    listed = [rel for rel in found["own"] if _existing(home, rel)]
    shared = list(found["others"])
    if home.swept.is_dir():
        shared += sorted(home.rel(p) for p in home.swept.glob("*.md"))
    for rel in shared:
        path = _existing(home, rel)
        if path is None or rel in listed:
            continue
        text = read_text(path)
        if text is None:
            continue
        entry = found["entry_ids"].get(rel)
        if (entry and notebooks.has_entry(text, entry)) or _holds(_squash(text), pieces):
            listed.append(rel)
    for path in sorted(knowledge.entry_paths(home)):
        rel = home.rel(path)
        if rel in listed:
            continue
        text = knowledge.read_entry_text(path)
        if text is not None and _holds(_squash(text), pieces):
            listed.append(rel)
    return listed


def _holds(text: str, pieces: Iterable[str]) -> bool:
    return any(piece and piece in text for piece in pieces)


# --- the purge itself --------------------------------------------------------------------

def delete_record(conn: Any, record_id: str, reason: str, now: datetime,
                  files: list[str], kb_files: dict[str, str]) -> None:
    """The write transaction of a purge (see the module docstring)."""
    row = purged.record_text(conn, record_id)
    if row is None:
        raise explain_missing(conn, record_id) or NotFound(f"no record with id {record_id!r}",
                                                           id=record_id)
    with purged.secure_delete(conn):
        notes = journal.notes_of_record(conn, record_id)
        for note in notes:
            if not note["done"]:
                # Its batch would write the record again when it is redone.
                raise InvalidState(f"record {record_id} comes from note {note['name']}, whose "
                                   f"consolidation batch {note['batch_id']} has not finished; "
                                   "purge it when the batch is done", id=record_id)
        purged.delete_for_good(conn, record_id, reason, now, row["source"], files)
        pieces = fragments(row["title"] or "", row["body"] or "")
        for note in notes:
            # A finished note's text is not read again, not even by a redo of its batch.
            journal.clear_content(conn, note["batch_id"], note["name"])
            if note["state"] != "done":
                continue  # the redo may still need the digest
            digest = journal.digest_of(conn, note["batch_id"])
            if digest and _holds(_squash(digest), [_squash(p) for p in pieces]):
                journal.drop_digest(conn, note["batch_id"])
        # The KB file stays linked to no record at its current hash: the sweep takes it as
        # known and unchanged, and imports it again only after someone edits it.
        kb_index.unlink_record(conn, record_id)
        for rel, digest in kb_files.items():
            kb_index.keep_unlinked(conn, rel, digest, now)
        purged.merge_index(conn)


def forget_in_memory(app: App) -> None:
    """Drop this process's retrieval caches, which may hold the record's text or words."""
    if app.recall_index is not None:
        app.recall_index.forget()


async def purge(app: App, record_id: object, reason: object) -> dict[str, Any]:
    """memory.purge {id, reason} -> {id, purged_at, files}."""
    if not isinstance(record_id, str) or not record_id:
        raise InvalidParams("'id' must be a non-empty string", param="id")
    reason = check_reason(reason)
    found = await app.db.read(locate, record_id)
    files = await asyncio.to_thread(files_holding, app.home, found)
    hashes = await asyncio.to_thread(kb_hashes, app.home, found)
    now = app.now()
    await app.db.write(delete_record, record_id, reason, now, files, hashes)
    checkpointed = await asyncio.to_thread(purged.checkpoint, app.home.db)
    busy = checkpointed if isinstance(checkpointed, str) else checkpointed[0]
    forget_in_memory(app)
    log.info("memory.purged", id=record_id, files=len(files), checkpoint_busy=busy)
    return {"id": record_id, "purged_at": iso(now), "files": files}
