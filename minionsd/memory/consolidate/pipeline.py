"""Consolidation: inbox batch -> digest, KB entries, notebooks, SQL records, archive.

One batch at a time. The batch is journalled first (journal.py); then, in SPEC order, the
digest is appended to notes.md, every note becomes a KB entry, notes by configured agents are
appended to their notebooks, one record per note is upserted, and the files are archived. Each
step first checks whether it already happened (entry-id markers in Markdown, the recorded KB
and archive paths, the record's content hash), so re-running an interrupted batch is safe.

The work runs on a worker thread; `abandon()` makes it stop at the next step boundary, leaving
the journal open for the next start.
"""

from __future__ import annotations

import dataclasses
import os
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import structlog

from minionsd.clock import date_stamp
from minionsd.fileio import (
    append_synced,
    atomic_write_text,
    atomic_write_through,
    lock_for,
    read_tail,
    read_text,
)
from minionsd.memory.app import App
from minionsd.memory.consolidate import findings, notebook_append
from minionsd.memory.consolidate.breaker import content_hash, find_storm
from minionsd.memory.consolidate.filing import Filing
from minionsd.memory.consolidate.recording import Recording, short
from minionsd.memory.consolidate.regex_digest import regex_digest
from minionsd.memory.consolidate.types import Abandoned, DigestNote
from minionsd.memory.inbox import Inbox, InboxNote
from minionsd.storage import journal, submissions
from minionsd.text import notesfile
from minionsd.text.markdown import LargeNotes
from minionsd.text.redact import redact

log = structlog.get_logger()

@dataclass
class BatchResult:
    mode: str = "nothing"
    notes: int = 0
    archived: list[str] = field(default_factory=list)
    records_upserted: int = 0
    kb_entries: list[str] = field(default_factory=list)
    notebooks: dict[str, int] = field(default_factory=dict)

    def to_wire(self) -> dict[str, Any]:
        return {"mode": self.mode, "notes": self.notes, "archived": self.archived,
                "records_upserted": self.records_upserted, "kb_entries": self.kb_entries,
                "notebooks": self.notebooks}


@dataclass(frozen=True)
class InboxState:
    notes: list[InboxNote]  # every processable note, oldest first; held ones flagged
    busy: set[str]  # names in an open (interrupted or running) batch
    submitted: frozenset[str] = frozenset()  # written by inbox.submit (no settling time)

    def is_eligible(self, note: InboxNote) -> bool:
        return note.settled and not note.held and note.name not in self.busy

    def eligible(self) -> list[InboxNote]:
        return [n for n in self.notes if self.is_eligible(n)]


class Pipeline:
    """Runs batches synchronously (call from a worker thread)."""

    def __init__(self, app: App, inbox: Inbox, *,
                 submit_note: Callable[[dict[str, Any]], Any],
                 crash_at: Callable[[str], None] | None = None) -> None:
        self.app = app
        self.inbox = inbox
        # Writes the storm alert through inbox.submit's code (its duplicate rule makes a redo
        # of the same batch write nothing).
        self._submit_note = submit_note
        self._abandon = threading.Event()
        self._history_warned = False  # status names a notes-history.md leading out of the home
        self.redo_failure: Exception | None = None  # why an open batch's last redo failed
        # Test-only fault injection: set by the entry point from MINIONS_TEST_CRASH_AT.
        self._crash_at: Callable[[str], None] = crash_at or (lambda step: None)
        self.filing = Filing(app, self._step)
        self.recording = Recording(app, inbox, self.filing, self._step)

    def abandon(self) -> None:
        self._abandon.set()

    def _step(self, name: str) -> None:
        self._crash_at(name)
        if self._abandon.is_set():
            raise Abandoned(name)

    # --- selecting a batch -------------------------------------------------------------------

    def inbox_state(self) -> InboxState:
        """The inbox as consolidation sees it: one directory scan plus holds and open batches.

        The database part reads only rows about the files now in the inbox, on the light
        lane, so `status` and `inbox.list` answer at once while searches keep the readers
        busy. (A file that arrives after the listing only waits out its settling time.)
        """
        cfg = self.app.config
        try:
            names = [entry.name for entry in os.scandir(self.app.home.inbox)]
        except FileNotFoundError:
            names = []
        holds, busy, submitted = self.app.db.read_light_blocking(_inbox_reads, names)
        notes = self.inbox.scan(max_bytes=cfg["engine.inbox_max_note_bytes"],
                                settle_ms=cfg["engine.inbox_settle_ms"], held_names=holds,
                                configured_agents=cfg.agents, complete_names=submitted)
        return InboxState(notes, busy, submitted)

    def eligible(self) -> list[InboxNote]:
        return self.inbox_state().eligible()

    def work_state(self) -> str:
        """"work": a batch should run now; "wait": notes are still settling; else "idle"."""
        return self.work_plan()[0]

    def work_plan(self) -> tuple[str, float | None]:
        """(work_state, seconds until the oldest eligible note reaches its wait bound).

        The second value is None when no wait bound is pending (no eligible note, the bound
        is off, or a batch is due anyway).
        """
        if self.app.db.read_blocking(journal.open_batch_ids):
            return "work", None
        state = self.inbox_state()
        eligible = state.eligible()
        if len(eligible) >= self.app.config["engine.inbox_consolidate_threshold"]:
            return "work", None
        due_in = self._wait_due_in(eligible, state.submitted)
        if due_in is not None and due_in <= 0:
            return "work", None
        return ("wait" if any(not n.settled for n in state.notes) else "idle"), due_in

    def _waited_enough(self, eligible: list[InboxNote], submitted: frozenset[str]) -> bool:
        due_in = self._wait_due_in(eligible, submitted)
        return due_in is not None and due_in <= 0

    def _wait_due_in(self, eligible: list[InboxNote], submitted: frozenset[str]) -> float | None:
        """Seconds until the oldest eligible note has waited engine.inbox_max_wait_s since it
        settled (<= 0: it has); None when the bound is off (0) or nothing is eligible."""
        max_wait = self.app.config["engine.inbox_max_wait_s"]
        if not max_wait or not eligible:
            return None
        settle_s = self.app.config["engine.inbox_settle_ms"] / 1000
        settled_at = min(self.inbox.clock_time(n) + (0 if n.name in submitted else settle_s)
                         for n in eligible)
        return settled_at + max_wait - time.time()

    def run(self, force: bool) -> BatchResult:
        """Finish any open batch, then start a new one if enough notes wait."""
        recovered = self.recover()
        if recovered is not None and self.redo_failure is None:
            return recovered
        state = self.inbox_state()
        notes = findings.screen(self.app, self.inbox, state.eligible())
        threshold = self.app.config["engine.inbox_consolidate_threshold"]
        if not notes or (not force and len(notes) < threshold
                         and not self._waited_enough(notes, state.submitted)):
            if self.redo_failure is not None:  # nothing else ran: that batch is the news
                raise self.redo_failure
            return recovered or BatchResult()
        batch = notes[: self.app.config["engine.consolidation_max_batch"]]
        batch_id = self._journal(batch)
        return self.execute(batch_id)

    def recover(self) -> BatchResult | None:
        """Redo open batches. One that fails is logged and stays open for the next try (its
        notes are not picked again meanwhile), so neither start-up nor later batches wait on
        it; a note that alone cannot be stored is set aside (see _upsert_records). The last
        redo's error is kept in `redo_failure` (None when every open batch ran through), so
        the caller can report it: run() raises it when no other batch runs."""
        result = None
        self.redo_failure = None
        for batch_id in self.app.db.read_blocking(journal.open_batch_ids):
            log.info("consolidation.resume", batch=batch_id)
            try:
                result = self.execute(batch_id)
            except Abandoned:
                raise
            except Exception as exc:
                log.exception("consolidation.resume_failed", batch=batch_id,
                              error=short(exc))
                self.redo_failure = exc
        return result

    def _journal(self, batch: list[InboxNote]) -> str:
        now = self.app.now()
        hashes = [content_hash(n.content) for n in batch]
        storm = find_storm(hashes)
        rows = []
        for note, digest in zip(batch, hashes, strict=True):
            role = "note"
            if storm is not None:
                if digest != storm:
                    continue  # minority notes wait in the inbox for the next batch
                role = "storm"
            rows.append({"name": note.name, "content": note.content,
                         "content_hash": digest, "author": note.author, "role": role})
        batch_id = f"B-{now.strftime('%Y%m%dT%H%M%S')}-{secrets.token_hex(3)}"
        self.app.db.write_blocking(journal.create, batch_id, date_stamp(now), now, rows)
        log.info("consolidation.batch_started", batch=batch_id, notes=len(rows),
                 storm=storm is not None)
        return batch_id

    # --- executing a journalled batch ---------------------------------------------------------

    def execute(self, batch_id: str) -> BatchResult:
        # Every step asks about each note's front matter and body: a large note is split
        # once for the whole batch (small ones are remembered anyway).
        with LargeNotes():
            return self._execute(batch_id)

    def _execute(self, batch_id: str) -> BatchResult:
        # The plan (archive and KB paths) is decided in memory and journalled with the digest
        # in one transaction before the first file is written (see _digest).
        loaded = self.app.db.read_blocking(journal.load, batch_id)
        plan = self.filing.plan_archive(loaded)
        batch = journal.with_fields(loaded, plan)
        # KB names come from titles, so they are chosen from the redacted text. Every derived
        # surface sees the redacted text; only the archive keeps the note as written.
        # redact() is deterministic, so a redo derives the same text. Once per note per run.
        redacted = _redacted(batch)
        kb_plan = self.filing.plan_kb(redacted)
        plan += kb_plan
        batch = journal.with_fields(batch, kb_plan)
        self._step("start")
        storm = any(n.role == "storm" for n in batch.notes)
        result = BatchResult()
        if storm:
            result.mode = "circuit_breaker"
            self.app.db.write_blocking(journal.decide, batch.id, plan, result.mode, None)
            self._write_storm_alert(batch)
        else:
            derived = journal.with_fields(redacted, kb_plan)
            mode, digest = self._digest(derived, plan)
            result.mode = mode
            self._append_digest(derived, digest)
            result.kb_entries = self.filing.write_kb_entries(derived)
            result.notebooks = notebook_append.append_batch(self.app, derived, self._step,
                                                             self.filing.unsynced)
            result.records_upserted = self.recording.upsert(derived)
        result.archived, moved = self.filing.archive(batch)
        result.notes = len(result.archived)
        self._step("finish")
        self.app.db.write_blocking(journal.finish, batch_id, self.app.now(), storm, moved)
        log.info("consolidation.batch_done", batch=batch_id, mode=result.mode,
                 notes=result.notes)
        return result

    def _digest(self, batch: journal.Batch, plan: journal.Updates) -> tuple[str, str]:
        """The batch's digest, journalled with `plan` in one transaction (a redo reuses a
        journalled one)."""
        if batch.mode is not None:
            if plan:  # paths a redo had to choose again
                self.app.db.write_blocking(journal.decide, batch.id, plan, None, None)
            return batch.mode, batch.digest or ""
        notes = [DigestNote(n.name, n.author, n.content, kb_path=n.kb_path)
                 for n in batch.notes]
        # The regex digest copies nothing from notes.md (it only asks whether a line's words
        # are already there), so it reads the file as it is; the prompt gets it redacted.
        existing = read_text(self.app.home.notes, self.app.file_warnings) or ""
        digest = self._llm_digest(notes, batch.date, existing)
        mode = "llm" if digest else "regex"
        if digest:
            self.app.note_event("llm_ok", purpose="digest")
        if digest is None:
            digest = regex_digest(notes, batch.date, existing)
        self._step("digest")
        self.app.db.write_blocking(journal.decide, batch.id, plan, mode, digest)
        return mode, digest

    def _llm_digest(self, notes: list[DigestNote], date: str, existing: str) -> str | None:
        api_key = self.app.llm_api_key()
        if not api_key:
            return None
        # Imported here: the SDK takes seconds to import and most homes run without a key.
        from minionsd.memory.consolidate import llm_digest

        # notes.md may predate redaction; what goes into a prompt is redacted either way.
        existing = redact(existing)
        cfg = self.app.config
        return llm_digest.request_digest(
            notes, model=cfg["llm.model"], api_key=api_key,
            base_url=cfg["llm.base_url"] or None, timeout_s=cfg["llm.timeout_s"],
            max_retries=cfg["llm.max_retries"], date=date, existing_notes=existing,
            kb_paths={n.name: n.kb_path for n in notes if n.kb_path},
            on_failure=lambda reason: self.app.note_event("llm_failure", purpose="digest",
                                                          reason=reason))

    def _append_digest(self, batch: journal.Batch, digest: str) -> None:
        notes_path = self.app.home.notes
        with lock_for(notes_path):
            current = read_text(notes_path, self.app.file_warnings)
            if current is not None and notesfile.contains_entry(current, batch.id):
                return
            if batch.mode is not None and self._in_history(batch.id):
                return  # a redo: later batches' bounding already moved this digest out
            text = notesfile.append_section(current, notesfile.render_section(digest, batch.id))
            kept, moved = notesfile.bound_notes(text, self.app.config["engine.notes_max_bytes"])
            self._step("notes")
            if moved and self._history_leads_out():
                kept = text  # never followed out of the home (SPEC §2): notes.md keeps them
            elif moved:
                self._move_to_history(moved, text)
            atomic_write_text(notes_path, kept)

    def _history_leads_out(self) -> bool:
        """Whether notes-history.md (or notes/archive/) is a symlink leading out of the home:
        such a link is never followed (SPEC §2), neither read nor appended to. The sections
        bounding would move there stay in notes.md, and status.warnings names the link until
        it is replaced by a file or by a link inside the home."""
        history = self.app.home.notes_history
        try:
            inside = history.resolve().is_relative_to(self.app.home.root.resolve())
            what = "a symlink leading out of the home"
        except (OSError, RuntimeError):  # a symlink loop (RuntimeError before Python 3.13)
            inside, what = False, "a symlink that does not resolve (a loop)"
        if inside:
            if self._history_warned:
                self._history_warned = False
                self.app.file_warnings.forget(history)
            return False
        self._history_warned = True
        self.app.file_warnings.replaced(
            history, f"{what}: never followed, so digest sections beyond "
                     "engine.notes_max_bytes stay in notes.md until the link is replaced by a "
                     "file (or a link inside the home)")
        return True

    def _move_to_history(self, moved: str, bounded: str) -> None:
        """History first: a redo after a crash between the two writes finds the sections
        already at the history's end and skips them (and completes one a crash cut short), so
        none is lost or doubled. Only the end of the history is read, and the sections are
        appended: a year of history is not rewritten each batch.

        The end read is twice `bounded`, the notes.md text being bounded: whatever a crashed
        append wrote is still in notes.md, so it is all in that end even when the redo moves
        fewer sections (the bound was raised meanwhile)."""
        history = self.app.home.notes_history
        with lock_for(history):
            window = 2 * len(bounded.encode("utf-8")) + 4096
            tail = read_tail(history, window)
            if tail is None or (len(tail) < window and not tail.strip()):
                atomic_write_through(history, notesfile.append_history(None, moved))
                addition = b""
            else:
                addition = notesfile.history_addition(tail, moved)
            if addition:
                append_synced(history, addition)
        self._step("history")

    def _in_history(self, batch_id: str) -> bool:
        # Written only under the notes.md lock, which the caller holds (only on a redo).
        if self._history_leads_out():
            return False
        text = read_text(self.app.home.notes_history, self.app.file_warnings)
        return text is not None and notesfile.contains_entry(text, batch_id)

    def _write_storm_alert(self, batch: journal.Batch) -> None:
        sample = batch.notes[0]
        body = (f"# Duplicate storm stopped\n\n{len(batch.notes)} copies of one note "
                f"(first: {sample.name}, author {sample.author}) arrived in one batch. "
                "They were archived without digest, KB, notebook or SQL writes.\n")
        self._step("alert")
        self._submit_note({"body": body, "author": "engine", "kind": "alert",
                           "title": f"duplicate storm {batch.id}"})


def _redacted(batch: journal.Batch) -> journal.Batch:
    """The batch with each note's content redacted (names, hashes and paths unchanged)."""
    notes = [dataclasses.replace(n, content=redact(n.content)) for n in batch.notes]
    return dataclasses.replace(batch, notes=notes)


def _inbox_reads(conn: Any, names: list[str]) -> tuple[set[str], set[str], frozenset[str]]:
    """Holds, names in open batches, and which of `names` inbox.submit wrote."""
    return (submissions.held_names(conn), journal.names_in_open_batches(conn),
            submissions.submitted_among(conn, names))


