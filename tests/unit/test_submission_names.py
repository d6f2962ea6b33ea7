"""inbox.submit's naming rule: a taken name never drops a note; only an identical body (with
the same project, kind, task, PR and outcome) is a duplicate (SPEC §2), including against
names claimed before body hashes were kept."""

from __future__ import annotations

import sqlite3
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from minionsd.memory.submission import prepare_submission, record_submission
from minionsd.storage import journal
from minionsd.storage.database import migrate

NOW = datetime(2030, 1, 1, 12, tzinfo=UTC)


def _db(directory: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(directory / "state.db", isolation_level=None)
    conn.row_factory = sqlite3.Row
    migrate(conn)
    return conn


def _submit(conn: sqlite3.Connection, inbox: Path, body: str, **extra: str) -> tuple[str, bool]:
    sub = prepare_submission({"body": body, "author": "dallas", "title": "Session summary",
                              **extra}, NOW)
    name, fresh = record_submission(conn, sub, inbox, NOW)
    if fresh:
        (inbox / name).write_text(sub.text)
    return name, fresh


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta"]), min_size=1, max_size=8))
def test_each_distinct_body_gets_one_name_in_order_of_arrival(bodies):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        inbox = root / "inbox"
        inbox.mkdir()
        conn = _db(root)
        results = [_submit(conn, inbox, body) for body in bodies]
        first_seen = list(dict.fromkeys(bodies))
        base = results[0][0].removesuffix(".md")
        names = {b: base + (".md" if i == 0 else f"-{i + 1}.md")
                 for i, b in enumerate(first_seen)}
        assert [name for name, _ in results] == [names[b] for b in bodies]
        assert [fresh for _, fresh in results] == [
            bodies.index(b) == i for i, b in enumerate(bodies)]
        assert sorted(p.name for p in inbox.iterdir()) == sorted(names.values())
        conn.close()


def test_same_body_for_another_project_or_task_is_another_note(tmp_path):
    """The project, kind, task, PR and outcome change what a note becomes (its record's
    scope, kind, task): the same body with another of them is a new note, never dropped."""
    conn = _db(tmp_path)
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    first = _submit(conn, inbox, "Deploys need the VPN")
    atlas = _submit(conn, inbox, "Deploys need the VPN", project="atlas")
    assert atlas[1] is True and atlas[0] != first[0]
    assert _submit(conn, inbox, "Deploys need the VPN", project="atlas") == (atlas[0], False)
    assert _submit(conn, inbox, "Deploys need the VPN", task="W-1")[1] is True
    # Keys that do not change the note (a hold) leave it a duplicate.
    assert _submit(conn, inbox, "Deploys need the VPN", hold=True) == (first[0], False)
    conn.close()


def test_legacy_claims_without_a_hash_are_compared_with_the_file_or_the_journal(tmp_path):
    conn = _db(tmp_path)
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    sub = prepare_submission({"body": "old body", "author": "dallas",
                              "title": "Session summary"}, NOW)
    # Claimed before hashes were kept, already consolidated: only the journal has its text.
    conn.execute("INSERT INTO inbox_submissions (name, at) VALUES (?, ?)",
                 (sub.name, "2030-01-01T08:00:00.000Z"))
    journal.create(conn, "B-1", "2030-01-01", NOW, [{
        "name": sub.name, "content": sub.text, "content_hash": "h", "author": "dallas",
        "role": "note"}])
    assert _submit(conn, inbox, "old body") == (sub.name, False)
    assert _submit(conn, inbox, "new body")[1] is True
    # A file dropped by hand under the next name counts as taken, compared by its body.
    base = sub.name.removesuffix(".md")
    (inbox / f"{base}-3.md").write_text("# Session summary\n\nhand-written\n")
    assert _submit(conn, inbox, "hand-written") == (f"{base}-3.md", False)
    assert _submit(conn, inbox, "third body")[0] == f"{base}-4.md"
