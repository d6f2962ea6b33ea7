"""Filing a batch's notes: each note's KB entry and its archived original.

Both paths are chosen once and journalled before anything is written (records and KB entries
cite the archive path; the digest links the KB path), then acted on. Every action first checks
whether it already happened (an entry carrying this note's `entry_id`, an archive copy already
in place), so a redo after a crash files each note exactly once, in the same place.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from minionsd.fileio import (
    atomic_write_text,
    create_from_temp,
    create_new_text,
    flush_to_disk,
    read_text,
    write_temp_unsynced,
)
from minionsd.memory.app import App
from minionsd.memory.consolidate import classify, kb_staging
from minionsd.storage import journal
from minionsd.text.markdown import FrontMatterError, note_parts


class Filing:
    def __init__(self, app: App, step: Callable[[str], None]) -> None:
        self.app = app
        self._step = step  # the pipeline's step boundary (abandon / crash point)
        # KB entry texts rendered during this batch (written, then hashed for the KB index):
        # rendering runs the YAML emitter, so each entry is rendered once.
        self._texts: dict[tuple[str, ...], str] = {}
        # Directories whose new names the batch has not flushed yet: each is flushed with the
        # batch's next flush, and always before the commit that relies on its files (the KB
        # entries' before the records commit, notebooks' before the batch is closed).
        self.unsynced: list[Path] = []

    def write_kb_entries(self, batch: journal.Batch) -> list[str]:
        """Every note's KB entry, written with a bounded number of disk syncs: each new entry
        is first written to a temp file, all temps are flushed at once, then each is linked to
        its name (never overwriting) and the directories are flushed. A name is therefore only
        ever given to a complete entry, as with create_new_text. The temps are written under
        engine/ (kb_staging), outside the watched knowledge/ tree, so the knowledge watcher
        sees one event per entry instead of five."""
        home = self.app.home
        rels: list[str | None] = []
        staged: dict[int, tuple[journal.JournalNote, Path, Path]] = {}
        notes = [note for note in batch.notes if not note.done]
        staging = kb_staging.Staging(home.engine / kb_staging.DIRECTORY)
        for index, note in enumerate(notes):
            rel = self._kb_path(batch, note)
            target = home.root / rel
            if not target.exists():
                category = classify.classify(note.name, note.content)
                text = self._entry_text(note, category, batch.date)
                staged[index] = (note, target, write_temp_unsynced(
                    staging.temp_beside(target), text, mode=0o644))
            rels.append(rel)
        try:
            flush_to_disk([tmp for _, _, tmp in staged.values()])
            for index, (note, target, tmp) in staged.items():
                self._step("kb")
                try:
                    create_from_temp(tmp, target)
                except FileExistsError:  # another writer took the name: the slow way
                    rels[index] = self._ensure_kb_entry(batch, note, stepped=True)
        finally:
            for _, _, tmp in staged.values():
                tmp.unlink(missing_ok=True)
        # The new names are flushed with the next files of the batch (its notebooks), before
        # the commit of its records that links them: see unsynced.
        self.unsynced += [target.parent for _, target, _ in staged.values()]
        return [rel for rel in rels if rel is not None]

    def _kb_path(self, batch: journal.Batch, note: journal.JournalNote) -> str:
        """The note's journalled KB path, or a new one (journalled) when the journalled path
        holds someone else's file."""
        home = self.app.home
        rel = note.kb_path
        if rel is None or not self._is_our_entry(home.root / rel, note):
            category = classify.classify(note.name, note.content)
            directory = home.rel(home.category_dir(category))
            name = classify.entry_name(batch.date, note.author, note.name, note.content)
            # A name already holding this note's entry is reused, so a redo never writes a
            # second copy even when the chosen path was not journalled.
            rel = classify.unique_path(
                directory, name, lambda p: not self._is_our_entry(home.root / p, note))
            self.app.db.write_blocking(journal.set_note, batch.id, note.name, kb_path=rel)
        return rel

    def plan_kb(self, batch: journal.Batch) -> journal.Updates:
        """Fix every note's KB path before the digest, which links to it (SPEC §3.1).

        The caller journals the paths (with the digest, journal.decide) before writing any
        file, so a redo links and writes the same files; a path that someone else's file took
        meanwhile is chosen again when the entry is written.
        """
        if any(n.role == "storm" for n in batch.notes) or batch.mode is not None:
            return []
        home = self.app.home
        taken = {n.kb_path for n in batch.notes if n.kb_path}
        chosen: list[tuple[str, dict[str, Any]]] = []
        for note in batch.notes:
            if note.kb_path is not None or note.done:
                continue
            category = classify.classify(note.name, note.content)
            name = classify.entry_name(batch.date, note.author, note.name, note.content)
            rel = classify.unique_path(
                home.rel(home.category_dir(category)), name,
                lambda p, n=note: p in taken or not self._is_our_entry(home.root / p, n))
            chosen.append((note.name, {"kb_path": rel}))
            taken.add(rel)
        return chosen

    def _ensure_kb_entry(self, batch: journal.Batch, note: journal.JournalNote,
                         stepped: bool = False) -> str:
        home = self.app.home
        category = classify.classify(note.name, note.content)
        rel = note.kb_path
        while True:
            if rel is None or not self._is_our_entry(home.root / rel, note):
                directory = home.rel(home.category_dir(category))
                name = classify.entry_name(batch.date, note.author, note.name, note.content)
                # A name already holding this note's entry is reused, so a redo never writes
                # a second copy even when the chosen path was not journalled.
                rel = classify.unique_path(
                    directory, name, lambda p: not self._is_our_entry(home.root / p, note))
                self.app.db.write_blocking(journal.set_note, batch.id, note.name, kb_path=rel)
            target = home.root / rel
            if target.exists():
                return rel
            if not stepped:
                self._step("kb")
            stepped = False
            try:
                create_new_text(target, self._entry_text(note, category, batch.date),
                                mode=0o644)
                return rel
            except FileExistsError:
                rel = None  # another writer took the name since we chose it: choose again

    def entry_digest(self, batch: journal.Batch, note: journal.JournalNote) -> str | None:
        """sha256 of the KB entry this batch writes for `note` (as the KB index keeps it),
        or None when the note gets no entry."""
        if note.kb_path is None:
            return None
        category = classify.classify(note.name, note.content)
        text = self._entry_text(note, category, batch.date)
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()

    def _entry_text(self, note: journal.JournalNote, category: str, date: str) -> str:
        source = note.archive_path or f"notes/inbox/{note.name}"
        key = (note.content, note.content_hash, source, note.author, category, date)
        text = self._texts.get(key)
        if text is None:
            text = self._texts[key] = self._render_entry(note, source, category, date)
        return text

    @staticmethod
    def _render_entry(note: journal.JournalNote, source: str, category: str, date: str) -> str:
        extra = {"entry_id": note.content_hash[:16]}
        try:
            return classify.render_entry(note.content, source=source, agent=note.author,
                                         category=category, date=date, extra=extra)
        except FrontMatterError:
            return classify.render_entry(strip_front_matter(note.content), source=source,
                                         agent=note.author, category=category, date=date,
                                         extra=extra)

    @staticmethod
    def _is_our_entry(path: Path, note: journal.JournalNote) -> bool:
        text = read_text(path)
        if text is None:
            return True
        return str(safe_meta(text).get("entry_id")) == note.content_hash[:16]

    @staticmethod
    def archive_rel(batch: journal.Batch, note: journal.JournalNote) -> str:
        if note.archive_path:
            return note.archive_path
        return f"notes/archive/{classify.archive_name(batch.date, note.name)}"

    def plan_archive(self, batch: journal.Batch) -> journal.Updates:
        """Fix every note's archive path up front: records and KB entries cite it. The caller
        journals the paths (journal.decide) before any file is written."""
        self._texts.clear()  # a new batch (plan_archive is its first step)
        self.unsynced = []
        home = self.app.home
        taken: set[str] = set()
        chosen: list[tuple[str, dict[str, Any]]] = []
        for note in batch.notes:
            if note.archive_path is None:
                rel = classify.unique_path(
                    home.rel(home.archive), classify.archive_name(batch.date, note.name),
                    lambda p, text=note.content: p in taken or _holds_other(home.root / p, text))
                chosen.append((note.name, {"archive_path": rel}))
                taken.add(rel)
        return chosen

    def archive(self, batch: journal.Batch) -> tuple[list[str], list[str]]:
        """Move every note to its archive path and flush the two directories once (with any
        the batch left unflushed: its notebooks'); returns
        (every note's archive path, the names moved now). The caller marks the moved notes
        done when it closes the batch (journal.finish). A crash in between redoes the
        marking: a note already in the archive is recognised there (see _move_to_archive)."""
        home = self.app.home
        archived = []
        moved: list[str] = []
        directories: list[Path] = []
        for note in batch.notes:
            rel = self.archive_rel(batch, note)
            if not note.done:
                self._step("archive")
                self._move_to_archive(home.inbox / note.name, home.root / rel, note)
                moved.append(note.name)
                directories.append((home.root / rel).parent)
            archived.append(rel)
        if moved or self.unsynced:
            flush_to_disk(list(dict.fromkeys([*self.unsynced, home.inbox, *directories])))
            self.unsynced = []
        return archived, moved

    @staticmethod
    def _move_to_archive(source: Path, target: Path, note: journal.JournalNote) -> None:
        """Archive the note as written, owner-only (0600): it is the one unredacted copy."""
        if target.exists():
            if source.exists() and read_text(source) == note.content:
                source.unlink()  # already copied before a crash; the inbox copy is redundant
            os.chmod(target, 0o600)
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            current = source.read_bytes()
        except FileNotFoundError:
            current = None
        if current is not None and current.decode("utf-8", "replace") == note.content:
            os.rename(source, target)
            os.chmod(target, 0o600)
            os.utime(target)  # retention counts from here, not from when the note was written
        else:
            # The inbox file vanished or was rewritten since the batch began: archive what
            # the batch processed; a rewritten file stays in the inbox as a new note.
            atomic_write_text(target, note.content)


def safe_meta(content: str) -> dict[str, Any]:
    return dict(note_parts(content).checked)  # empty when the block cannot be read


def strip_front_matter(content: str) -> str:
    if content.startswith("---"):
        end = content.find("\n---", 3)
        if end != -1:
            return content[end + 4:].lstrip("\r\n")
    return content


def _holds_other(path: Path, content: str) -> bool:
    """True when `path` exists with something other than this note (a free name is False)."""
    try:
        return path.read_text(encoding="utf-8", errors="replace") != content
    except FileNotFoundError:
        return False
