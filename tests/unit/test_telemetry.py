import pytest

from minionsd.errors import InvalidParams
from minionsd.storage import database as db
from minionsd.storage import telemetry


def row(i: int) -> dict:
    return {"at": f"2030-01-01T00:00:0{i}.000Z", "task_id": f"W-{i}", "project": None,
            "agent": None, "terms": ["a"], "candidates": i, "selected_ids": [], "bytes": 0,
            "duration_ms": 1.0, "shadow": False, "fallback_reason": None, "error": None}


def test_recent_and_prune(tmp_path):
    conn = db.connect(tmp_path / "state.db")
    db.migrate(conn)
    for i in range(5):
        telemetry.insert(conn, row(i))
    assert [r["task_id"] for r in telemetry.recent(conn, 2)["rows"]] == ["W-4", "W-3"]
    assert set(telemetry.recent(conn, None)["rows"][0]) == set(telemetry.KEYS)
    assert telemetry.prune(conn, keep=2) == 3
    assert [r["task_id"] for r in telemetry.recent(conn, 10)["rows"]] == ["W-4", "W-3"]
    for bad in (0, -1, True, "5", 10_000):
        with pytest.raises(InvalidParams):
            telemetry.recent(conn, bad)


def test_one_row_that_cannot_be_stored_does_not_lose_the_others(tmp_path):
    conn = db.connect(tmp_path / "state.db")
    db.migrate(conn)
    bad = row(2) | {"task_id": "W-\ud800"}  # a lone surrogate has no UTF-8 form
    conn.execute("BEGIN")
    assert telemetry.insert_each(conn, [row(1), bad, row(3)]) == 1
    conn.execute("COMMIT")
    assert [r["task_id"] for r in telemetry.recent(conn, 10)["rows"]] == ["W-3", "W-1"]


def test_task_text_and_names_lose_lone_surrogates():
    from minionsd.text.task import check_optional_name, check_task

    clean = check_task({"id": "W-\ud800", "title": "a \udc00 b", "files": ["x\ud83d.py"],
                        "pr": {"title": "t\ud800"}})
    assert clean["id"] == "W-\ufffd" and clean["title"] == "a \ufffd b"
    assert clean["files"] == ["x\ufffd.py"] and clean["pr"]["title"] == "t\ufffd"
    assert check_optional_name("atl\udfffas", "project") == "atl\ufffdas"
    for value in (clean["id"], clean["title"], clean["files"][0]):
        value.encode("utf-8")  # storable and sendable
