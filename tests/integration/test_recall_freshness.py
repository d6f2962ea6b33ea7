"""memory.retrieve through the real daemon never serves a record past a change to it: the
in-memory record view and its caches follow retracts, pins, supersedes and new records."""

from __future__ import annotations

import pytest

from tests.integration.test_recall import add, configure

TASK = {"id": "W-7", "title": "ZookeeperSession expiry kills the KafkaMirror consumer",
        "description": "After a zookeeper session expiry the mirror consumer stops."}


def selected(daemon) -> list[str]:
    result = daemon.call("memory.retrieve", task=TASK, project="atlas", agent="dallas")
    assert result["mode"] == "active"
    assert result["fallback_reason"] in (None, "no_results"), result
    return [s["id"] for s in result["selected"]]


@pytest.fixture
def seeded(make_daemon, short_home):
    # No score cutoff: in a memory of four notes, bm25 gives a word in half of them almost no
    # weight, so the newer fix below would score under the cutoff. These tests are about the
    # record view following changes, not about the cutoff (test_recall.py has that).
    configure(short_home, "[engine]\nmemory_retrieval_min_score_ratio = 0.0")
    d = make_daemon()
    d.ids = {
        "target": add(d, "ZookeeperSession expiry: raise the session timeout of the "
                         "KafkaMirror consumer", title="Zookeeper session expiry",
                      scope="project:atlas"),
        "css": add(d, "The CSS grid breaks on Safari"),
        "deploy": add(d, "Freeze deploys on Friday afternoons"),
    }
    return d


def test_retracted_record_leaves_retrieval_and_a_new_one_joins(seeded):
    d = seeded
    assert selected(d) == [d.ids["target"]]
    assert selected(d) == [d.ids["target"]]  # served warm (view and caches filled)
    d.call("memory.retract", id=d.ids["target"], reason="wrong fix")
    assert selected(d) == []
    fresh = add(d, "KafkaMirror consumer: a zookeeper session expiry is survived by "
                   "restarting the consumer", title="KafkaMirror restart", scope="agent:dallas")
    assert selected(d) == [fresh]
    result = d.call("memory.retrieve", task=TASK, project="atlas", agent="dallas")
    assert fresh in result["text"] and d.ids["target"] not in result["text"]


def test_pin_supersede_and_expire_are_followed(seeded):
    d = seeded
    target = d.ids["target"]
    assert selected(d) == [target]
    d.call("memory.retract", id=target, reason="wrong")
    assert selected(d) == []
    d.call("memory.pin", id=target)  # pinning makes the record active again
    assert selected(d) == [target]
    newer = add(d, "ZookeeperSession expiry in KafkaMirror is fixed by the 2.8 client upgrade",
                title="Zookeeper session fix", scope="project:atlas")
    assert set(selected(d)) == {target, newer}
    d.call("memory.supersede", id=target, by=newer)
    assert selected(d) == [newer]
    d.call("memory.expire", id=newer)
    assert selected(d) == []
    # Other projects never see the project record, before or after the changes.
    other = d.call("memory.retrieve", task=TASK, project="zeta", agent="dallas")
    assert [s["id"] for s in other["selected"]] == []


def test_queued_telemetry_rows_are_read_back_and_survive_a_stop(seeded, make_daemon):
    """memory.retrieve does not wait for its telemetry row, but no row goes missing: reads
    see every earlier retrieval, and a SIGTERM right after writes the queued rows first."""
    d = seeded
    for n in range(5):
        d.call("memory.retrieve", task=TASK | {"id": f"W-q{n}"}, project="atlas", agent="dallas")
    rows = d.call("telemetry.retrievals", limit=10)["rows"]
    assert [r["task_id"] for r in rows[:5]] == [f"W-q{n}" for n in reversed(range(5))]
    for n in range(3):
        d.call("memory.retrieve", task=TASK | {"id": f"W-s{n}"}, project="atlas", agent="dallas")
    assert d.stop() == 0
    again = make_daemon()
    rows = again.call("telemetry.retrievals", limit=3)["rows"]
    assert [r["task_id"] for r in rows] == ["W-s2", "W-s1", "W-s0"]


def test_a_lone_surrogate_in_a_task_costs_no_telemetry_row(seeded):
    d = seeded
    d.call("memory.retrieve", task=TASK | {"id": "W-ok1"}, project="atlas", agent="dallas")
    d.call("memory.retrieve", task=TASK | {"id": "W-\ud800"}, project="atlas", agent="dallas")
    result = d.call("prompt.assemble", task=TASK | {"id": "W-ok2"}, project="atlas",
                    agent="dallas")
    assert result["memory_mode"] == "relevant"
    rows = d.call("telemetry.retrievals", limit=3)["rows"]
    assert [r["task_id"] for r in rows] == ["W-ok2", "W-\ufffd", "W-ok1"]
