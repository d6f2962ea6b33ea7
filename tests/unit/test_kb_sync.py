"""kb_sweep.sync_kb_file, the knowledge watcher's single-file sweep, on a real home and state.db
(no daemon): imports, edits, deletions, and entries consolidation wrote."""

from __future__ import annotations

import pytest

from minionsd.memory import kb_sweep
from minionsd.memory.app import App
from minionsd.service.consolidation import ConsolidationService
from minionsd.storage import journal
from tests.harness import home_app


@pytest.fixture
def app(short_home):
    with home_app(short_home, "[engine]\ninbox_settle_ms = 0\n") as made:
        yield made


def body_of(app: App, record_id: str) -> str:
    return app.db.read_blocking(lambda c: c.execute(
        "SELECT body FROM memory_records WHERE id = ?", (record_id,)).fetchone()["body"])


def status_of(app: App, record_id: str) -> str:
    return app.db.read_blocking(lambda c: c.execute(
        "SELECT status FROM memory_records WHERE id = ?", (record_id,)).fetchone()["status"])


def test_a_hand_added_file_is_imported_updated_and_retracted(app):
    path = app.home.category_dir("conventions") / "2026-12-01-alice-x.md"
    path.write_text("# X\n\nfirst text\n")
    assert kb_sweep.sync_kb_file(app, path, app.now()) == "imported"
    assert kb_sweep.sync_kb_file(app, path, app.now()) == "unchanged"
    record_id = app.db.read_blocking(lambda c: c.execute(
        "SELECT record_id FROM kb_files").fetchone()[0])
    path.write_text("# X\n\nsecond text\n")
    assert kb_sweep.sync_kb_file(app, path, app.now()) == "updated"
    assert body_of(app, record_id) == "# X\n\nsecond text"
    path.unlink()
    assert kb_sweep.sync_kb_file(app, path, app.now()) == "removed"
    assert status_of(app, record_id) == "retracted"
    assert kb_sweep.sync_kb_file(app, path, app.now()) == "unchanged"


def test_an_entry_consolidation_wrote_links_to_the_notes_record(app):
    (app.home.inbox / "dallas-cache.md").write_text("# Cache\n\nflush the cache\n")
    result = ConsolidationService(app).pipeline.run(force=True)
    entry = app.home.root / result.kb_entries[0]
    record_id = app.db.read_blocking(lambda c: c.execute(
        "SELECT id FROM memory_records").fetchone()[0])
    # Edited by hand before anything linked it: the note's record takes the edit, no copy.
    entry.write_text(entry.read_text().replace("flush the cache", "warm the cache"))
    assert kb_sweep.sync_kb_file(app, entry, app.now()) == "updated"
    assert body_of(app, record_id) == "# Cache\n\nwarm the cache"
    count = app.db.read_blocking(lambda c: c.execute(
        "SELECT count(*) FROM memory_records").fetchone()[0])
    assert count == 1
    # Deleting it drops the link; the note's record stays (its source is the archived note).
    entry.unlink()
    assert kb_sweep.sync_kb_file(app, entry, app.now()) == "removed"
    assert status_of(app, record_id) == "active"


def test_an_entry_whose_batch_has_not_upserted_yet_is_left_to_the_batch(app):
    path = app.home.category_dir("project-notes") / "2026-12-01-dallas-y.md"
    rel = app.home.rel(path)

    def open_batch(conn):
        journal.create(conn, "B-1", "2026-12-01", app.now(),
                       [{"name": "dallas-y.md", "content": "# Y\n\nbody\n",
                         "content_hash": "0123456789abcdef" + "0" * 48, "author": "dallas",
                         "role": "note"}])
        journal.set_note(conn, "B-1", "dallas-y.md", kb_path=rel)

    app.db.write_blocking(open_batch)
    path.write_text("---\nentry_id: 0123456789abcdef\n---\n\n# Y\n\nbody\n")
    assert kb_sweep.sync_kb_file(app, path, app.now()) == "deferred"
    assert kb_sweep.kb_sweep(app, app.now())["deferred"] == 1
    count = app.db.read_blocking(lambda c: c.execute(
        "SELECT count(*) FROM memory_records").fetchone()[0])
    assert count == 0


def test_an_entry_id_no_batch_is_writing_binds_nothing_it_does_not_own(app):
    # Not a whole entry id, or one no record has: the file is a record of its own.
    for n, entry_id in enumerate(("", "0123", "0123456789abcdef")):
        path = app.home.category_dir("project-notes") / f"2026-12-01-dallas-z{n}.md"
        path.write_text(f"---\nentry_id: '{entry_id}'\n---\n\n# Z\n\nbody {n}\n")
        assert kb_sweep.sync_kb_file(app, path, app.now()) == "imported"


def test_a_file_in_step_with_its_record_costs_no_write(app, monkeypatch):
    """A file whose text has its link's digest (every file consolidation wrote and linked) is
    settled by one read: the writer thread, which every write waits for, is not asked."""
    path = app.home.category_dir("conventions") / "2026-12-01-alice-y.md"
    path.write_text("# Y\n\nsome text\n")
    assert kb_sweep.sync_kb_file(app, path, app.now()) == "imported"

    def no_write(*_args, **_kwargs):
        raise AssertionError("a file in step with its record asked the writer")

    monkeypatch.setattr(app.db, "write_blocking", no_write)
    assert kb_sweep.sync_kb_file(app, path, app.now()) == "unchanged"
    assert kb_sweep.kb_sweep(app, app.now())["unchanged"] == 1
    monkeypatch.undo()
    path.write_text("# Y\n\nother text\n")
    assert kb_sweep.sync_kb_file(app, path, app.now()) == "updated"
