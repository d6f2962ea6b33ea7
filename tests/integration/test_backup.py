"""backup.create while the daemon works, and restore into another home: the real daemon, the
real socket, and minionsctl's restore command in a subprocess."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from minionsd.client import RpcError
from minionsd.config import load as load_config
from minionsd.errors import Conflict, InvalidParams, InvalidState, StorageError
from minionsd.home import Home
from minionsd.memory import backup, restore
from minionsd.memory.app import App
from minionsd.storage import journal, record_fields, records
from minionsd.storage.database import Database
from tests.conftest import REPO, wait_for

CONFIG = "[engine]\ninbox_settle_ms = 50\nauto_consolidate_memory = false\n"


def ctl(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINIONS_")}
    return subprocess.run([sys.executable, "-m", "minionsd.cli", "--home", str(home), *args],
                          env=env, cwd=REPO, capture_output=True, text=True, timeout=60)


def add(client, body: str) -> str:
    return client.call("memory.add", {"body": body, "type": "semantic", "scope": "global",
                                      "trust": "human", "source": "test"})["id"]


def populate(daemon) -> dict:
    """Give the home something on every surface: records, a digest, KB, inbox, pinned, config."""
    with daemon.client() as client:
        for i in range(5):
            client.call("inbox.submit", {"body": f"# Cache note {i}\n\nThe build cache in "
                                                 f"src/cache_{i}.py needs a warm-up.",
                                         "author": "alice", "title": f"cache note {i}"})
        wait_for(lambda: client.call("status")["inbox"]["eligible"] == 5,
                 what="inbox notes to settle")
        consolidated = client.call("consolidation.run", {"force": True})
        assert consolidated["notes"] == 5
        held = client.call("inbox.submit", {"body": "Still thinking about this one.",
                                            "author": "bob", "hold": True})
        kb = client.call("knowledge.create", {"category": "conventions", "title": "Tabs",
                                              "body": "We indent with four spaces.",
                                              "author": "carol"})
        client.call("pinned.set", {"text": "Always run the tests."})
        client.call("config.set", {"key": "engine.memory_retrieval_top_k", "value": 5})
    return {"held": held["name"], "kb": kb["path"], "archived": consolidated["archived"]}


def test_backup_during_writes_then_restore(make_daemon, short_home):
    short_home.mkdir(parents=True)
    (short_home / "config.toml").write_text(CONFIG)
    live = make_daemon()
    surfaces = populate(live)
    acknowledged: list[str] = []
    stop = threading.Event()
    failures: list[BaseException] = []

    def writer() -> None:
        try:
            with live.client() as client:
                n = 0
                while not stop.is_set():
                    acknowledged.append(add(client, f"continuous write number {n}"))
                    n += 1
        except BaseException as exc:
            failures.append(exc)

    thread = threading.Thread(target=writer, name="test-writer")
    thread.start()
    try:
        wait_for(lambda: len(acknowledged) >= 20, what="writes before the backup")
        existed = list(acknowledged)
        target = short_home.parent / "backup"
        result = live.call("backup.create", path=str(target))
    finally:
        stop.set()
        thread.join(30)
    assert not failures, failures
    assert len(acknowledged) > len(existed)
    assert result["path"] == str(target)
    assert result["records"] >= len(existed)
    assert result["files"] >= 10 and result["bytes"] > 0
    manifest = json.loads((target / "minionsd-backup.json").read_text())
    assert manifest["records"] == result["records"]

    # No socket, pid, lock, WAL or SHM file travels with the backup.
    names = [p.name for p in target.rglob("*")]
    assert not [n for n in names if n.endswith((".sock", ".pid", ".lock", "-wal", "-shm"))]
    assert sorted(p.name for p in (target / "engine").iterdir()) == ["state.db"]

    original_notes = (live.home / "notes.md").read_text()
    assert live.stop() == 0

    restored_home = short_home.parent / "restored"
    done = ctl(restored_home, "restore", str(target))
    assert done.returncode == 0, done.stderr
    assert "integrity ok" in done.stdout

    restored = make_daemon(home=restored_home)
    with restored.client() as client:
        for record_id in existed:
            assert client.call("memory.get", {"id": record_id})["id"] == record_id
        assert client.call("memory.search", {"query": "continuous"})["total"] >= len(existed)
        assert client.call("memory.search", {"query": "cache warm-up"})["total"] == 5
        assert client.call("pinned.get")["text"].strip() == "Always run the tests."
        entry = client.call("knowledge.get", {"path": surfaces["kb"]})
        assert "four spaces" in entry["body"]
        inbox = {n["name"]: n for n in client.call("inbox.list")["notes"]}
        assert inbox[surfaces["held"]]["held"] is True
        assert client.call("config.get", {"key": "engine.memory_retrieval_top_k"})["value"] == 5
    assert (restored_home / "notes.md").read_text() == original_notes
    for archived in surfaces["archived"]:
        assert (restored_home / archived).is_file()
    assert len(list((restored_home / "knowledge").rglob("*.md"))) >= 6


def test_backup_refuses_bad_targets(daemon, short_home):
    with daemon.client() as client:
        for path, code in (("relative/dir", -32602),
                           (str(daemon.home / "knowledge" / "copy"), -32602)):
            with pytest.raises(RpcError) as err:
                client.call("backup.create", {"path": path})
            assert err.value.code == code, err.value
        occupied = short_home.parent / "occupied"
        occupied.mkdir()
        (occupied / "keep.txt").write_text("mine")
        with pytest.raises(RpcError) as err:
            client.call("backup.create", {"path": str(occupied)})
        assert err.value.code == -32002
        assert (occupied / "keep.txt").read_text() == "mine"
        empty = short_home.parent / "empty"
        empty.mkdir()
        assert client.call("backup.create", {"path": str(empty)})["path"] == str(empty)


def test_restore_refused_while_daemon_runs(daemon, short_home):
    target = short_home.parent / "backup"
    daemon.call("pinned.set", text="before")
    daemon.call("backup.create", path=str(target))
    daemon.call("pinned.set", text="after")
    refused = ctl(daemon.home, "restore", str(target), "--force")
    assert refused.returncode == 1
    assert "running" in refused.stderr and str(daemon.proc.pid) in refused.stderr
    assert daemon.call("pinned.get")["text"].strip() == "after"
    with pytest.raises(InvalidState):
        restore.restore(target, daemon.home, force=True)


def test_restore_into_non_empty_home_needs_force(daemon, short_home):
    target = short_home.parent / "backup"
    daemon.call("pinned.set", text="from the backup")
    add(daemon.client(), "a record to bring back")
    daemon.call("backup.create", path=str(target))
    daemon.stop()

    other = short_home.parent / "other"
    (other / "engine").mkdir(parents=True)
    (other / "pinned.md").write_text("local pinned text\n")
    (other / "notes").mkdir()
    (other / "notes" / "stray.md").write_text("only here\n")
    # A WAL left beside the old database would be replayed into the restored one.
    (other / "engine" / "state.db-wal").write_bytes(b"not a wal")
    refused = ctl(other, "restore", str(target))
    assert refused.returncode == 1 and "--force" in refused.stderr
    assert (other / "pinned.md").read_text() == "local pinned text\n"

    forced = ctl(other, "--json", "restore", str(target), "--force")
    assert forced.returncode == 0, forced.stderr
    assert json.loads(forced.stdout)["integrity"] == "ok"
    assert (other / "pinned.md").read_text().strip() == "from the backup"
    assert not (other / "notes" / "stray.md").exists()
    assert not (other / "engine" / "state.db-wal").exists()
    assert not (other / "engine" / "minionsd.pid").exists()
    assert not [p for p in other.iterdir() if p.name.startswith(".restore-")]


def test_restore_into_layout_only_home_needs_no_force(daemon, short_home):
    target = short_home.parent / "backup"
    daemon.call("backup.create", path=str(target))
    daemon.stop()
    fresh = Home(short_home.parent / "fresh")
    fresh.ensure()  # directories only: nothing to lose
    assert ctl(fresh.root, "restore", str(target)).returncode == 0


def test_restore_rejects_incomplete_and_corrupt_backups(short_home, tmp_path):
    partial = tmp_path / "partial"
    (partial / "engine").mkdir(parents=True)
    sqlite3.connect(partial / "engine" / "state.db").close()
    with pytest.raises(InvalidParams, match=r"minionsd-backup\.json"):
        restore.restore(partial, short_home)
    (partial / "minionsd-backup.json").write_text("{}")
    (partial / "engine" / "state.db").write_bytes(b"this is not a database" * 100)
    result = ctl(short_home, "restore", str(partial))
    assert result.returncode == 1 and "not a sound minionsd database" in result.stderr
    assert not (short_home / "engine" / "state.db").exists()


# --- the retry when consolidation records a step during the copy -----------------------------

@pytest.fixture
def offline_app(short_home, monkeypatch):
    # The batches these tests journal never finish; don't wait long for them between attempts.
    monkeypatch.setattr(backup, "IDLE_WAIT_S", 0.3)
    home = Home(short_home)
    home.ensure()
    db = Database(home.db)
    app = App(home=home, config=load_config(home.config, {}), db=db)
    yield app
    app.workers.close()
    db.close()


def _journal_a_batch(app: App, n: int) -> None:
    app.db.write_blocking(journal.create, f"B-test-{n}", "2026-01-01", app.now(),
                          [{"name": f"note-{n}.md", "content": "x", "content_hash": f"h{n}",
                            "author": "alice", "role": "note"}])


def test_backup_retries_when_the_journal_moves(offline_app, short_home, monkeypatch):
    app = offline_app
    (app.home.root / "notes.md").write_text("# Team Notes\n")
    app.home.notes_history.write_text("# older sections\n")
    reads = []
    real_read = app.db.read_blocking

    def read_after_a_batch(fn, *args):
        # The first comparison happens after the tree copy: pretend a batch was journalled
        # while the files were being copied.
        if fn is backup._journal_state and not reads:
            _journal_a_batch(app, 1)
        reads.append(fn)
        return real_read(fn, *args)

    monkeypatch.setattr(app.db, "read_blocking", read_after_a_batch)
    target = short_home.parent / "backup"
    backup.create_backup(app, target)
    manifest = json.loads((target / "minionsd-backup.json").read_text())
    assert manifest["attempts"] == 2
    assert (target / "notes.md").read_text() == "# Team Notes\n"
    assert (target / "notes" / "archive" / "notes-history.md").read_text() == "# older sections\n"
    with sqlite3.connect(target / "engine" / "state.db") as conn:
        assert conn.execute("SELECT count(*) FROM batches").fetchone()[0] == 1


def test_backup_gives_up_cleanly_when_the_journal_never_settles(offline_app, short_home,
                                                                monkeypatch):
    app = offline_app
    real_read = app.db.read_blocking
    counter = iter(range(100))

    def always_moving(fn, *args):
        if fn is backup._journal_state:
            _journal_a_batch(app, next(counter))
        return real_read(fn, *args)

    monkeypatch.setattr(app.db, "read_blocking", always_moving)
    target = short_home.parent / "backup"
    with pytest.raises(InvalidState, match="try again"):
        backup.create_backup(app, target)
    assert not target.exists()
    existing = short_home.parent / "existing"
    existing.mkdir()
    with pytest.raises(InvalidState):
        backup.create_backup(app, existing)
    assert existing.is_dir() and not any(existing.iterdir())


def test_check_target_rules(offline_app, short_home):
    home = offline_app.home
    with pytest.raises(InvalidParams):
        backup.check_target(home, "not/absolute")
    with pytest.raises(InvalidParams):
        backup.check_target(home, str(home.root / "notes"))
    afile = short_home.parent / "a-file"
    afile.write_text("x")
    with pytest.raises(Conflict):
        backup.check_target(home, str(afile))
    assert backup.check_target(home, str(short_home.parent / "new")) == \
        short_home.parent / "new"


def test_restore_refuses_a_stale_fts_index(offline_app, short_home):
    app = offline_app
    for i in range(3):
        app.db.write_blocking(records.insert, record_fields.validate_new(
            {"body": f"indexed words {i}", "type": "semantic", "scope": "global",
             "trust": "human", "source": "test"}), app.now())
    target = short_home.parent / "backup"
    assert backup.create_backup(app, target)["records"] == 3
    conn = sqlite3.connect(target / "engine" / "state.db", isolation_level=None)
    triggers = [r[0] for r in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'memory_records'")]
    for name in triggers:  # edit the content behind the index's back
        conn.execute(f"DROP TRIGGER {name}")
    conn.execute("UPDATE memory_records SET body = 'words the index never saw'")
    conn.close()
    fresh = short_home.parent / "fresh"
    with pytest.raises(StorageError, match="not a sound"):
        restore.restore(target, fresh)
    assert not (fresh / "engine" / "state.db").exists()


def test_backup_runs_inside_the_consolidation_pause(offline_app, short_home):
    app = offline_app
    target = short_home.parent / "backup"
    events = []

    @contextlib.asynccontextmanager
    async def pause():
        events.append(("paused", target.exists()))
        yield
        events.append(("resumed", (target / "minionsd-backup.json").is_file()))

    create = backup.BackupSurface(app, pause_consolidation=pause).methods()["backup.create"]
    result = asyncio.run(create(str(target)))
    assert result["path"] == str(target)
    assert events == [("paused", False), ("resumed", True)]
