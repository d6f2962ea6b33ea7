"""kill -9 at many points of a large batch, then restart: every note is processed exactly
once (one record, one KB entry, at most one digest contribution, one archived file)."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from tests.conftest import wait_for

NOTES = 12
# Steps per batch: start, digest, notes (then history, when notes.md outgrows its bound:
# not here), kb x12, notebook x4 (dallas), sql, archive x12, finish
CRASH_POINTS = ["start:1", "digest:1", "notes:1", "kb:1", "kb:6", "kb:12", "notebook:1",
                "notebook:4", "sql:1", "archive:1", "archive:7", "archive:12", "finish:1",
                "any:5", "any:17", "any:23"]


def write_notes(inbox: Path) -> list[str]:
    inbox.mkdir(parents=True, exist_ok=True)
    tokens = []
    for i in range(NOTES):
        token = f"tok{i:02d}zq"
        author = "dallas" if i % 3 == 0 else f"human{i}"
        path = inbox / f"{author}-note-{i:02d}.md"
        path.write_text(f"---\nagent: {author}\n---\n# Finding {i}\n\n"
                        f"- **Insight {i}**: the marker {token} proves uniqueness {i}\n")
        stamp = time.time() - 100 + i
        os.utime(path, (stamp, stamp))
        tokens.append(token)
    return tokens


def occurrences(paths: list[Path], token: str) -> int:
    return sum(1 for p in paths if p.is_file() and token in p.read_text(errors="replace"))


@pytest.mark.parametrize("crash_at", CRASH_POINTS)
def test_kill_at_any_step_loses_and_duplicates_nothing(make_daemon, short_home, crash_at):
    short_home.mkdir(parents=True)
    (short_home / "config.toml").write_text(
        "[engine]\ninbox_settle_ms = 0\nauto_consolidate_memory = false\n"
        "[agents.dallas]\nname = \"Dallas\"\n")
    tokens = write_notes(short_home / "notes" / "inbox")
    doomed = make_daemon(env={"MINIONS_TEST_CRASH_AT": crash_at})
    with pytest.raises(Exception):  # noqa: B017 - the daemon dies mid-call
        doomed.call("consolidation.run", force=True)
    doomed.proc.wait(10)
    assert doomed.proc.returncode == -9

    daemon = make_daemon()  # recovery runs at start-up
    wait_for(lambda: daemon.call("consolidation.run", force=True)["mode"] == "nothing",
             what="inbox drained")
    home = short_home
    inbox_left = list((home / "notes" / "inbox").glob("*.md"))
    assert inbox_left == []
    archive = [p for p in (home / "notes" / "archive").iterdir()
               if p.name != "notes-history.md"]
    kb = [p for p in (home / "knowledge").rglob("*.md") if p.parent.name != "agents"]
    notebook = home / "knowledge" / "agents" / "dallas.md"
    digest_files = [home / "notes.md", home / "notes" / "archive" / "notes-history.md"]
    for i, token in enumerate(tokens):
        assert daemon.call("memory.search", query=token)["total"] == 1, token
        assert occurrences(archive, token) == 1, token
        assert occurrences(kb, token) == 1, token
        digest_hits = sum(p.read_text().count(token) for p in digest_files if p.exists())
        assert digest_hits <= 1, token
        if i % 3 == 0:
            assert notebook.read_text().count(token) == 1, token
    assert len(archive) == NOTES and len(kb) == NOTES
    # The digest links each note's KB entry, chosen before the digest and kept by the redo.
    links = re.findall(r"\]\((knowledge/[^)]+)\)", (home / "notes.md").read_text())
    assert sorted(links) == sorted(str(p.relative_to(home)) for p in kb)
    assert daemon.call("status")["records"]["active"] == NOTES
