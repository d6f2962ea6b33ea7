"""Fresh memory (SPEC §3.1, §3.7 v2): the wait bound below the threshold, and live edits
under knowledge/ reaching SQL without the sweep. Real daemon, real watcher, real files."""

from __future__ import annotations

import os
import time
from pathlib import Path

from tests.conftest import wait_for


def home_with(short_home: Path, engine: str) -> Path:
    short_home.mkdir(parents=True, exist_ok=True)
    (short_home / "config.toml").write_text(f"[engine]\ninbox_settle_ms = 50\n{engine}")
    return short_home


def drop(inbox: Path, name: str, text: str, age_s: float = 0) -> Path:
    inbox.mkdir(parents=True, exist_ok=True)
    tmp = inbox / f".{name}.tmp"
    tmp.write_text(text)
    path = inbox / name
    os.replace(tmp, path)
    if age_s:
        stamp = time.time() - age_s
        os.utime(path, (stamp, stamp))
    return path


def archived(home: Path) -> list[str]:
    archive = home / "notes" / "archive"
    return sorted(p.name for p in archive.iterdir()) if archive.exists() else []


def hits(daemon, query: str) -> list[dict]:
    return daemon.call("memory.search", query=query)["records"]


# --- engine.inbox_max_wait_s -------------------------------------------------------------------

def test_a_single_note_is_consolidated_once_it_has_waited(make_daemon, short_home):
    # The rescan is an hour away: only the wait timer can start this batch.
    home = home_with(short_home, "inbox_max_wait_s = 1\nrescan_interval_s = 3600\n")
    daemon = make_daemon()
    drop(home / "notes" / "inbox", "dallas-jitter.md",
         "# Token refresh needs jitter\n\nAll clients retry quornflake at once after an outage.\n")
    wait_for(lambda: len(archived(home)) == 1, timeout=20, what="the lone note archived")
    found = wait_for(lambda: hits(daemon, "quornflake"), what="the note recallable")
    assert found[0]["title"] == "Token refresh needs jitter"
    assert daemon.call("status")["inbox"]["pending"] == 0


def test_with_max_wait_zero_a_lone_note_waits_for_the_threshold(make_daemon, short_home):
    home = home_with(short_home, "inbox_max_wait_s = 0\n")
    daemon = make_daemon()
    drop(home / "notes" / "inbox", "dallas-old.md", "# Old note\n\nwaited for ages\n",
         age_s=3000)
    daemon.call("maintenance.run", job="rescan")
    assert daemon.call("consolidation.run")["mode"] == "nothing"
    st = daemon.call("status")
    assert st["inbox"]["eligible"] == 1 and st["consolidation"]["batches"] == 0
    assert archived(home) == []


def test_the_bound_counts_from_when_the_note_settled(make_daemon, short_home):
    home = home_with(short_home, "inbox_max_wait_s = 3600\nrescan_interval_s = 3600\n")
    daemon = make_daemon()
    drop(home / "notes" / "inbox", "dallas-aged.md", "# Aged note\n\nwritten 100 s ago\n",
         age_s=100)
    daemon.call("maintenance.run", job="rescan")
    assert daemon.call("consolidation.run")["mode"] == "nothing"  # 100 s < 3600 s
    assert archived(home) == []
    # Lowering the bound below the note's age makes it due at once (config applies live).
    daemon.call("config.set", key="engine.inbox_max_wait_s", value=60)
    wait_for(lambda: len(archived(home)) == 1, what="the aged note archived")
    assert daemon.call("status")["inbox"]["pending"] == 0
