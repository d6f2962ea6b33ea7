"""Maintenance jobs' last results in storage: the table `job_runs` (migration 0003).

One row per job: when it last ran, whether it succeeded and a one-line summary, so
`status.jobs` can report them after a restart. The scheduler decides when jobs run and what
the summary says; each function here takes a connection inside its read or write.
"""

from __future__ import annotations

import sqlite3
from typing import Any


def record_run(conn: sqlite3.Connection, job: str, at: str, ok: bool, summary: str) -> None:
    conn.execute("""INSERT INTO job_runs (job, last_at, ok, summary) VALUES (?, ?, ?, ?)
                    ON CONFLICT (job) DO UPDATE SET last_at = excluded.last_at,
                        ok = excluded.ok, summary = excluded.summary""",
                 (job, at, int(ok), summary))


def last_runs(conn: sqlite3.Connection) -> dict[str, dict[str, Any]]:
    """{job: {at, ok, summary}} for every job that has run."""
    return {r["job"]: {"at": r["last_at"], "ok": bool(r["ok"]), "summary": r["summary"]}
            for r in conn.execute("SELECT * FROM job_runs")}
