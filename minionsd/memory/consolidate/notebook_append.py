"""A batch's notebook entries: each configured agent's notes appended to its notebook.

One locked read per notebook, not per note; entries carry their id, so a redo appends only
what is missing. Every notebook the batch changes is replaced at once (fileio.replace_all):
its texts are flushed in one sync with the KB entries' new names, the renames with the
archive's moves, not two syncs per notebook.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path

from minionsd.fileio import flush_to_disk, lock_for, read_text, replace_all
from minionsd.memory.app import App
from minionsd.memory.consolidate import notebooks
from minionsd.memory.consolidate.filing import Filing, safe_meta
from minionsd.memory.consolidate.recording import note_body, note_title
from minionsd.memory.identity import has_notebook
from minionsd.storage import journal


def append_batch(app: App, batch: journal.Batch, step: Callable[[str], None],
                 unsynced: list[Path]) -> dict[str, int]:
    """Append the batch's notes by configured agents to their notebooks; the notes per agent.
    `step` is the pipeline's step boundary, passed once per entry rendered. `unsynced` (the
    batch's directories with names not yet flushed: filing.Filing.unsynced) is flushed with
    the notebooks' texts, and then holds the notebooks' directory instead, for the archive's
    flush before the batch is closed."""
    agents = app.config.agents
    counts: dict[str, int] = {}
    by_author: dict[str, list[journal.JournalNote]] = {}
    for note in batch.notes:
        if note.done or not has_notebook(note.author, agents):
            continue
        if app.notebook(note.author) is None:  # a symlink out of knowledge/agents/
            continue  # never followed
        by_author.setdefault(note.author, []).append(note)
        counts[note.author] = counts.get(note.author, 0) + 1
    writes: list[tuple[Path, str]] = []
    with contextlib.ExitStack() as locks:
        # Each notebook stays locked until all are replaced (no other writer takes two).
        for author, notes in by_author.items():
            path = app.notebook(author)
            if path is None:
                continue
            locks.enter_context(lock_for(path))
            current = read_text(path, app.file_warnings)
            known = notebooks.entry_ids(current) if current is not None else set()
            held = set(known)
            entries = []
            for note in notes:
                entry_id = note.content_hash[:16]
                if entry_id in known:
                    continue
                known.add(entry_id)
                entries.append(notebooks.render_entry(
                    entry_id=entry_id, date=batch.date, title=note_title(note),
                    body=note_body(note.content), source=Filing.archive_rel(batch, note),
                    meta=safe_meta(note.content)))
                step("notebook")
            if entries:
                writes.append((path, notebooks.append_entries(current, author, entries,
                                                              known=held)))
        pending = list(unsynced)
        if writes:
            unsynced[:] = replace_all(writes, also_flush=pending, flush_directories=False)
        elif pending:
            flush_to_disk(pending)
            unsynced.clear()
    return counts
