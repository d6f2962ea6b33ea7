import pytest

from minionsd import db, telemetry
from minionsd.errors import InvalidParams


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
