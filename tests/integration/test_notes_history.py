"""notes-history.md through the daemon: sections moved out of notes.md are appended, and a
kill -9 right after the append, whole or cut short, leaves each section there exactly once."""

from __future__ import annotations

import re

import pytest

from tests.conftest import wait_for
from tests.integration.test_consolidation import home_with

BOUND = "auto_consolidate_memory = false\nnotes_max_bytes = 1024\n"


def _batch(daemon, n: int) -> None:
    daemon.call("inbox.submit", author="ripley", title=f"Plum report {n}",
                body=f"Plum build {n} passed after the lint fix number {n}. " * 5)
    daemon.call("consolidation.run", force=True)


def _markers(text: str) -> list[str]:
    return re.findall(r"<!-- minions:batch=[^ ]+ -->", text)


def test_moved_sections_are_appended_to_the_history(make_daemon, short_home) -> None:
    home = home_with(short_home, BOUND)
    daemon = make_daemon()
    history = home / "notes" / "archive" / "notes-history.md"
    seen, inode = b"", None
    for n in range(8):
        _batch(daemon, n)
        if history.exists():
            now = history.read_bytes()
            assert now.startswith(seen)  # only ever appended to, never rewritten
            assert inode in (None, history.stat().st_ino)
            seen, inode = now, history.stat().st_ino
    text = history.read_text()
    assert text.startswith("# Team Notes History")
    markers = _markers(text) + _markers((home / "notes.md").read_text())
    assert len(markers) == 8 == len(set(markers))


@pytest.mark.parametrize("cut", ["whole", "torn"])
def test_a_kill_after_the_history_append_leaves_each_section_once(
        make_daemon, short_home, cut) -> None:
    home = home_with(short_home, BOUND)
    daemon = make_daemon()
    for n in range(5):
        _batch(daemon, n)
    daemon.stop()
    history = home / "notes" / "archive" / "notes-history.md"
    before = history.read_bytes()
    doomed = make_daemon(env={"MINIONS_TEST_CRASH_AT": "history:1"})
    doomed.call("inbox.submit", author="ripley", title="Plum report 5",
                body="Plum build 5 passed after the lint fix number 5. " * 5)
    with pytest.raises(Exception):  # noqa: B017 - the daemon dies mid-call
        doomed.call("consolidation.run", force=True)
    doomed.proc.wait(10)
    assert doomed.proc.returncode == -9
    appended = history.read_bytes()[len(before):]
    assert appended, "the batch moved sections out before it was killed"
    if cut == "torn":  # as if the kill came in the middle of the write
        with open(history, "r+b") as file:
            file.truncate(len(before) + len(appended) // 2)
    daemon = make_daemon()  # recovery redoes the batch
    wait_for(lambda: daemon.call("consolidation.run", force=True)["mode"] == "nothing",
             what="inbox drained")
    assert history.read_bytes() == before + appended
    markers = _markers(history.read_text()) + _markers((home / "notes.md").read_text())
    assert len(markers) == 6 == len(set(markers))


def _big_batch(daemon, n: int) -> None:
    """A batch of 30 notes: its digest section is several kilobytes."""
    for k in range(30):
        daemon.call("inbox.submit", author="ripley", title=f"Résumé cache {n}.{k}",
                    body=f"Cache shard {n}.{k} für 日本語 failed: index {k * 7919 + n} was stale.")
    daemon.call("consolidation.run", force=True)


def test_a_bound_raised_after_a_kill_at_the_history_step_doubles_nothing(
        make_daemon, short_home) -> None:
    """The killed batch appended several large sections; before the restart the bound is
    raised, so the redo moves only the oldest of them, far from the history's end. It is
    found there and not appended again, nor is any section by the batches after."""
    home = home_with(short_home, BOUND)
    daemon = make_daemon()
    _batch(daemon, 0)
    daemon.call("config.set", key="engine.notes_max_bytes", value=1_000_000)
    for n in range(1, 5):
        _big_batch(daemon, n)
    daemon.call("config.set", key="engine.notes_max_bytes", value=1024)
    daemon.stop()
    notes = home / "notes.md"
    held = len(notes.read_bytes())
    doomed = make_daemon(env={"MINIONS_TEST_CRASH_AT": "history:1"})
    doomed.call("inbox.submit", author="ripley", title="Plum report 5", body="Plum build 5 ok.")
    with pytest.raises(Exception):  # noqa: B017 - the daemon dies mid-call
        doomed.call("consolidation.run", force=True)
    doomed.proc.wait(10)
    history = home / "notes" / "archive" / "notes-history.md"
    assert len(_markers(history.read_text())) >= 4  # the killed batch moved several out
    # Raised: the redo's notes.md (the same sections plus the small new one) is just over it.
    config = home / "config.toml"
    config.write_text(config.read_text().replace("notes_max_bytes = 1024",
                                                 f"notes_max_bytes = {held}"))
    daemon = make_daemon()
    wait_for(lambda: daemon.call("consolidation.run", force=True)["mode"] == "nothing",
             what="inbox drained")
    for n in range(6, 9):
        _batch(daemon, n)
    in_history = _markers(history.read_text())
    assert len(in_history) == len(set(in_history)), in_history
