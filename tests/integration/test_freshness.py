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


# --- knowledge/ watched live ---------------------------------------------------------------------

def test_knowledge_files_edited_added_and_deleted_reach_sql_live(make_daemon, short_home):
    home = home_with(short_home, "kb_sweep_interval_s = 86400\n")
    daemon = make_daemon()
    conventions = home / "knowledge" / "conventions"
    # Added by hand: found without any sweep.
    entry = conventions / "2026-12-01-alice-retry-budget.md"
    tmp = conventions / ".retry.md.swp"
    tmp.write_text("# Retry budget\n\nEvery client keeps a zarquon retry budget of 3.\n")
    os.replace(tmp, entry)  # an editor's atomic save: a temp file renamed into place
    found = wait_for(lambda: hits(daemon, "zarquon"), what="the new entry searchable")
    assert found[0]["title"] == "Retry budget" and found[0]["source"] == (
        "knowledge/conventions/2026-12-01-alice-retry-budget.md")
    record_id = found[0]["id"]
    assert not found[0]["snippet"].lstrip("\u2026").startswith("#")  # no heading marks
    # Edited in place: the same record follows the new text.
    entry.write_text("# Retry budget\n\nEvery client keeps a blorptastic budget of 5.\n")
    wait_for(lambda: hits(daemon, "blorptastic"), what="the edit searchable")
    assert hits(daemon, "blorptastic")[0]["id"] == record_id
    assert hits(daemon, "zarquon") == []
    # Deleted: no longer found.
    entry.unlink()
    wait_for(lambda: hits(daemon, "blorptastic") == [], what="the deleted entry gone")
    assert daemon.call("memory.get", id=record_id)["status"] == "retracted"
    # Notebooks, temp files and non-entries are not imported.
    (home / "knowledge" / "agents").mkdir(exist_ok=True)
    (home / "knowledge" / "agents" / "dallas.md").write_text("# Notebook\n\nfrobnicatrix\n")
    (conventions / ".draft.md").write_text("# Draft\n\nfrobnicatrix\n")
    (conventions / "notes.txt").write_text("frobnicatrix\n")
    marker = conventions / "2026-12-01-alice-marker.md"
    marker.write_text("# Marker\n\nsnorkelwise\n")
    wait_for(lambda: hits(daemon, "snorkelwise"), what="the marker entry searchable")
    assert hits(daemon, "frobnicatrix") == []
    # The sweep finds nothing left to do: the watcher already brought every entry in.
    report = daemon.call("maintenance.run", job="kb_sweep")["report"]
    assert (report["imported"], report["updated"], report["missing_files"]) == (0, 0, [])


def test_entries_consolidation_writes_do_not_become_second_records(make_daemon, short_home):
    home = home_with(short_home, "auto_consolidate_memory = false\n")
    daemon = make_daemon()
    for i in range(3):
        daemon.call("inbox.submit", author="dallas", title=f"Finding {i}",
                    body=f"The quibbleton{i} cache must be warmed before deploys.")
    result = daemon.call("consolidation.run", force=True)
    assert len(result["kb_entries"]) == 3
    # A marker written after the batch is synced after the batch's own entries were seen.
    marker = home / "knowledge" / "project-notes" / "2026-12-01-alice-marker.md"
    marker.write_text("# Marker\n\nsnorkelwise\n")
    wait_for(lambda: hits(daemon, "snorkelwise"), what="the marker entry searchable")
    for i in range(3):
        assert len(hits(daemon, f"quibbleton{i}")) == 1
    # Hand-editing an entry consolidation wrote updates the note's own record.
    entry = home / result["kb_entries"][0]
    record_id = hits(daemon, "quibbleton0")[0]["id"]
    entry.write_text(entry.read_text().replace("quibbleton0", "wumpusgate"))
    wait_for(lambda: hits(daemon, "wumpusgate"), what="the edit searchable")
    assert [r["id"] for r in hits(daemon, "wumpusgate")] == [record_id]
