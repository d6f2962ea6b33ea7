"""status's records figures kept in memory (storage/live_counts.py) equal a count over the
whole table at any time asked, after any lifecycle steps, including records that expire at
read time; past the expiry times memory holds they say so instead of guessing."""

from __future__ import annotations

import bisect
import contextlib
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minionsd.clock import iso
from minionsd.errors import InvalidParams, InvalidState
from minionsd.storage import job_runs, journal, records, submissions
from minionsd.storage.database import Database
from minionsd.storage.live_counts import LiveCounts
from tests.unit.test_record_counts import new_record, step

T0 = datetime(2026, 6, 1, tzinfo=UTC)
HEAD = 3  # few kept expiry times, so the "not known from memory" edge is reached often


OPS = st.lists(st.tuples(
    st.sampled_from(["add", "add_expiring", "retract", "supersede", "expire", "pin",
                     "expire_due", "delete", "set_expiry", "advance", "nothing", "rollback"]),
    st.integers(0, 50), st.integers(-30, 30)), max_size=40)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_figures_equal_a_full_count_or_say_they_cannot(conn: sqlite3.Connection,
                                                       ops: list) -> None:
    conn.execute("DELETE FROM memory_records")
    live = LiveCounts(head=HEAD)
    live.refresh(conn)
    now = T0
    ids: list[str] = []
    for op, pick, hours in ops:
        if op == "advance":
            now += timedelta(hours=abs(hours))
        elif op != "nothing":
            kept = list(ids)
            conn.execute("BEGIN IMMEDIATE")
            try:
                step(conn, ids, op, pick, hours, now)
            except (InvalidState, InvalidParams):
                pass  # a step the lifecycle refuses (e.g. retracting twice) changes nothing
            if op == "rollback" or (op == "add" and pick % 7 == 0):
                conn.execute("ROLLBACK")  # what a failed write leaves: nothing
                ids[:] = kept
            else:
                conn.execute("COMMIT")
            live.refresh(conn)  # the writer does this after every transaction
        for at in (now, now + timedelta(hours=12), now - timedelta(hours=12),
                   now + timedelta(days=400)):
            figures = live.records(iso(at))
            expected = records.status_counts_by_scan(conn, at)
            if figures is not None:
                assert figures == expected
            else:  # only when more records may expire by then than memory keeps
                due = conn.execute(
                    "SELECT count(*) FROM memory_records WHERE status = 'active' "
                    "AND expires_at IS NOT NULL AND expires_at <= ?", (iso(at),)).fetchone()[0]
                assert due >= HEAD


def test_a_commit_that_changed_nothing_reads_nothing_again(conn: sqlite3.Connection) -> None:
    live = LiveCounts()
    live.refresh(conn)
    first = live.figures
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("COMMIT")
    live.refresh(conn)
    assert live.figures is first
    conn.execute("BEGIN IMMEDIATE")
    new_record(conn, T0, None)
    conn.execute("COMMIT")
    live.refresh(conn)
    assert live.figures is not first and live.figures.version == first.version + 1
    assert live.records(iso(T0))["active"] == 1


def test_journal_counters_and_job_results_follow_the_writes(conn: sqlite3.Connection) -> None:
    live = LiveCounts()
    live.refresh(conn)
    assert live.job_runs() == {} and live.counters() == journal.counters(conn)
    conn.execute("BEGIN IMMEDIATE")
    job_runs.record_run(conn, "expiry", iso(T0), True, "expired=2")
    conn.execute("COMMIT")
    live.refresh(conn)
    assert live.job_runs() == job_runs.last_runs(conn) == {
        "expiry": {"at": iso(T0), "ok": True, "summary": "expired=2"}}


def test_a_database_answers_with_its_own_write_already_counted(tmp_path: Path) -> None:
    """The figures are read on the writer before the write's caller hears back: a write that
    was answered is in them (what `status` after `memory.add` relies on)."""
    import asyncio

    db = Database(tmp_path / "state.db")
    try:
        async def run() -> None:
            for n in range(5):
                await db.write_grouped(lambda c, n=n: new_record(c, T0, n - 2))
                counts = db.live.records(iso(T0))
                assert counts == await db.read(records.status_counts_by_scan, T0)
                assert sum(counts.values()) == n + 1
        asyncio.run(run())
    finally:
        db.close()


def test_expiry_times_compare_as_sql_compares_them() -> None:
    kept = sorted(["2026-06-01T00:00:00.000Z", "2026-06-01T00:00:00.001Z",
                   "2026-06-02T10:00:00.000Z"])
    memory = sqlite3.connect(":memory:")
    try:
        for now in ("2026-06-01T00:00:00.000Z", "2026-06-01T00:00:00.0005Z", "2026-06-03"):
            sql = memory.execute(
                "SELECT count(*) FROM (SELECT ? AS e UNION ALL SELECT ? UNION ALL SELECT ?) "
                "WHERE e <= ?", (*kept, now)).fetchone()[0]
            assert bisect.bisect_right(kept, now) == sql
    finally:
        memory.close()


def traced_refresh(conn: sqlite3.Connection, live: LiveCounts) -> list[str]:
    """The statements live.refresh(conn) runs."""
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    try:
        live.refresh(conn)
    finally:
        conn.set_trace_callback(None)
    return statements


def telemetry_row() -> dict:
    return {"at": iso(T0), "task_id": "t", "project": None, "agent": None, "terms": ["x"],
            "candidates": 0, "selected_ids": [], "bytes": 0, "duration_ms": 1.0,
            "shadow": False, "fallback_reason": None, "error": None}


def test_a_telemetry_only_commit_reads_no_figure_again(conn: sqlite3.Connection) -> None:
    """Retrieval's telemetry commits change no figure status shows: after one, the writer
    runs one statement (the flags), not the four figure reads."""
    from minionsd.storage import telemetry

    live = LiveCounts()
    live.refresh(conn)
    first = live.figures
    conn.execute("BEGIN IMMEDIATE")
    telemetry.insert(conn, telemetry_row())
    conn.execute("COMMIT")
    ran = traced_refresh(conn, live)
    assert live.figures is first
    assert len(ran) == 1 and "live_touched" in ran[0], ran
    assert live.inbox_version == 0


def test_each_kind_of_change_reads_only_its_own_figures(conn: sqlite3.Connection) -> None:
    live = LiveCounts()
    live.refresh(conn)

    def commit(write) -> list[str]:
        conn.execute("BEGIN IMMEDIATE")
        write()
        conn.execute("COMMIT")
        return traced_refresh(conn, live)

    ran = commit(lambda: job_runs.record_run(conn, "expiry", iso(T0), True, "ok"))
    assert any("job_runs" in s for s in ran) and not any("record_counts" in s for s in ran)
    assert live.job_runs() == job_runs.last_runs(conn)
    ran = commit(lambda: journal.bump(conn, "batches"))
    assert any("counters" in s for s in ran) and not any("job_runs" in s for s in ran)
    assert live.counters() == journal.counters(conn)
    ran = commit(lambda: new_record(conn, T0, 5))
    assert any("record_counts" in s for s in ran) and not any("job_runs" in s for s in ran)
    assert live.records(iso(T0)) == records.status_counts_by_scan(conn, T0)
    before = live.inbox_version
    ran = commit(lambda: submissions.set_hold(conn, "a.md", True, T0))
    assert live.inbox_version == before + 1
    assert live.inbox == (before + 1, {"a.md"}, set())
    assert not any("record_counts" in s or "job_runs" in s for s in ran)
    conn.execute("BEGIN IMMEDIATE")  # a rolled-back change flags nothing
    submissions.set_hold(conn, "b.md", True, T0)
    conn.execute("ROLLBACK")
    assert len(traced_refresh(conn, live)) <= 1 and live.inbox_version == before + 1


WRITES = st.lists(st.sampled_from(
    ["record", "expiring", "retract", "set_expiry", "job", "counter", "hold", "unhold",
     "batch", "telemetry", "rollback"]), max_size=30)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(writes=WRITES)
def test_flagged_refresh_equals_a_full_read(conn: sqlite3.Connection, writes: list) -> None:
    """Whatever mix of writes, the figures kept equal a full read of every figure, and the
    inbox version moves exactly when holds or batches changed."""
    from minionsd.storage import telemetry
    from minionsd.storage.live_counts import read_figures

    for table in ("memory_records", "job_runs", "inbox_holds", "batch_notes", "batches"):
        conn.execute(f"DELETE FROM {table}")
    live = LiveCounts(head=HEAD)
    live.refresh(conn)
    ids: list[str] = []
    for number, write in enumerate(writes):
        before = live.inbox_version
        holds = submissions.held_names(conn)
        batches = conn.execute("SELECT count(*) FROM batches").fetchone()[0]
        conn.execute("BEGIN IMMEDIATE")
        if write == "record":
            ids.append(new_record(conn, T0, None))
        elif write == "expiring":
            ids.append(new_record(conn, T0, number % 5 - 2))
        elif write == "retract" and ids:
            with contextlib.suppress(InvalidState, InvalidParams):
                records.retract(conn, ids[number % len(ids)], "gone", T0)
        elif write == "set_expiry" and ids:
            conn.execute("UPDATE memory_records SET expires_at = ? WHERE id = ?",
                         (iso(T0 + timedelta(hours=number - 10)), ids[number % len(ids)]))
        elif write == "job":
            job_runs.record_run(conn, f"job{number % 3}", iso(T0), number % 2 == 0, "x")
        elif write == "counter":
            journal.bump(conn, "batches")
        elif write in ("hold", "unhold"):
            submissions.set_hold(conn, f"n{number % 3}.md", write == "hold", T0)
        elif write == "batch":
            journal.create(conn, f"b{number}", "2026-06-01", T0, [])
        elif write == "telemetry":
            telemetry.insert(conn, telemetry_row())
        conn.execute("ROLLBACK" if write == "rollback" else "COMMIT")
        live.refresh(conn)
        full = read_figures(conn, live.figures.version, HEAD)
        assert live.figures == full
        changed = submissions.held_names(conn) != holds or \
            conn.execute("SELECT count(*) FROM batches").fetchone()[0] != batches
        assert (live.inbox_version != before) == changed
        assert live.inbox == (live.inbox_version, submissions.held_names(conn),
                              journal.names_in_open_batches(conn))
