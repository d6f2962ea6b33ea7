"""Blocking work handed to reused daemon threads (minionsd/threads.py): a job runs at once
(never behind another, even a hung one), a worker is reused instead of starting a thread per
job, and idle workers end."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from minionsd.threads import DaemonWorkers, run_in_daemon_thread


def wait_until(predicate, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.01)


def workers_alive() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(("job-", "worker-"))]


def test_jobs_reuse_a_waiting_worker_and_carry_their_name() -> None:
    workers = DaemonWorkers(idle_s=0.2)

    async def run() -> list[tuple[int, str]]:
        seen = []
        for n in range(5):
            seen.append(await run_in_daemon_thread(
                lambda: (threading.get_ident(), threading.current_thread().name),
                name=f"job-{n}", workers=workers))
            while workers.idle() != 1:  # the answer comes just before the worker waits
                await asyncio.sleep(0.001)
        return seen

    seen = asyncio.run(run())
    assert [name for _, name in seen] == [f"job-{n}" for n in range(5)]
    assert len({ident for ident, _ in seen}) == 1  # one thread, reused
    wait_until(lambda: not workers_alive())  # and it ends once idle


def test_a_hung_job_holds_up_no_other() -> None:
    workers = DaemonWorkers(idle_s=0.2)
    release = threading.Event()

    async def run() -> str:
        hung = asyncio.ensure_future(run_in_daemon_thread(release.wait, name="job-hung",
                                                          workers=workers))
        await asyncio.sleep(0.05)
        answered = await asyncio.wait_for(
            run_in_daemon_thread(lambda: "done", name="job-next", workers=workers), 10)
        assert not hung.done()
        release.set()
        await hung
        return answered

    assert asyncio.run(run()) == "done"
    wait_until(lambda: not workers_alive())


def test_errors_reach_the_caller_and_the_worker_lives_on() -> None:
    workers = DaemonWorkers(idle_s=0.2)

    def fail() -> None:
        raise ValueError("bad input")

    async def run() -> int:
        with pytest.raises(ValueError, match="bad input"):
            await run_in_daemon_thread(fail, name="job-fail", workers=workers)
        return await run_in_daemon_thread(lambda: 7, name="job-after", workers=workers)

    assert asyncio.run(run()) == 7
    wait_until(lambda: not workers_alive())


def test_at_most_max_idle_workers_wait() -> None:
    workers = DaemonWorkers(idle_s=1.0, max_idle=2)
    gate = threading.Barrier(5)  # five jobs at once: five threads

    async def together() -> None:
        await asyncio.gather(*(run_in_daemon_thread(gate.wait, name=f"job-{n}",
                                                    workers=workers) for n in range(5)))

    asyncio.run(together())
    wait_until(lambda: workers.idle() == 2 and len(workers_alive()) == 2)
    waiting = {t.ident for t in workers_alive()}

    async def one_by_one() -> set[int]:
        return {await run_in_daemon_thread(threading.get_ident, name="job-x", workers=workers)
                for _ in range(4)}

    assert asyncio.run(one_by_one()) <= waiting  # taken by the waiting ones, no new thread
    wait_until(lambda: not workers_alive() and workers.idle() == 0)


def test_close_ends_the_waiting_workers() -> None:
    workers = DaemonWorkers(idle_s=60.0)

    async def run() -> None:
        await asyncio.gather(*(run_in_daemon_thread(time.sleep, 0.05, name=f"job-{n}",
                                                    workers=workers) for n in range(3)))

    asyncio.run(run())
    wait_until(lambda: workers.idle() == 3)
    workers.close()
    assert not workers_alive() and workers.idle() == 0
    # After close a job still runs, on a thread that ends with it.
    assert asyncio.run(run_in_daemon_thread(lambda: 5, name="job-late", workers=workers)) == 5
    wait_until(lambda: not workers_alive())


def test_end_waiting_lets_go_of_idle_workers_and_the_pool_still_reuses() -> None:
    workers = DaemonWorkers(idle_s=60.0)

    async def run() -> None:
        await asyncio.gather(*(run_in_daemon_thread(time.sleep, 0.05, name=f"job-{n}",
                                                    workers=workers) for n in range(2)))

    asyncio.run(run())
    wait_until(lambda: workers.idle() == 2)
    workers.end_waiting()
    assert not workers_alive() and workers.idle() == 0
    # Not closed: a finished job's worker waits for the next one again.
    assert asyncio.run(run_in_daemon_thread(lambda: 6, name="job-again", workers=workers)) == 6
    wait_until(lambda: workers.idle() == 1)
    workers.close()
    assert not workers_alive()
