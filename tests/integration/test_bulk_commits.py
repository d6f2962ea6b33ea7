"""Bulk work at the speed of the disk (SPEC §5 and §3.1, v3), seen in the database's WAL file:
a JSON-RPC batch of memory.add is one transaction, not one per request, with every request
still answered on its own; a consolidation batch commits a bounded number of times, not a few
per note."""

from __future__ import annotations

import json
import os
import socket
import time

from tests.walframes import CommitCounter

ADDS = 40


def record(i: int) -> dict:
    return {"body": f"Bulk note {i}: the retry budget of worker{i} was raised to {i} tries.",
            "type": "semantic", "scope": "global", "trust": "agent", "source": "bulk-test",
            "title": f"Bulk {i}", "tags": ["bulk"]}


def send_batch(daemon, requests: list[dict]) -> list[dict]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(60)
        sock.connect(str(daemon.socket))
        sock.sendall(json.dumps(requests).encode() + b"\n")
        buffer = b""
        while not buffer.endswith(b"\n"):
            chunk = sock.recv(1 << 16)
            assert chunk, "the daemon closed the connection"
            buffer += chunk
    return json.loads(buffer)


def db_path(daemon):
    return daemon.home / "engine" / "state.db"


def test_a_batch_of_memory_add_is_one_commit_and_every_answer_is_its_own(daemon):
    daemon.call("memory.add", **record(-1))  # start-up writes are behind us
    counter = CommitCounter(db_path(daemon))
    requests = [{"jsonrpc": "2.0", "id": i, "method": "memory.add", "params": record(i)}
                for i in range(ADDS)]
    replies = send_batch(daemon, requests)
    commits = counter.count()
    assert [r["id"] for r in replies] == list(range(ADDS))
    ids = [r["result"]["id"] for r in replies]
    assert len(set(ids)) == ADDS
    assert commits <= 3, f"{ADDS} adds in one batch took {commits} commits"
    # Answered means durable and readable.
    assert daemon.call("memory.get", id=ids[7])["title"] == "Bulk 7"
    assert daemon.call("memory.search", query="worker39")["total"] == 1


def test_a_bad_request_in_a_batch_fails_alone(daemon):
    good = [{"jsonrpc": "2.0", "id": f"g{i}", "method": "memory.add", "params": record(i)}
            for i in range(3)]
    bad_type = {"jsonrpc": "2.0", "id": "bad-type", "method": "memory.add",
                "params": record(9) | {"type": "gossip"}}
    missing = {"jsonrpc": "2.0", "id": "missing", "method": "memory.add",
               "params": {"body": "no type, scope, trust or source"}}
    unknown = {"jsonrpc": "2.0", "id": "unknown", "method": "memory.add",
               "params": record(8) | {"colour": "blue"}}
    notification = {"jsonrpc": "2.0", "method": "memory.add", "params": record(7)}
    replies = send_batch(daemon, [good[0], bad_type, good[1], missing, notification, unknown,
                                  good[2]])
    by_id = {r["id"]: r for r in replies}
    assert list(by_id) == ["g0", "bad-type", "g1", "missing", "unknown", "g2"]
    for name in ("g0", "g1", "g2"):
        record_id = by_id[name]["result"]["id"]
        assert daemon.call("memory.get", id=record_id)["source"] == "bulk-test"
    assert by_id["bad-type"]["error"]["code"] == -32602
    assert "type" in by_id["bad-type"]["error"]["data"]["detail"]
    assert by_id["missing"]["error"]["code"] == -32602
    assert by_id["unknown"]["error"]["code"] == -32602
    assert "colour" in by_id["unknown"]["error"]["data"]["detail"]
    # The notification was carried out, unanswered.
    assert daemon.call("memory.search", query="worker7")["total"] == 1


def test_a_batch_mixing_methods_keeps_request_order(daemon):
    first = {"jsonrpc": "2.0", "id": 1, "method": "memory.add", "params": record(1)}
    replies = send_batch(daemon, [first])
    record_id = replies[0]["result"]["id"]
    # A write then a read of it in one batch: the read sees the write.
    replies = send_batch(daemon, [
        {"jsonrpc": "2.0", "id": 2, "method": "memory.pin", "params": {"id": record_id}},
        {"jsonrpc": "2.0", "id": 3, "method": "memory.get", "params": {"id": record_id}},
        {"jsonrpc": "2.0", "id": 4, "method": "memory.add", "params": record(2)},
        {"jsonrpc": "2.0", "id": 5, "method": "memory.add", "params": record(3)},
        {"jsonrpc": "2.0", "id": 6, "method": "memory.search", "params": {"query": "worker3"}},
    ])
    assert [r["id"] for r in replies] == [2, 3, 4, 5, 6]
    assert replies[1]["result"]["pinned"] is True
    assert replies[4]["result"]["total"] == 1


def write_notes(inbox, count: int) -> None:
    inbox.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        author = "dallas" if i % 2 else f"person{i}"
        path = inbox / f"{author}-finding-{i:02d}.md"
        path.write_text(f"---\nagent: {author}\n---\n# Finding {i}\n\n"
                        f"The cache for shard {i} was warmed before the deploy.\n")
        stamp = time.time() - 100 + i
        os.utime(path, (stamp, stamp))


def test_a_consolidation_batch_commits_a_bounded_number_of_times(make_daemon, short_home):
    notes = 20
    short_home.mkdir(parents=True)
    (short_home / "config.toml").write_text(
        "[engine]\ninbox_settle_ms = 0\nauto_consolidate_memory = false\n"
        "[agents.dallas]\nname = \"Dallas\"\n")
    daemon = make_daemon()
    write_notes(short_home / "notes" / "inbox", notes)
    daemon.call("status")
    counter = CommitCounter(db_path(daemon))
    result = daemon.call("consolidation.run", force=True)
    commits = counter.count()
    assert result["notes"] == notes and result["records_upserted"] == notes
    assert len(result["kb_entries"]) == notes
    assert result["notebooks"] == {"dallas": notes // 2}
    # journal, plans, digest, records, archive marks, finish: a handful, whatever the count.
    assert commits <= 10, f"a batch of {notes} notes took {commits} commits"
    archive = [p for p in (short_home / "notes" / "archive").iterdir()
               if p.name != "notes-history.md"]
    assert len(archive) == notes
    notebook = (short_home / "knowledge" / "agents" / "dallas.md").read_text()
    assert all(f"shard {i} " in notebook for i in range(1, notes, 2))


def test_pipelined_batches_are_answered_in_order_and_a_later_read_sees_them(daemon):
    batches = [[{"jsonrpc": "2.0", "id": f"{b}-{i}", "method": "memory.add",
                 "params": record(100 * b + i)} for i in range(10)] for b in range(3)]
    search = {"jsonrpc": "2.0", "id": "search", "method": "memory.search",
              "params": {"query": "bulk", "limit": 50}}
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(60)
        sock.connect(str(daemon.socket))
        sock.sendall(b"".join(json.dumps(b).encode() + b"\n" for b in batches)
                     + json.dumps(search).encode() + b"\n")
        buffer = b""
        while buffer.count(b"\n") < 4:
            chunk = sock.recv(1 << 16)
            assert chunk, "the daemon closed the connection"
            buffer += chunk
    lines = [json.loads(line) for line in buffer.splitlines()]
    for number, reply in enumerate(lines[:3]):
        assert [r["id"] for r in reply] == [f"{number}-{i}" for i in range(10)]
        assert all("result" in r for r in reply)
    assert lines[3]["id"] == "search" and lines[3]["result"]["total"] == 30
