"""A batch's notes as SQL records: one record per note, upserted by its content hash.

The records of a batch are written in one transaction. If that fails because of one note
(a value SQLite refuses), they are written one by one and a note whose record alone cannot be
stored is set aside: quarantined with the reason, while its digest line, KB entry, notebook
entry and archived copy are made as for any note. A failure that would hit any note (disk
full, I/O error, shutdown) keeps the batch open for a later try instead.
"""

from __future__ import annotations

import dataclasses
import re
import sqlite3
from collections.abc import Callable
from typing import Any

import structlog

from minionsd.fileio import read_text
from minionsd.memory.app import App
from minionsd.memory.consolidate import classify, gist
from minionsd.memory.consolidate.breaker import content_hash
from minionsd.memory.consolidate.filing import Filing, safe_meta, strip_front_matter
from minionsd.memory.consolidate.types import Abandoned
from minionsd.memory.identity import ENGINE, author_trust
from minionsd.memory.inbox import Inbox, note_kind
from minionsd.storage import journal, kb_index, records, submissions
from minionsd.text.markdown import note_parts

log = structlog.get_logger()

DEFAULT_IMPORTANCE = 0.5
_PATH_RE = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)+[\w.-]+\.[A-Za-z0-9]{1,8})(?![\w/])")


class Recording:
    def __init__(self, app: App, inbox: Inbox, filing: Filing,
                 step: Callable[[str], None]) -> None:
        self.app = app
        self.inbox = inbox
        self.filing = filing
        self._step = step  # the pipeline's step boundary (abandon / crash point)

    def upsert(self, batch: journal.Batch) -> int:
        # The daemon's own alerts are the only `engine` notes it vouches for: their names were
        # claimed through inbox.submit's code, which refuses `engine` from anyone else.
        claimed = self.app.db.read_blocking(submissions.submitted_among,
                                            [n.name for n in batch.notes if n.author == ENGINE])
        fields = [(note, self._record_fields(note, batch, note.name in claimed))
                  for note in batch.notes if not note.done]
        # The index columns are derived beside the writer, as memory.add's are (with the
        # remembered stems); a record whose derivation fails is derived again, and fails
        # alone, in the writer's transaction.
        derived = self.app.db.prepare_blocking(records.derive_many,
                                               [values for _note, values in fields])
        fields = [(note, made if isinstance(made, dict) else values)
                  for (note, values), made in zip(fields, derived, strict=True)]
        # Where each entry really went (a taken name is chosen again while writing it).
        kb_paths = {n.name: n.kb_path for n in
                    self.app.db.read_blocking(journal.load, batch.id).notes}
        notes = {n.name: dataclasses.replace(n, kb_path=kb_paths.get(n.name))
                 for n in batch.notes}
        digests = {name: self.filing.entry_digest(batch, note) for name, note in notes.items()
                   if note.kb_path and (self.app.home.root / note.kb_path).is_file()}
        self._step("sql")

        def upsert_all(conn: Any, fields: list[tuple[journal.JournalNote, Any]]) -> int:
            now = self.app.now()
            inserted = 0
            for note, values in fields:
                record_id, created = records.upsert_by_hash(conn, values, note.content_hash,
                                                            now)
                journal.set_note(conn, batch.id, note.name, record_id=record_id)
                digest = digests.get(note.name)
                if digest:  # the note's KB entry feeds this record: one file, one record
                    kb_index.link_file(conn, notes[note.name].kb_path, digest, record_id, now)
                inserted += 1 if created else 0
            return inserted

        try:
            self.app.db.write_blocking(upsert_all, fields)
            return len(fields)
        except Exception as exc:
            if not_the_notes_fault(exc):
                raise
            log.warning("consolidation.records_retried_one_by_one", batch=batch.id,
                        error=short(exc))
        stored = 0
        for note, values in fields:
            try:
                self.app.db.write_blocking(upsert_all, [(note, values)])
                stored += 1
            except Exception as exc:
                if not_the_notes_fault(exc):
                    raise
                self._set_aside(batch, note, exc)
        return stored

    def _set_aside(self, batch: journal.Batch, note: journal.JournalNote,
                   exc: BaseException) -> None:
        """A note whose record cannot be stored: the batch goes on without that record (its
        digest, KB entry, notebook entry and archived copy are written as for any note) and
        the inbox file goes to the quarantine with the reason, for an operator to requeue."""
        reason = (f"its memory record cannot be stored ({short(exc)}); the note is archived "
                  f"as {Filing.archive_rel(batch, note)}")
        log.error("consolidation.note_set_aside", batch=batch.id, name=note.name,
                  reason=reason)
        # Only the file this batch read (by hash: `note` may be the redacted copy): a
        # rewritten one is a new note, and a redo after a crash finds it gone.
        current = read_text(self.app.home.inbox / note.name)
        if current is not None and content_hash(current) == note.content_hash:
            self.inbox.quarantine(note.name, reason)

    def _record_fields(self, note: journal.JournalNote, batch: journal.Batch,
                       daemon_wrote: bool) -> dict[str, Any]:
        meta = safe_meta(note.content)
        body = note_body(note.content)
        project = meta.get("project") if isinstance(meta.get("project"), str) else None
        trust = author_trust(note.author, self.app.human_authors(), daemon_wrote=daemon_wrote,
                             declared=meta.get("trust"))
        tags = meta.get("tags")
        tags = [str(t) for t in tags] if isinstance(tags, list) else []
        importance = meta.get("importance")
        if isinstance(importance, bool) or not isinstance(importance, int | float) \
                or not 0 <= importance <= 1:
            importance = DEFAULT_IMPORTANCE
        archive_rel = Filing.archive_rel(batch, note)
        task = meta.get("task")
        pr = meta.get("pr")
        return {
            "type": "semantic", "scope": f"project:{project}" if project else "global",
            "trust": trust, "title": note_title(note)[:500], "body": body or note.content,
            "source": archive_rel, "author": note.author[:200], "project": project,
            "agent": note.author if trust == "agent" else None,
            "task": str(task)[:200] if task is not None else None,
            "pr": str(pr)[:200] if pr is not None else None,
            "paths": mentioned_paths(body), "tags": tags[:50],
            "importance": float(importance), "confidence": 0.5,
            "expires_at": None, "created_at": None,
            "meta": {"inbox_name": classify.redacted_name(note.name), "batch": batch.id,
                     "kind": note_kind(meta)},
        }


# SQLite result codes (low byte) that say the database or the disk failed, not the note.
_ENVIRONMENT_CODES = {5, 6, 7, 8, 9, 10, 11, 13, 14, 15, 26}  # BUSY .. CORRUPT, FULL, NOTADB

def not_the_notes_fault(exc: BaseException) -> bool:
    """True for failures that would hit any note (disk full, I/O error, shutdown): those
    keep the batch open for a later try instead of setting its notes aside."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, Abandoned | OSError | MemoryError):
            return True
        if type(cause) is RuntimeError:  # e.g. the database closed at shutdown
            return True
        if isinstance(cause, sqlite3.Error):
            code = getattr(cause, "sqlite_errorcode", None)
            return code is not None and code & 0xFF in _ENVIRONMENT_CODES
        cause = cause.__cause__
    return False

def short(exc: BaseException, limit: int = 300) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= limit else text[:limit] + "…"

def mentioned_paths(text: str, limit: int = 50) -> list[str]:
    if "/" not in text:
        return []  # every path _PATH_RE finds has one
    return list(dict.fromkeys(_PATH_RE.findall(text)))[:limit]

def note_body(content: str) -> str:
    body = note_parts(content).body
    return (strip_front_matter(content) if body is None else body).strip()

def note_title(note: journal.JournalNote) -> str:
    """Front matter `title`, else the first heading, else the first sentence (gist.py)."""
    return gist.note_title(note.content)
