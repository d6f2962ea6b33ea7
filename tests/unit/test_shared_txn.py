"""Jobs from many threads share write transactions (service/shared_txn.py) on a real
database: each gets its own outcome, a job that fails fails alone (what it wrote undone), and a
failed end step fails its whole transaction and commits nothing of it."""

from __future__ import annotations

import threading

import pytest

from minionsd.errors import Conflict, StorageError
from minionsd.service.shared_txn import SharedTransactions
from minionsd.storage.database import Database
from minionsd.storage.submissions import alone
from tests.harness import run_at_once


@pytest.fixture
def db(tmp_path):
    database = Database(tmp_path / "state.db")
    yield database
    database.close()


def put(name: str):
    def job(conn):
        conn.execute("INSERT INTO counters (name, value) VALUES (?, 'x')", (name,))
        return name
    return job


def names(db: Database) -> set[str]:
    return {r[0] for r in db.read_blocking(lambda c: c.execute(
        "SELECT name FROM counters WHERE name LIKE 'job-%'").fetchall())}


def run_together(shared: SharedTransactions, jobs: list) -> list:
    return run_at_once([lambda job=job: shared.run(job) for job in jobs])


def test_jobs_queued_during_a_transaction_share_the_next_and_each_gets_its_own_outcome(db):
    ends: list[list] = []
    shared = SharedTransactions(db.write_blocking, lambda conn, done: ends.append(done), alone)
    gate = threading.Event()

    def first(conn):
        gate.wait(30)  # holds its transaction open until the others are queued
        return put("job-first")(conn)

    leader = threading.Thread(target=shared.run, args=(first,))
    leader.start()
    jobs = [put(f"job-{n}") for n in range(23)]
    outcomes: list = []
    followers = threading.Thread(target=lambda: outcomes.extend(run_together(shared, jobs)))
    followers.start()
    while shared.waiting() < 23:
        gate.wait(0.005)
    gate.set()
    leader.join()
    followers.join()
    assert outcomes == [f"job-{n}" for n in range(23)]
    assert names(db) == {"job-first"} | {f"job-{n}" for n in range(23)}
    assert shared.transactions == len(ends) == 2  # the end step ran once per transaction
    assert sorted(ends[1]) == sorted(f"job-{n}" for n in range(23))


def test_a_callers_mistake_fails_alone(db):
    shared = SharedTransactions(db.write_blocking, lambda conn, done: None, alone)

    def refused(conn):
        raise Conflict("task t already has a finding")

    jobs = [put(f"job-{n}") if n % 3 else refused for n in range(12)]
    outcomes = run_together(shared, jobs)
    for n, outcome in enumerate(outcomes):
        if n % 3:
            assert outcome == f"job-{n}"
        else:
            assert isinstance(outcome, Conflict)
    assert names(db) == {f"job-{n}" for n in range(12) if n % 3}


def test_a_failed_end_step_fails_its_transaction_and_commits_none_of_it(db):
    ends: list[list] = []

    def end(conn, done) -> None:
        ends.append(done)
        if any(name == "job-bad" for name in done):
            raise OSError("the directory could not be synced")

    shared = SharedTransactions(db.write_blocking, end, alone)
    with pytest.raises((OSError, StorageError)):
        shared.run(put("job-bad"))
    assert names(db) == set()
    assert shared.run(put("job-good")) == "job-good"  # the next transaction starts clean
    assert names(db) == {"job-good"}
    outcomes = run_together(shared, [put("job-bad")] + [put(f"job-{n}") for n in range(8)])
    failed = [o for o in outcomes if isinstance(o, BaseException)]
    assert failed  # the bad one, and whatever shared its transaction
    assert names(db) == {"job-good"} | {o for o in outcomes if isinstance(o, str)}


def test_a_job_that_fails_after_writing_fails_alone_and_its_writes_are_undone(db):
    """Not only a caller's mistake: a job that wrote and then failed (a note that could not
    be placed) fails alone; its row is rolled back, the jobs beside it are committed."""

    def half(name: str):
        def job(conn):
            put(name)(conn)
            raise OSError(f"{name} could not be placed")
        return job

    shared = SharedTransactions(db.write_blocking, lambda conn, done: None, alone)
    jobs = [half(f"job-{n}") if n % 4 == 0 else put(f"job-{n}") for n in range(16)]
    outcomes = run_together(shared, jobs)
    for n, outcome in enumerate(outcomes):
        if n % 4 == 0:
            assert isinstance(outcome, OSError) and f"job-{n}" in str(outcome)
        else:
            assert outcome == f"job-{n}"
    assert names(db) == {f"job-{n}" for n in range(16) if n % 4}
