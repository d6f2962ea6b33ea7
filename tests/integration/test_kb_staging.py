"""A batch writes its KB entries' temp files under engine/staging/, outside the watched
knowledge/ tree: a daemon killed between writing them and naming them leaves nothing in
knowledge/ but whole entries, and the next batch clears what the dead one left."""

from __future__ import annotations

import os

import pytest

from minionsd.memory.consolidate import kb_staging
from tests.conftest import wait_for


def write_notes(inbox, count: int, tag: str) -> None:
    inbox.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        (inbox / f"dallas-{tag}-{i:02d}.md").write_text(
            f"---\nagent: dallas\n---\n# Finding {tag} {i}\n\nshard {tag}{i} drains first\n")


def hidden_files(directory) -> list[str]:
    return sorted(p.name for p in directory.rglob(".*") if p.is_file()
                  and not p.name.endswith(".lock"))


@pytest.mark.parametrize("crash_at", ["kb:1", "kb:3"])
def test_a_kill_while_naming_entries_leaves_no_temp_file_behind(make_daemon, short_home,
                                                               crash_at):
    short_home.mkdir(parents=True)
    (short_home / "config.toml").write_text(
        "[engine]\ninbox_settle_ms = 0\nauto_consolidate_memory = false\n")
    write_notes(short_home / "notes" / "inbox", 4, "first")
    doomed = make_daemon(env={"MINIONS_TEST_CRASH_AT": crash_at})
    with pytest.raises(Exception):  # noqa: B017 - the daemon dies mid-call
        doomed.call("consolidation.run", force=True)
    doomed.proc.wait(10)
    assert doomed.proc.returncode == -9
    knowledge, staging = short_home / "knowledge", short_home / "engine" / "staging"
    assert hidden_files(knowledge) == []  # the temps were never in the watched tree
    assert hidden_files(staging) != []  # ...but under engine/, until a batch clears them

    daemon = make_daemon()  # the interrupted batch is redone at start-up
    write_notes(short_home / "notes" / "inbox", 2, "second")
    wait_for(lambda: daemon.call("consolidation.run", force=True)["mode"] == "nothing",
             what="inbox drained")
    assert hidden_files(knowledge) == [] and hidden_files(staging) == []
    entries = [p for p in knowledge.rglob("*.md") if p.parent.name != "agents"]
    assert len(entries) == 6
    assert daemon.call("status")["records"]["active"] == 6


def test_only_other_processes_temps_are_removed(tmp_path):
    mine = f".x.md.new.{os.getpid()}.0123456789ab"
    dead = ".x.md.new.999999999.0123456789ab"
    other = "notes.new.999999999.md"  # not a temp name
    for name in (mine, dead, other):
        (tmp_path / name).write_text("text\n")
    assert kb_staging.remove_leftovers(tmp_path) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([mine, other])
    assert kb_staging.remove_leftovers(tmp_path / "missing") == 0


def test_a_category_on_another_file_system_gets_its_temps_beside_it(tmp_path, monkeypatch):
    staging = kb_staging.Staging(tmp_path / "engine" / "staging")
    (tmp_path / "engine").mkdir()
    target = tmp_path / "knowledge" / "reviews" / "entry.md"
    target.parent.mkdir(parents=True)
    assert staging.temp_beside(target) == tmp_path / "engine" / "staging" / "entry.md"
    real_stat = os.stat

    def stat(path, *args, **kwargs):
        info = real_stat(path, *args, **kwargs)
        if str(path).endswith("elsewhere"):
            values = list(info)
            values[2] += 1  # st_dev
            return os.stat_result(values)
        return info

    monkeypatch.setattr(kb_staging.os, "stat", stat)
    other = tmp_path / "elsewhere" / "entry.md"
    other.parent.mkdir()
    assert staging.temp_beside(other) == other
