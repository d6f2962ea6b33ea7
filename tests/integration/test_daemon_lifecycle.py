"""Start-up and shutdown of the real daemon process when things go wrong: a damaged
database, a socket that cannot be bound, a thread dump on SIGUSR1, private file modes."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, wait_for

COMPONENTS_IN_START_ORDER = ["ConsolidationService", "InboxWatcher", "KnowledgeWatcher",
                             "KnowledgeSurface",
                             "RecallSurface", "TokenSurface", "BackupSurface", "Scheduler",
                             "Health"]


def events(daemon) -> list[dict]:
    found = []
    for line in daemon.log_path.read_text(errors="replace").splitlines():
        if line.startswith("{"):
            try:
                found.append(json.loads(line))
            except ValueError:
                pass
    return found


def finish(daemon, timeout: float = 60) -> int:
    assert daemon.proc is not None
    try:
        return daemon.proc.wait(timeout)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"daemon did not exit:\n{daemon.log()}") from None


@pytest.mark.parametrize("garbage", [b"this is not a database at all\n" * 200,
                                     b"SQLite format 3\x00" + b"\xff" * 8192])
def test_a_damaged_database_exits_2_with_one_line_naming_the_way_out(make_daemon, short_home,
                                                                     garbage):
    (short_home / "engine").mkdir(parents=True)
    db = short_home / "engine" / "state.db"
    db.write_bytes(garbage)
    daemon = make_daemon(start=False)
    daemon.spawn()
    assert finish(daemon) == 2
    output = daemon.log()
    assert "Traceback" not in output
    lines = [line for line in output.splitlines() if line.startswith("minionsd:")]
    assert len(lines) == 1, output
    assert str(db) in lines[0] and "damaged" in lines[0]
    assert f"minionsctl --home {short_home} restore" in lines[0]
    assert "docs/operations.md" in lines[0]
    assert not (short_home / "engine" / "minionsd.pid").exists()
    assert db.read_bytes() == garbage  # left as it was, for the operator to inspect


def test_a_damaged_page_in_a_real_database_is_reported_the_same_way(make_daemon, short_home):
    daemon = make_daemon()
    for i in range(40):
        daemon.call("memory.add", body=f"note {i} " + "word " * 200, type="semantic",
                    scope="global", trust="human", source="test")
    backup = short_home.parent / "backup"
    daemon.call("backup.create", path=str(backup))
    assert daemon.stop() == 0
    db = short_home / "engine" / "state.db"
    # a stopped daemon leaves a self-contained state.db: the WAL is checkpointed and removed
    assert not db.with_name("state.db-wal").exists()
    data = bytearray(db.read_bytes())
    page = int.from_bytes(data[16:18], "big") or 65536
    data[page:] = b"\x5a" * (len(data) - page)  # every page after the first
    db.write_bytes(bytes(data))
    again = make_daemon(start=False)
    again.spawn()
    assert finish(again) == 2
    lines = [line for line in again.log().splitlines() if line.startswith("minionsd:")]
    assert len(lines) == 1 and "damaged" in lines[0] and "restore" in lines[0], again.log()
    assert "Traceback" not in again.log()
    assert not (short_home / "engine" / "minionsd.pid").exists()
    # the way out the message names works
    restored = subprocess.run(
        [sys.executable, "-m", "minionsd.cli", "--home", str(short_home), "restore",
         str(backup), "--force"], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert restored.returncode == 0, restored.stderr
    after = make_daemon()
    assert after.call("memory.search", query="note", limit=1)["total"] == 40


@pytest.mark.parametrize("where", ["directory", "under_a_file"])
def test_a_socket_that_cannot_be_bound_stops_what_started(make_daemon, short_home, where):
    short_home.mkdir(parents=True)
    blocker = short_home.parent / "blocker"
    if where == "directory":
        blocker.mkdir()
        socket_path = blocker
    else:
        blocker.write_text("a file, not a directory")
        socket_path = blocker / "minionsd.sock"
    (short_home / "config.toml").write_text(f'[server]\nsocket = "{socket_path}"\n')
    daemon = make_daemon(start=False)
    daemon.spawn()
    assert finish(daemon) == 1
    output = daemon.log()
    assert "Traceback" not in output
    assert any(line.startswith("minionsd:") and str(blocker) in line
               for line in output.splitlines()), output
    stopped = [e["component"] for e in events(daemon) if e["event"] == "daemon.component_stopped"]
    assert stopped == list(reversed(COMPONENTS_IN_START_ORDER))
    assert [e for e in events(daemon) if e["event"] == "daemon.start_failed"]
    (final,) = [e for e in events(daemon) if e["event"] == "daemon.stopped"]
    assert final["code"] == 1 and final["threads_left"] == []
    assert not (short_home / "engine" / "minionsd.pid").exists()


def test_sigterm_stops_every_component_in_reverse_order(daemon):
    assert daemon.stop() == 0
    stopped = [e["component"] for e in events(daemon) if e["event"] == "daemon.component_stopped"]
    assert stopped == list(reversed(COMPONENTS_IN_START_ORDER))
    (final,) = [e for e in events(daemon) if e["event"] == "daemon.stopped"]
    assert final["code"] == 0 and final["threads_left"] == []


def test_sigusr1_dumps_every_thread_stack_to_the_log(daemon):
    daemon.proc.send_signal(signal.SIGUSR1)
    dump = wait_for(lambda: next((e for e in events(daemon)
                                  if e["event"] == "daemon.thread_dump"), None),
                    what="daemon.thread_dump in the log")
    names = {t["name"] for t in dump["threads"]}
    assert {"MainThread", "self-watchdog"} <= names
    assert any(name.startswith("db-writer") for name in names)
    assert dump["count"] == len(dump["threads"])
    main = next(t for t in dump["threads"] if t["name"] == "MainThread")
    assert "dump_threads" in main["stack"] and "minionsd/daemon.py" in main["stack"]
    writer = next(t for t in dump["threads"] if t["name"].startswith("db-writer"))
    assert "concurrent/futures/thread.py" in writer["stack"]
    assert daemon.call("status")["pid"] == daemon.proc.pid  # still serving


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_a_fresh_home_keeps_its_files_private(make_daemon, short_home):
    old_umask = os.umask(0o022)
    try:
        short_home.mkdir(mode=0o755)  # a home made another way, not private itself
        os.chmod(short_home, 0o755)
        daemon = make_daemon()
        daemon.call("memory.add", body="one record so the WAL has content", type="semantic",
                    scope="global", trust="human", source="test")
    finally:
        os.umask(old_umask)
    engine = short_home / "engine"
    for name in ("state.db", "state.db-wal", "state.db-shm"):
        assert mode(engine / name) == 0o600, name
    for rel in ("notes", "notes/inbox", "notes/archive", "notes/quarantine", "knowledge",
                "knowledge/agents", "knowledge/architecture", "knowledge/reviews", "engine"):
        assert mode(short_home / rel) == 0o700, rel
    assert daemon.stop() == 0

    os.chmod(engine / "state.db", 0o644)  # an existing database is made private at start
    again = make_daemon()
    assert mode(engine / "state.db") == 0o600
    assert again.stop() == 0


def test_a_database_path_that_cannot_be_opened_is_one_line_too(make_daemon, short_home):
    (short_home / "engine" / "state.db").mkdir(parents=True)  # a directory in its place
    daemon = make_daemon(start=False)
    daemon.spawn()
    assert finish(daemon) == 1
    lines = [line for line in daemon.log().splitlines() if line.startswith("minionsd:")]
    assert len(lines) == 1 and "cannot open the database" in lines[0], daemon.log()
    assert "Traceback" not in daemon.log()
    assert not (short_home / "engine" / "minionsd.pid").exists()
