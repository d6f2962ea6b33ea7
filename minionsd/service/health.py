"""Liveness: a loop heartbeat, health checks, systemd watchdog pings and a self-watchdog.

systemd gets WATCHDOG=1 only while the event loop keeps up, the inbox watcher lives and the
database answers, so a wedged daemon is restarted rather than left as a zombie. launchd has
no watchdog protocol, so a plain thread exits the process when the loop stops beating for
`wedge_after_s`; KeepAlive then restarts it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from collections.abc import Callable
from typing import Any

import structlog

from minionsd.memory.app import App
from minionsd.service.systemd import Notifier

log = structlog.get_logger()
BEAT_S = 1.0
MAX_LAG_S = 5.0
DB_PROBE_LIMIT_S = 5.0
EXIT_WEDGED = 70


class Health:
    def __init__(self, app: App, notifier: Notifier, *,
                 watchers_alive: Callable[[], bool], wedge_after_s: float = 120.0) -> None:
        self.app = app
        self._watchers_alive = watchers_alive
        self.notifier = notifier
        self.wedge_after_s = wedge_after_s
        self.last_beat = time.monotonic()
        self.lag_s = 0.0
        self._tasks: list[asyncio.Task] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._db_ok = True  # until the first check (at start) says otherwise
        self._probe: asyncio.Task | None = None

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._tasks.append(loop.create_task(self._beat()))
        interval = self.notifier.watchdog_interval_s()
        if interval:
            self._tasks.append(loop.create_task(self._ping(interval / 2)))
        self._thread = threading.Thread(target=self._self_watchdog, name="self-watchdog",
                                        daemon=True)
        self._thread.start()

    async def _beat(self) -> None:
        while True:
            if self._probe is None or self._probe.done():
                self._probe_started = time.monotonic()
                self._probe = asyncio.get_running_loop().create_task(self._probe_db())
            before = time.monotonic()
            await asyncio.sleep(BEAT_S)
            now = time.monotonic()
            self.lag_s = max(0.0, now - before - BEAT_S)
            self.last_beat = now

    async def checks(self) -> dict[str, Any]:
        try:
            db_ok = await asyncio.wait_for(self.app.db.ping(), 5)
        except Exception:
            db_ok = False
        return self._checks(db_ok)

    def _checks(self, db_ok: bool) -> dict[str, Any]:
        return {"loop_lag_ms": round(self.lag_s * 1000, 1),
                "watcher_alive": bool(self._watchers_alive()), "db_ok": db_ok}

    async def _probe_db(self) -> None:
        """The database check status shows, run from the heartbeat (status runs no SQL)."""
        try:
            self._db_ok = await asyncio.wait_for(self.app.db.ping(), 5)
        except Exception:
            self._db_ok = False

    def db_ok(self) -> bool:
        """The last heartbeat's database check, False while one has gone unanswered more than
        5 s (a wedged database)."""
        probe = self._probe
        if probe is not None and not probe.done() \
                and time.monotonic() - self._probe_started > DB_PROBE_LIMIT_S:
            return False
        return self._db_ok

    async def healthy(self) -> bool:
        result = await self.checks()
        return result["loop_lag_ms"] < MAX_LAG_S * 1000 and result["watcher_alive"] \
            and result["db_ok"]

    async def _ping(self, every_s: float) -> None:
        while True:
            if await self.healthy():
                self.notifier.watchdog_ping()
            else:
                log.warning("health.unhealthy", **await self.checks())
            await asyncio.sleep(every_s)

    def _self_watchdog(self) -> None:
        while not self._stop.wait(BEAT_S):
            silent = time.monotonic() - self.last_beat
            if silent > self.wedge_after_s:
                log.error("health.wedged", silent_s=round(silent, 1))
                os._exit(EXIT_WEDGED)

    def status_now(self) -> dict[str, Any]:
        return {"health": self._checks(self.db_ok())}

    async def status(self) -> dict[str, Any]:
        return self.status_now()

    async def stop(self) -> None:
        self._stop.set()
        for task in [*self._tasks, *([self._probe] if self._probe is not None else [])]:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
