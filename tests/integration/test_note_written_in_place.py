"""A note written in place (no temp name and rename) by a writer that pauses longer than
engine.inbox_settle_ms: while the writer holds the file open it is not fully written, so no
batch takes it (status.warnings says why); once closed it is consolidated whole."""

from __future__ import annotations

from tests.conftest import wait_for
from tests.integration.test_consolidation import home_with

NAME = "ripley-slow.md"


def _open_warning(daemon) -> str | None:
    for warning in daemon.call("status")["warnings"]:
        if warning["file"] == f"notes/inbox/{NAME}":
            return warning["reason"]
    return None


def test_a_note_still_open_for_writing_waits_for_its_writer(make_daemon, short_home):
    home = home_with(short_home, "auto_consolidate_memory = false\n")
    daemon = make_daemon()
    inbox = home / "notes" / "inbox"
    inbox.mkdir(parents=True, exist_ok=True)
    with open(inbox / NAME, "w", encoding="utf-8") as writer:
        writer.write("---\ntitle: slow note\nproject: atlas\n")
        writer.flush()
        # The daemon has looked at it long after it stopped changing: settled, but open.
        reason = wait_for(lambda: _open_warning(daemon), what="the open-for-writing warning")
        assert "still open for writing" in reason
        listed = {n["name"]: n for n in daemon.call("inbox.list")["notes"]}
        assert listed[NAME]["eligible"] is False
        run = daemon.call("consolidation.run", force=True)
        assert run["notes"] == 0, run
        assert (inbox / NAME).exists()
        writer.write("---\nFirst half of the slow note.\n")
        writer.flush()
        writer.write("Second half zzsecond of the slow note.\n")
    wait_for(lambda: daemon.call("inbox.list")["notes"][0]["eligible"],
             what="the closed note eligible")
    assert _open_warning(daemon) is None
    assert daemon.call("consolidation.run", force=True)["notes"] == 1
    found = daemon.call("memory.search", query="zzsecond")["records"]
    assert len(found) == 1
    record = daemon.call("memory.get", id=found[0]["id"])
    assert record["title"] == "slow note" and record["project"] == "atlas"
    assert "First half" in record["body"] and "Second half zzsecond" in record["body"]
