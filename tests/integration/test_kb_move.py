"""A knowledge entry moved or renamed by hand keeps its one record (SPEC §3.7 v3: one file, one
record), and a purge names every file that holds the record's text (SPEC §3.2), a moved or a
copied entry included. Real daemon, real files, the CLI and the socket."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO, wait_for

SECRET = "hunter2zzqx"


def _ctl(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MINIONS_", "ANTHROPIC_"))}
    return subprocess.run([sys.executable, "-m", "minionsd.cli", "--home", str(home), *args],
                          env=env, cwd=REPO, capture_output=True, text=True, timeout=60)


def _records(daemon, query: str) -> list[dict]:
    return daemon.call("memory.search", query=query,
                       status=["active", "retracted", "superseded", "expired"],
                       limit=100)["records"]


def _noted(make_daemon, short_home: Path):
    """A daemon whose memory holds dallas's consolidated note with SECRET, and its KB entry."""
    short_home.mkdir(parents=True)
    (short_home / "config.toml").write_text(
        "[engine]\ninbox_settle_ms = 0\nauto_consolidate_memory = false\n"
        '[agents.dallas]\nname = "Dallas"\n')
    daemon = make_daemon()
    done = _ctl(short_home, "note", f"The staging DB password is {SECRET} (leaked).",
                "--title", "Staging DB access", "--author", "dallas")
    assert done.returncode == 0, done.stderr
    done = _ctl(short_home, "consolidate", "--force")
    assert done.returncode == 0, done.stderr
    (entry,) = (short_home / "knowledge" / "project-notes").glob("*.md")
    (record,) = _records(daemon, SECRET)
    return daemon, entry, record


def test_a_moved_note_entry_keeps_one_record_and_a_purge_names_it(make_daemon, short_home):
    daemon, entry, record = _noted(make_daemon, short_home)
    moved = short_home / "knowledge" / "conventions" / entry.name
    os.rename(entry, moved)  # re-categorised by hand, as `git mv` does
    daemon.call("maintenance.run", job="kb_sweep")  # the watcher or this sweep rebinds it
    found = _records(daemon, SECRET)
    assert [(r["id"], r["status"]) for r in found] == [(record["id"], "active")]
    assert found[0]["source"] == record["source"]  # provenance stays the archived note

    done = _ctl(short_home, "purge", record["id"], "--reason", "leaked password")
    assert done.returncode == 0, done.stderr
    rel = str(moved.relative_to(short_home))
    assert rel in done.stdout.split()
    daemon.call("maintenance.run", job="kb_sweep")
    assert _records(daemon, SECRET) == []
    assert "0 matches" in _ctl(short_home, "search", SECRET).stdout


def test_a_note_entry_moved_and_edited_keeps_its_record(make_daemon, short_home):
    daemon, entry, record = _noted(make_daemon, short_home)
    moved = short_home / "knowledge" / "architecture" / "staging-db.md"
    moved.write_text(entry.read_text() + "\nAsk ops for the rotated one.\n")
    entry.unlink()
    daemon.call("maintenance.run", job="kb_sweep")
    found = _records(daemon, SECRET)
    assert [(r["id"], r["status"]) for r in found] == [(record["id"], "active")]
    assert "rotated one" in found[0]["body"]
    done = _ctl(short_home, "purge", record["id"], "--reason", "leaked password")
    assert done.returncode == 0, done.stderr
    assert str(moved.relative_to(short_home)) in done.stdout.split()


def test_a_purge_names_a_copied_entry_found_by_its_text(make_daemon, short_home):
    _daemon, entry, record = _noted(make_daemon, short_home)
    copy = short_home / "knowledge" / "architecture" / "staging-db-copy.md"
    shutil.copyfile(entry, copy)
    done = _ctl(short_home, "--json", "purge", record["id"], "--reason", "leaked password")
    assert done.returncode == 0, done.stderr
    assert str(copy.relative_to(short_home)) in done.stdout
    assert str(entry.relative_to(short_home)) in done.stdout


def test_the_watcher_moves_an_entry_with_its_record_either_way(daemon):
    made = {}
    for category, title in (("conventions", "Quokka naming"), ("project-notes", "Wombat naming")):
        made[title] = daemon.call("knowledge.create", category=category, author="ripley",
                                  title=title, body=f"{title.split()[0]} services are named "
                                  "after rivers.")
    targets = {"Quokka naming": "project-notes", "Wombat naming": "architecture"}
    for title, result in made.items():
        old = daemon.home / result["path"]
        os.rename(old, daemon.home / "knowledge" / targets[title] / old.name)
    for title, result in made.items():
        new = f"knowledge/{targets[title]}/{Path(result['path']).name}"
        wait_for(lambda r=result, n=new: daemon.call("memory.get", id=r["record_id"])["source"]
                 == n, what=f"{title}'s record following its file")
        record = daemon.call("memory.get", id=result["record_id"])
        assert record["status"] == "active"
        assert [r["id"] for r in _records(daemon, title.split()[0])] == [result["record_id"]]
    report = daemon.call("maintenance.run", job="kb_sweep")["report"]
    assert report["imported"] == 0 and report["missing_files"] == []


def test_a_purged_entry_moved_by_hand_does_not_bring_its_text_back(daemon):
    made = daemon.call("knowledge.create", category="conventions", author="ripley",
                       title="Numbat access", body=f"The numbat key is {SECRET}.")
    purged = _ctl(daemon.home, "purge", made["record_id"], "--reason", "leaked key")
    assert purged.returncode == 0, purged.stderr
    old = daemon.home / made["path"]
    os.rename(old, daemon.home / "knowledge" / "reviews" / old.name)
    report = daemon.call("maintenance.run", job="kb_sweep")["report"]
    assert report["imported"] == 0
    assert _records(daemon, SECRET) == []
