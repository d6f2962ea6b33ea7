"""APScheduler wiring: *when* maintenance jobs run, never *what* they do (that is jobs.py).

AsyncIOScheduler started inside the running loop, in-memory job store re-registered at every
start, and defaults changed from APScheduler's surprising ones: a 5-minute misfire grace (a busy
loop must not make jobs silently skip), coalescing, and one instance per job.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import structlog
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.interval import IntervalTrigger

from minionsd.clock import iso
from minionsd.errors import InvalidParams
from minionsd.memory import jobs
from minionsd.memory.app import App
from minionsd.memory.jobs import Job
from minionsd.storage import fts, job_runs, records

log = structlog.get_logger()
EXPIRY_INTERVAL_S = 300
RETENTION_INTERVAL_S = 3600
# Private upkeep of the FTS5 index (not a maintenance.run job): once no record has been
# written for a tick, merge index segments while there are more than the target.
FTS_UPKEEP_INTERVAL_S = 5
FTS_MERGE_PAGES = 500  # per write transaction: tens of ms of writer time
FTS_MERGE_BUDGET_S = 2.0  # per tick
FILL_DELAY_S = 3  # after start, before term counts missing since an upgrade are filled in


class Scheduler:
    def __init__(self, app: App, jobs: dict[str, Job]) -> None:
        self.app = app
        self.jobs = jobs
        self._scheduler: AsyncIOScheduler | None = None
        self._locks = {name: asyncio.Lock() for name in jobs}
        self._records_seen: int | None = None
        self._merged_through: int | None = None  # records version the last full merge saw

    def intervals(self) -> dict[str, int]:
        cfg = self.app.config
        return {"rescan": cfg["engine.rescan_interval_s"],
                "expiry": EXPIRY_INTERVAL_S,
                "retention": RETENTION_INTERVAL_S,
                "kb_sweep": cfg["engine.kb_sweep_interval_s"]}

    async def start(self) -> None:
        scheduler = AsyncIOScheduler(job_defaults={"misfire_grace_time": 300, "coalesce": True,
                                                   "max_instances": 1}, timezone="UTC")
        for name, seconds in self.intervals().items():
            scheduler.add_job(self.run_job, IntervalTrigger(seconds=seconds), args=[name],
                              id=name, replace_existing=True)
        scheduler.add_job(self.fts_upkeep, IntervalTrigger(seconds=FTS_UPKEEP_INTERVAL_S),
                          id="fts_upkeep", replace_existing=True)
        scheduler.add_job(self.fill_term_counts, "date", id="fill_term_counts",
                          run_date=datetime.now(UTC) + timedelta(seconds=FILL_DELAY_S))
        scheduler.start()
        self._scheduler = scheduler

    async def config_changed(self, key: str | None) -> None:
        if self._scheduler is None:
            return
        for name, seconds in self.intervals().items():
            job = self._scheduler.get_job(name)
            if job is not None and job.trigger.interval.total_seconds() != seconds:
                self._scheduler.reschedule_job(name, trigger=IntervalTrigger(seconds=seconds))

    async def stop(self) -> None:
        if self._scheduler is not None:
            with contextlib.suppress(Exception):
                self._scheduler.pause()
                self._scheduler.shutdown(wait=False)
            await asyncio.sleep(0)
            self._scheduler = None

    async def fill_term_counts(self) -> int:
        """Once after start: term counts for records that have none (after an upgrade)."""
        try:
            filled = await self.app.off_loop(jobs.fill_term_counts, self.app,
                                             name="fill-term-counts")
        except Exception:
            log.exception("term_counts.fill_failed")
            return 0
        if filled:
            log.info("term_counts.filled", records=filled)
        return filled

    async def fts_upkeep(self) -> int | None:
        """Merge FTS5 segments when records have been quiet for a tick; merge steps that did
        work (None when it did not run).

        Every write adds a segment and each search term visits every segment, so after a
        burst of writes this brings searches back to their cost on a merged index. It waits
        for a quiet tick so bursts are not slowed, stops when records are written again, and
        once a step finds nothing to merge it rests until the records change.
        """
        try:
            return await self._merge_segments()
        except Exception:
            log.exception("fts.upkeep_failed")
            return None

    async def _merge_segments(self) -> int | None:
        db = self.app.db
        version = await db.read(records.records_version)
        quiet, self._records_seen = version == self._records_seen, version
        if not quiet or version == self._merged_through:
            return None
        deadline = time.monotonic() + FTS_MERGE_BUDGET_S
        steps = 0
        while True:
            if time.monotonic() > deadline or await db.read(records.records_version) != version:
                return steps
            if not await db.write(fts.merge_step, FTS_MERGE_PAGES):
                break  # no two segments share a level: nothing to merge
            steps += 1
        log.debug("fts.merged", steps=steps)
        self._merged_through = version
        return steps

    async def run_job(self, name: str) -> dict[str, Any]:
        if name not in self.jobs:
            raise InvalidParams(f"'job' must be one of {', '.join(self.jobs)}; got {name!r}",
                                param="job")
        async with self._locks[name]:
            now = self.app.now()
            try:
                report = await self.app.off_loop(self.jobs[name], self.app, now,
                                                 name=f"job-{name}")
            except Exception as exc:
                log.exception("jobs.failed", job=name)
                await self.app.db.write(job_runs.record_run, name, iso(now), False, str(exc)[:500])
                raise
            summary = ", ".join(f"{k}={v}" for k, v in report.items()
                                if isinstance(v, int | str))[:500]
            await self.app.db.write(job_runs.record_run, name, iso(self.app.now()), True, summary)
            (log.debug if name == "rescan" else log.info)("jobs.done", job=name, summary=summary)
            return {"job": name, "at": iso(now), "report": report}

    def status_now(self) -> dict[str, Any] | None:
        """The same from memory, or None when memory has no job results."""
        last = self.app.db.live.job_runs()
        return None if last is None else self.status_from(last)

    async def status(self) -> dict[str, Any]:
        """Jobs and their last results: from memory (storage/live_counts.py), from SQL only
        when memory has none."""
        last = self.app.db.live.job_runs()
        if last is None:
            last = await self.app.db.read_light(job_runs.last_runs)
        return self.status_from(last)

    def status_from(self, last: dict[str, Any]) -> dict[str, Any]:
        jobs = []
        for name in self.jobs:
            job = self._scheduler.get_job(name) if self._scheduler else None
            next_run = iso(job.next_run_time) if job is not None and job.next_run_time else None
            jobs.append({"id": name, "next_run_at": next_run, "last_result": last.get(name)})
        return {"jobs": jobs}

    def methods(self) -> dict[str, Any]:
        async def maintenance_run(job: Any) -> dict[str, Any]:
            if not isinstance(job, str):
                raise InvalidParams("'job' must be a string", param="job")
            return await self.run_job(job)

        return {"maintenance.run": maintenance_run}
