"""Records by status from the counters kept by triggers (migration 0009) always equal a count
over the whole table, with read-time expiry (SPEC §7), whatever the lifecycle steps were."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minionsd.clock import iso
from minionsd.errors import InvalidParams, InvalidState
from minionsd.storage import record_fields, records
from minionsd.storage.database import connect, migrate

T0 = datetime(2026, 6, 1, tzinfo=UTC)


def new_record(conn: sqlite3.Connection, now: datetime, expires_in_h: int | None) -> str:
    fields = record_fields.validate_new({
        "body": "a note", "type": "semantic", "scope": "global", "trust": "human",
        "source": "test", "expires_at": None if expires_in_h is None
        else iso(now + timedelta(hours=expires_in_h))})
    return records.insert(conn, fields, now)


def step(conn: sqlite3.Connection, ids: list[str], op: str, pick: int, hours: int,
         now: datetime) -> None:
    target = ids[pick % len(ids)] if ids else None
    if op == "add" or target is None:
        ids.append(new_record(conn, now, None))
    elif op == "add_expiring":
        ids.append(new_record(conn, now, hours))
    elif op == "retract":
        records.retract(conn, target, "wrong", now)
    elif op == "supersede":
        records.supersede(conn, target, ids[(pick + 1) % len(ids)], now)
    elif op == "expire":
        records.expire(conn, target, now)
    elif op == "pin":
        records.pin(conn, target, now)
    elif op == "expire_due":
        records.expire_due(conn, now)
    elif op == "delete":
        conn.execute("DELETE FROM memory_records WHERE id = ?", (target,))
        ids.remove(target)
    elif op == "set_expiry":
        conn.execute("UPDATE memory_records SET expires_at = ? WHERE id = ?",
                     (iso(now + timedelta(hours=hours)), target))


OPS = st.lists(st.tuples(
    st.sampled_from(["add", "add_expiring", "retract", "supersede", "expire", "pin",
                     "expire_due", "delete", "set_expiry", "advance"]),
    st.integers(0, 50), st.integers(-30, 30)), max_size=40)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_counters_equal_a_full_count(conn: sqlite3.Connection, ops: list) -> None:
    conn.execute("DELETE FROM memory_records")
    now = T0
    ids: list[str] = []
    for op, pick, hours in ops:
        conn.execute("BEGIN IMMEDIATE")
        try:
            if op != "advance":
                step(conn, ids, op, pick, hours, now)
            else:
                now += timedelta(hours=abs(hours))
        except (InvalidState, InvalidParams):
            pass  # a step the lifecycle refuses (e.g. retracting twice) changes nothing
        finally:
            conn.execute("COMMIT")
        for at in (now, now + timedelta(hours=12), now - timedelta(hours=12)):
            assert records.status_counts(conn, at) == records.status_counts_by_scan(conn, at)


def test_an_upgraded_database_starts_with_its_existing_records_counted(tmp_path: Path) -> None:
    conn = connect(tmp_path / "state.db")
    try:
        from minionsd.storage.database import migrations

        for version, _name, sql in migrations()[:8]:
            conn.executescript(f"BEGIN;\n{sql}\nPRAGMA user_version = {version};\nCOMMIT;")
        conn.execute("BEGIN")
        ids = [new_record(conn, T0, None) for _ in range(5)]
        new_record(conn, T0, -1)  # already past its expiry: reads as expired
        records.retract(conn, ids[0], "wrong", T0)
        conn.execute("COMMIT")
        assert migrate(conn) == list(range(9, len(migrations()) + 1))
        assert records.status_counts(conn, T0) == records.status_counts_by_scan(conn, T0) == {
            "active": 4, "superseded": 0, "retracted": 1, "expired": 1}
    finally:
        conn.close()


def test_the_count_reads_only_records_that_may_expire(conn: sqlite3.Connection) -> None:
    plan = " ".join(row[-1] for row in conn.execute(
        "EXPLAIN QUERY PLAN SELECT count(*) FROM memory_records "
        "INDEXED BY memory_records_expiring WHERE status = 'active' "
        "AND expires_at IS NOT NULL AND expires_at <= ?", (iso(T0),)))
    assert "memory_records_expiring" in plan and "SCAN memory_records " not in plan + " "
