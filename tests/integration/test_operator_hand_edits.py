"""What an operator has written by hand is never lost by a command or a job: an empty stdin does
not wipe pinned.md, `config set` keeps keys edited in config.toml since the last load, the
retention job deletes only notes minionsd archived, and a notes-history.md leading out of the
home is never written through (a real daemon, its socket and minionsctl in a subprocess)."""

from __future__ import annotations

import os
import signal
import tomllib

import pytest

from minionsd.rpc.client import RpcError
from tests.conftest import wait_for
from tests.integration.test_cli import clean_env, run_ctl

SETTINGS = "[engine]\ninbox_settle_ms = 0\nauto_consolidate_memory = false\n"


def ctl(home, *args: str, stdin: str | None = None):
    return run_ctl(*args, env=clean_env(MINIONS_HOME=str(home)), stdin=stdin)


def test_pinned_set_refuses_an_empty_stdin_or_file_and_empties_only_on_purpose(daemon, tmp_path):
    pinned = daemon.home / "pinned.md"
    assert ctl(daemon.home, "pinned", "set", "Freeze: no deploys on Fridays.").returncode == 0
    for args in (("pinned", "set"), ("pinned", "set", "--file", "-"), ("pinned", "append")):
        done = ctl(daemon.home, *args, stdin="")
        assert done.returncode == 2, (args, done.stderr)
        assert "standard input was empty" in done.stderr
    empty = tmp_path / "empty.md"
    empty.write_text("  \n")
    done = ctl(daemon.home, "pinned", "set", "--file", str(empty))
    assert done.returncode == 2 and f"{empty} was empty" in done.stderr
    assert 'pinned set ""' in done.stderr  # the way to empty it on purpose
    assert pinned.read_text() == "Freeze: no deploys on Fridays."
    done = ctl(daemon.home, "pinned", "set", "")
    assert done.returncode == 0, done.stderr
    assert pinned.read_text() == ""


def test_config_set_keeps_a_hand_edit_not_yet_reloaded(make_daemon, short_home):
    short_home.mkdir(parents=True)
    config = short_home / "config.toml"
    config.write_text(SETTINGS)
    daemon = make_daemon()
    with config.open("a") as file:  # an operator's edit, waiting for its SIGHUP
        file.write('\n[agents.ripley]\nname = "Ripley"\n\n[trust]\nhuman_authors = ["alice"]\n')
    done = ctl(short_home, "config", "set", "engine.memory_retrieval_top_k", "6")
    assert done.returncode == 0, done.stderr
    tree = tomllib.loads(config.read_text())
    assert tree["engine"]["memory_retrieval_top_k"] == 6
    assert tree["engine"]["inbox_settle_ms"] == 0
    assert tree["agents"]["ripley"]["name"] == "Ripley"
    assert tree["trust"]["human_authors"] == ["alice"]
    # The set key applies now; the hand edit still waits for its SIGHUP.
    assert daemon.call("config.get", key="engine.memory_retrieval_top_k")["value"] == 6
    assert daemon.call("config.get", key="trust.human_authors")["value"] == []
    daemon.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: daemon.call("config.get", key="trust.human_authors")["value"] == ["alice"],
             what="the hand edit applied by SIGHUP")
    assert daemon.call("config.get", key="agents.ripley.name")["value"] == "Ripley"
    assert daemon.call("config.get", key="engine.memory_retrieval_top_k")["value"] == 6


@pytest.mark.parametrize("broken", ["[engine\ninbox_settle_ms = 0\n",
                                    "[engine]\ninbox_settle_ms = 0\nnot_a_key = 1\n"])
def test_config_set_refuses_a_file_on_disk_that_is_not_valid(make_daemon, short_home, broken):
    short_home.mkdir(parents=True)
    config = short_home / "config.toml"
    config.write_text(SETTINGS)
    daemon = make_daemon()
    config.write_text(broken)
    with pytest.raises(RpcError) as caught:
        daemon.call("config.set", key="engine.memory_retrieval_top_k", value=6)
    assert caught.value.code == -32003
    assert "config.toml was not changed" in caught.value.detail
    assert "not valid" in caught.value.detail
    assert config.read_text() == broken
    assert daemon.call("config.get", key="engine.memory_retrieval_top_k")["value"] != 6
    done = ctl(short_home, "config", "set", "engine.memory_retrieval_top_k", "6")
    assert done.returncode != 0 and "config.toml was not changed" in done.stderr
    assert config.read_text() == broken


def test_retention_deletes_only_notes_minionsd_archived(make_daemon, short_home):
    short_home.mkdir(parents=True)
    (short_home / "config.toml").write_text(SETTINGS + "archive_max_files = 2\n")
    archive = short_home / "notes" / "archive"
    archive.mkdir(parents=True)
    readme = archive / "README.md"
    readme.write_text("what this directory is, by the operator\n")
    os.utime(readme, (978307200, 978307200))  # 2001: older than every archived note
    notes_by_hand = archive / "keep" / "mine.md"
    notes_by_hand.parent.mkdir()
    notes_by_hand.write_text("mine\n")
    daemon = make_daemon()
    for n in range(4):
        daemon.call("inbox.submit", author="ripley", title=f"retention {n}",
                    body=f"retention note number {n} about the cache")
        assert daemon.call("consolidation.run", force=True)["notes"] == 1
    report = daemon.call("maintenance.run", job="retention")["report"]
    assert report["archive_deleted"] == 2
    assert readme.read_text() == "what this directory is, by the operator\n"
    assert notes_by_hand.read_text() == "mine\n"
    archived = sorted(p.name for p in archive.iterdir() if p.name.endswith("-cache.md")
                      or "retention" in p.name)
    assert len(archived) == 2 and all("retention-2" in n or "retention-3" in n
                                      for n in archived), archived


def test_history_symlink_out_of_the_home_is_never_followed(make_daemon, short_home):
    short_home.mkdir(parents=True)
    (short_home / "config.toml").write_text(SETTINGS + "notes_max_bytes = 1024\n")
    outside = short_home.parent / "outside-history.md"
    outside.write_text("OUTSIDE\n")
    archive = short_home / "notes" / "archive"
    archive.mkdir(parents=True)
    (archive / "notes-history.md").symlink_to(outside)
    daemon = make_daemon()
    for n in range(5):
        daemon.call("inbox.submit", author="ripley", title=f"History fact {n}",
                    body=f"History fact {n} zzfact{n} " + "y" * 300)
        daemon.call("consolidation.run", force=True)
    assert outside.read_text() == "OUTSIDE\n"
    assert (archive / "notes-history.md").is_symlink()
    notes = (short_home / "notes.md").read_text()
    assert all(f"History fact {n}" in notes for n in range(5)), notes  # no section lost
    warning = next(w for w in daemon.call("status")["warnings"]
                   if w["file"] == "notes/archive/notes-history.md")
    assert "never followed" in warning["reason"]
    # Replaced by a file: the next batch bounds notes.md again and the warning goes.
    (archive / "notes-history.md").unlink()
    daemon.call("inbox.submit", author="ripley", title="History fact 5",
                body="History fact 5 zzfact5 " + "y" * 300)
    daemon.call("consolidation.run", force=True)
    both = (short_home / "notes.md").read_text() + (archive / "notes-history.md").read_text()
    assert all(f"History fact {n}" in both for n in range(6))
    assert "History fact 0" in (archive / "notes-history.md").read_text()
    assert not any(w["file"] == "notes/archive/notes-history.md"
                   for w in daemon.call("status")["warnings"])


def test_history_symlink_loop_keeps_the_sections_in_notes(make_daemon, short_home):
    short_home.mkdir(parents=True)
    (short_home / "config.toml").write_text(SETTINGS + "notes_max_bytes = 1024\n")
    archive = short_home / "notes" / "archive"
    archive.mkdir(parents=True)
    (archive / "notes-history.md").symlink_to("notes-history.md")  # points at itself
    daemon = make_daemon()
    for n in range(4):
        daemon.call("inbox.submit", author="ripley", title=f"Loop fact {n}",
                    body=f"Loop fact {n} " + "z" * 300)
        assert daemon.call("consolidation.run", force=True)["notes"] == 1
    notes = (short_home / "notes.md").read_text()
    assert all(f"Loop fact {n}" in notes for n in range(4)), notes
    warning = next(w for w in daemon.call("status")["warnings"]
                   if w["file"] == "notes/archive/notes-history.md")
    assert "does not resolve" in warning["reason"]
