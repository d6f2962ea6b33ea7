"""memory.search over the socket on an index large enough for the rare terms to decide the page
(a word in most records beside words in a few hundred): every answer is the plain query's
page and total (tests/search_reference.py, run on the daemon's database file), under status
and scope filters, with retracted and expired records among the matches, and for text that
is not a word at all."""

from __future__ import annotations

import json
import random
import socket
from datetime import UTC, datetime, timedelta

from minionsd.storage.database import connect
from tests.search_reference import reference

RECORDS = 2600
BATCH = 500


def params(rng: random.Random, i: int) -> dict:
    words = ["common"] * rng.randint(1, 3)  # in every record: its idf is clamped
    words += ["widespread"] * (rng.random() < 0.85)
    words += ["sometimes"] * (rng.random() < 0.3)
    words += ["kumquat"] * rng.randint(1, 3) * (rng.random() < 0.04)
    words += ["ERR_DISK_FULL"] * (rng.random() < 0.02)
    words += rng.choices(("deploy", "worker", "queue", "cache", "log"), k=rng.randint(2, 30))
    rng.shuffle(words)
    record = {"body": " ".join(words) + f" n{i}", "title": rng.choice(("Note", "Kumquat note",
                                                                      "Common case")),
              "type": "semantic", "scope": rng.choice(("global", "project:atlas")),
              "trust": "agent", "source": "search-test"}
    if i % 50 == 7:
        record["expires_at"] = (datetime.now(UTC) - timedelta(days=1)).strftime(
            "%Y-%m-%dT%H:%M:%SZ")
    return record


def add_all(daemon, rng: random.Random) -> list[str]:
    ids: list[str] = []
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(120)
        sock.connect(str(daemon.socket))
        reader = sock.makefile("rb")
        for start in range(0, RECORDS, BATCH):
            batch = [{"jsonrpc": "2.0", "id": i, "method": "memory.add",
                      "params": params(rng, i)} for i in range(start, start + BATCH)]
            sock.sendall(json.dumps(batch).encode() + b"\n")
            replies = json.loads(reader.readline())
            ids += [reply["result"]["id"] for reply in sorted(replies, key=lambda r: r["id"])]
        reader.close()
    return ids


def test_search_answers_are_the_plain_querys(daemon):
    rng = random.Random(7)
    ids = add_all(daemon, rng)
    for record_id in rng.sample(ids, 60):
        daemon.call("memory.retract", id=record_id, reason="wrong")
    conn = connect(daemon.home / "engine" / "state.db", readonly=True)
    try:
        assert conn.execute("SELECT count(*) FROM memory_fts WHERE memory_fts MATCH 'kumquat'"
                            ).fetchone()[0] >= 50
        cases = [{"query": q, "limit": limit} for q in (
            "kumquat common", "kumquat widespread common", "ERR_DISK_FULL common sometimes",
            "kumquat ERR_DISK_FULL widespread", "common", "kumquat", "n17 common",
            "Kumquat-note common!", "the and of", "*** \"'", "") for limit in (1, 7, 20, 200)]
        cases += [{"query": "kumquat common", "status": ["active", "retracted", "expired"]},
                  {"query": "kumquat common", "status": ["expired"]},
                  {"query": "kumquat widespread", "scope": "project:atlas", "limit": 5},
                  {"query": "kumquat common", "type": "semantic", "limit": 3}]
        for case in cases:
            answer = daemon.call("memory.search", **case)
            assert answer == reference(conn, case, datetime.now(UTC)), case
        assert daemon.call("memory.search", query="kumquat common")["total"] == \
            daemon.call("memory.search", query="common", limit=1)["total"]
    finally:
        conn.close()


def test_search_of_a_large_index_takes_any_text(daemon):
    rng = random.Random(8)
    add_all(daemon, rng)
    for text in ("kumquat \x00 common", "\"kumquat\" OR common", "kumquat) NEAR(common",
                 "ünïcödé kumquat common", "common:kumquat", "🙂 kumquat"):
        answer = daemon.call("memory.search", query=text, limit=5)
        assert len(answer["records"]) <= 5 and answer["total"] >= len(answer["records"])

