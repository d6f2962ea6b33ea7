"""A consolidation batch commits four times, whatever its size (seen in the WAL file): its
journal entry, its plan with its digest, its records, and its end with the archive marks.
Storm batches likewise. The crash tests (test_crash_safety.py) show that fewer commits still
leave every note processed exactly once."""

from __future__ import annotations

import os
import time

from tests.walframes import CommitCounter

# Journal entry; plan + digest; records; archive marks + end. One more is allowed for a
# write the daemon makes on its own meanwhile (a job's result, telemetry).
MOST_COMMITS = 5


def write_notes(inbox, count: int, same: bool = False) -> None:
    inbox.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        author = "dallas" if i % 2 or same else f"person{i}"
        text = ("# Same note\n\nThe same words every time.\n" if same else
                f"# Finding {i}\n\nThe queue for shard {i} drains before the deploy.\n")
        path = inbox / f"{author}-commit-{i:02d}.md"
        path.write_text(f"---\nagent: {author}\n---\n{text}")
        stamp = time.time() - 100 + i
        os.utime(path, (stamp, stamp))


def _home(short_home):
    short_home.mkdir(parents=True)
    (short_home / "config.toml").write_text(
        "[engine]\ninbox_settle_ms = 0\nauto_consolidate_memory = false\n"
        "consolidation_max_batch = 40\n[agents.dallas]\nname = \"Dallas\"\n")
    return short_home


def test_a_batch_commits_four_times_whatever_its_size(make_daemon, short_home):
    home = _home(short_home)
    daemon = make_daemon()
    for notes in (4, 40):
        write_notes(home / "notes" / "inbox", notes)
        daemon.call("status")
        counter = CommitCounter(home / "engine" / "state.db")
        result = daemon.call("consolidation.run", force=True)
        commits = counter.count()
        assert result["mode"] == "regex" and result["notes"] == notes
        assert commits <= MOST_COMMITS, f"a batch of {notes} notes took {commits} commits"
        for name in os.listdir(home / "notes" / "archive"):
            os.unlink(home / "notes" / "archive" / name)  # the next round reuses the names
    status = daemon.call("status")
    assert status["inbox"]["pending"] == 0


def test_a_storm_batch_commits_as_few_times(make_daemon, short_home):
    home = _home(short_home)
    daemon = make_daemon()
    write_notes(home / "notes" / "inbox", 10, same=True)
    daemon.call("status")
    counter = CommitCounter(home / "engine" / "state.db")
    result = daemon.call("consolidation.run", force=True)
    commits = counter.count()
    assert result["mode"] == "circuit_breaker" and result["notes"] == 10
    # Journal entry, plan + mode, end; the alert note's name claim is one more.
    assert commits <= MOST_COMMITS, f"a storm batch took {commits} commits"
