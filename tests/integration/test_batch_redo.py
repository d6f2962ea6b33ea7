"""A batch that keeps failing after its digest was written, and a slow retraction reason
(issue 20 item 10): the digest lands once, and nobody waits on the redactor."""

from __future__ import annotations

import shutil

import pytest

from minionsd.client import RpcError
from tests.integration.test_consolidation import drop, home_with


def test_a_failing_batch_appends_its_digest_once(make_daemon, short_home):
    home = home_with(short_home, "auto_consolidate_memory = false\nnotes_max_bytes = 1024\n")
    daemon = make_daemon()
    # dallas's notebook is a directory: his batch fails after its digest, at the notebook
    # step, and stays open (redone at every consolidation run) until it is fixed.
    blocker = home / "knowledge" / "agents" / "dallas.md"
    blocker.mkdir(parents=True)
    daemon.call("inbox.submit", author="dallas", title="Quince cache",
                body="The quince cache warms on start-up. " * 5)
    with pytest.raises(RpcError):
        daemon.call("consolidation.run", force=True)
    notes = (home / "notes.md").read_text()
    (marker,) = [line for line in notes.splitlines() if "minions:batch=" in line]
    # Later batches grow notes.md past its bound: the failed batch's section moves out.
    for n in range(6):
        daemon.call("inbox.submit", author="ripley", title=f"Plum report {n}",
                    body=f"Plum build {n} passed after the lint fix. " * 6)
        daemon.call("consolidation.run", force=True)
    history = home / "notes" / "archive" / "notes-history.md"
    assert marker not in (home / "notes.md").read_text() and marker in history.read_text()
    shutil.rmtree(blocker)
    daemon.call("consolidation.run", force=True)
    total = (home / "notes.md").read_text().count(marker) + history.read_text().count(marker)
    assert total == 1
    assert daemon.call("memory.search", query="quince cache")["total"] == 1
    assert daemon.call("status")["inbox"]["pending"] == 0


def test_a_huge_retraction_reason_is_stored_cut_and_redacted(daemon):
    record = daemon.call("memory.add", body="The damson queue drains nightly.", title="Damson",
                         type="semantic", scope="global", trust="human", source="test")
    token = "ghp_R8fKq2ZtLw91XbNc4VyH7eJm3UaP0sDgQ6iT"
    # A token across the 1,000-character cut, then near a megabyte of near-secret fragments.
    chunk = "password= token: Bearer aaaa sk-abc eyJabc.def ://u:p@ -----BEGIN x "
    reason = "x" * 980 + f" {token} " + chunk * (900_000 // len(chunk))
    got = daemon.call("memory.retract", id=record["id"], reason=reason)
    assert got["status"] == "retracted"
    assert got["retracted_reason"] == "x" * 980 + " [REDACTED:github_token] "[:20]
    assert daemon.call("status")["records"]


def test_archive_retention_keeps_the_note_archived_last(make_daemon, short_home):
    home = home_with(short_home, "auto_consolidate_memory = false\narchive_max_files = 1\n")
    daemon = make_daemon()
    daemon.call("inbox.submit", author="ripley", title="Fig first",
                body="The fig note archived first.")
    daemon.call("consolidation.run", force=True)
    # Held in the inbox for a month, then archived: the newest archive, with the oldest mtime.
    inbox = home / "notes" / "inbox"
    drop(inbox, "ripley-fig-held.md", "# Fig held\n\nThe fig note held for a month.\n",
         age_s=30 * 86400)
    daemon.call("consolidation.run", force=True)
    report = daemon.call("maintenance.run", job="retention")["report"]
    assert report["archive_deleted"] == 1
    (kept,) = [p.name for p in (home / "notes" / "archive").iterdir()
               if p.name != "notes-history.md"]
    assert "fig-held" in kept
