"""inbox.submit writes and syncs the note before its turn on the writer, which then only
renames it into place: whatever the outcome (new, duplicate, refused), no staged copy is
left in the inbox, and the placed file is the whole note, private to the user."""

from __future__ import annotations

import pytest

from minionsd.client import RpcError


def test_every_outcome_leaves_only_placed_notes(make_daemon, short_home):
    short_home.mkdir(parents=True, exist_ok=True)
    (short_home / "config.toml").write_text("[engine]\nauto_consolidate_memory = false\n")
    daemon = make_daemon()
    inbox = daemon.home / "notes" / "inbox"
    first = daemon.call("inbox.submit", body="Flush the cache after migrations",
                        author="dallas", title="Cache flush")
    again = daemon.call("inbox.submit", body="Flush the cache after migrations",
                        author="dallas", title="Cache flush")
    other = daemon.call("inbox.submit", body="A different body", author="dallas",
                        title="Cache flush")
    found = daemon.call("inbox.submit", body="learned", author="dallas", kind="finding",
                        task="W-9", outcome="success")
    with pytest.raises(RpcError) as err:  # refused inside the writer's transaction
        daemon.call("inbox.submit", body="again", author="ripley", kind="finding",
                    task="W-9", outcome="success", title="second")
    assert err.value.code == -32002
    assert again == first | {"duplicate": True} and other["duplicate"] is False
    names = sorted(p.name for p in inbox.iterdir())
    assert names == sorted({first["name"], other["name"], found["name"]})
    for name in names:
        path = inbox / name
        assert path.stat().st_mode & 0o777 == 0o600
        assert path.read_text().endswith("\n") and "---\n" in path.read_text()
    assert "Flush the cache after migrations" in (inbox / first["name"]).read_text()
    assert "A different body" in (inbox / other["name"]).read_text()
