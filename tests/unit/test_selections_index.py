"""Migration 0012: which retrieval selected which record, kept by triggers and filled for the
telemetry rows a database already had (storage/browse.py reads it for "recalled by")."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from minionsd.storage import browse, telemetry
from minionsd.storage.database import connect, migrate, migrations

T0 = datetime(2026, 12, 1, tzinfo=UTC)


def _row(task: str, agent: str, ids: list[str]) -> dict:
    return {"at": "2026-12-01T00:00:00Z", "task_id": task, "project": None, "agent": agent,
            "terms": ["x"], "candidates": len(ids), "selected_ids": ids, "bytes": 1,
            "duration_ms": 1.0, "shadow": False, "fallback_reason": None, "error": None}


def test_old_rows_are_indexed_and_new_ones_follow(tmp_path: Path) -> None:
    conn = connect(tmp_path / "state.db")
    try:
        before = [m for m in migrations() if m[1] < "0012"]
        for version, _name, sql in before:
            conn.executescript(f"BEGIN;\n{sql}\nPRAGMA user_version = {version};\nCOMMIT;")
        with conn:
            telemetry.insert(conn, _row("T-1", "dallas", ["M-a", "M-b"]))
            telemetry.insert(conn, _row("web-try:1", "dallas", ["M-a"]))
        migrate(conn)
        with conn:
            telemetry.insert(conn, _row("T-2", "ripley", ["M-a"]))
        found = browse.selections(conn, "M-a", None)
        assert [r["task_id"] for r in found["rows"]] == ["T-2", "T-1"] and found["total"] == 2
        assert browse.selections(conn, "M-b", None)["total"] == 1
        assert [r["task_id"] for r in browse.agent_retrievals(conn, "dallas", None)] == ["T-1"]
        with conn:
            assert telemetry.prune(conn, keep=1) == 2
        assert [r["task_id"] for r in browse.selections(conn, "M-a", None)["rows"]] == ["T-2"]
        assert browse.selections(conn, "M-b", None)["total"] == 0
        assert conn.execute("SELECT count(*) FROM retrieval_selections").fetchone()[0] == 1
    finally:
        conn.close()
