"""inbox.submit writes and syncs the note before its turn on the writer, which then only
renames it into place: whatever the outcome (new, duplicate, refused), no staged copy is
left in the inbox, and the placed file is the whole note, private to the user."""

from __future__ import annotations

import pytest

from minionsd.client import RpcError
from tests.harness import run_at_once


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


def test_submissions_sent_together_each_get_their_own_outcome(make_daemon, short_home):
    """Concurrent submissions share transactions on the writer: each still gets its own
    answer (new, numbered, duplicate, refused), and every placed note is whole."""

    from minionsd.client import Client

    short_home.mkdir(parents=True, exist_ok=True)
    (short_home / "config.toml").write_text("[engine]\nauto_consolidate_memory = false\n")
    daemon = make_daemon()
    inbox = daemon.home / "notes" / "inbox"
    calls = [{"body": f"Note {n} on the cache", "author": "dallas", "title": f"n{n}"}
             for n in range(16)]
    calls += [{"body": "Same words", "author": "dallas", "title": "same"}] * 3
    calls += [{"body": "Other words", "author": "dallas", "title": "same"}]
    calls += [{"body": f"learned {n}", "author": "dallas", "kind": "finding", "task": "W-1",
               "outcome": "success", "title": f"finding {n}"} for n in range(3)]
    def one(params: dict):
        with Client(str(daemon.socket), timeout=60) as client:
            return client.call("inbox.submit", params)

    replies = run_at_once([lambda params=params: one(params) for params in calls])
    assert all(r["duplicate"] is False for r in replies[:16])
    same = replies[16:19]
    assert sum(not r["duplicate"] for r in same) == 1 and len({r["name"] for r in same}) == 1
    assert replies[19]["duplicate"] is False and replies[19]["name"] != same[0]["name"]
    findings = replies[20:]
    assert sum(isinstance(r, RpcError) for r in findings) == 2
    placed = {r["name"] for r in replies if isinstance(r, dict)}
    assert sorted(p.name for p in inbox.iterdir()) == sorted(placed)
    for call, reply in zip(calls, replies, strict=True):
        if isinstance(reply, dict):
            assert call["body"] in (inbox / reply["name"]).read_text()
    assert daemon.call("status")["inbox"]["pending"] == len(placed)
