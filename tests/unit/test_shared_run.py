"""SharedRun (minionsd/threads.py): concurrent callers share runs of one read, and each gets
the outcome of a run that began after it asked (what keeps `status` exact while its disk
reads are shared)."""

from __future__ import annotations

import asyncio

import pytest

from minionsd.threads import SharedRun


class Counter:
    """A read of a value that changes: each run reports the value when it began."""

    def __init__(self) -> None:
        self.value = 0
        self.runs = 0
        self.release = asyncio.Event()
        self.fail = False

    async def read(self) -> int:
        self.runs += 1
        seen = self.value
        await self.release.wait()
        if self.fail:
            raise ValueError("the read failed")
        return seen


def test_callers_during_a_run_share_the_next_one_and_see_every_earlier_change() -> None:
    async def run() -> None:
        source = Counter()
        shared = SharedRun(source.read)
        first = asyncio.ensure_future(shared.get())
        while source.runs == 0:
            await asyncio.sleep(0)
        source.value = 1  # changed after the first run began
        later = [asyncio.ensure_future(shared.get()) for _ in range(10)]
        await asyncio.sleep(0)
        source.release.set()
        assert await first == 0
        assert await asyncio.gather(*later) == [1] * 10  # a run begun after they asked
        assert source.runs == 2  # eleven callers, two runs
        assert await shared.get() == 1 and source.runs == 3  # idle again: runs at once

    asyncio.run(run())


def test_a_failed_run_fails_its_callers_and_the_next_run_starts_clean() -> None:
    async def run() -> None:
        source = Counter()
        shared = SharedRun(source.read)
        source.fail = True
        source.release.set()
        with pytest.raises(ValueError, match="the read failed"):
            await shared.get()
        source.fail = False
        assert await shared.get() == 0

    asyncio.run(run())


def test_a_caller_that_goes_away_does_not_cancel_the_others() -> None:
    async def run() -> None:
        source = Counter()
        shared = SharedRun(source.read)
        first = asyncio.ensure_future(shared.get())
        while source.runs == 0:
            await asyncio.sleep(0)
        second, third = (asyncio.ensure_future(shared.get()) for _ in range(2))
        await asyncio.sleep(0)
        second.cancel()
        first.cancel()
        source.value = 5
        source.release.set()
        assert await third == 5 and source.runs == 2  # the run begun after it asked
        with pytest.raises(asyncio.CancelledError):
            await second

    asyncio.run(run())
