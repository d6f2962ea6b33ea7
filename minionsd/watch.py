"""Inbox watching: watchdog events as hints, a periodic rescan as the ground truth.

watchdog can drop events (queue overflow) and its observer thread dies silently when a
handler raises, so the handler here does nothing but hand a "look again" to the loop, and a
periodic task both pokes the consolidator and restarts a dead observer.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

import structlog
from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from minionsd.app import App

log = structlog.get_logger()


class _Hint(FileSystemEventHandler):
    def __init__(self, loop: asyncio.AbstractEventLoop, poke: Callable[[], None]) -> None:
        self.loop = loop
        self.poke = poke

    def on_any_event(self, event: FileSystemEvent) -> None:
        try:
            if event.event_type in ("created", "modified", "closed", "moved"):
                self.loop.call_soon_threadsafe(self.poke)
        except Exception:  # noqa: BLE001 - an exception here would kill the observer thread
            pass


class InboxWatcher:
    def __init__(self, app: App) -> None:
        self.app = app
        self._observer: Observer | None = None
        self._rescan_task: asyncio.Task | None = None
        self.restarts = 0

    def _poke(self) -> None:
        poke = self.app.hooks.get("poke_inbox")
        if poke is not None:
            poke()

    def _start_observer(self) -> None:
        observer = Observer()
        observer.daemon = True
        observer.schedule(_Hint(asyncio.get_running_loop(), self._poke),
                          str(self.app.home.inbox), recursive=False)
        observer.start()
        self._observer = observer

    def healthy(self) -> bool:
        return self._observer is not None and self._observer.is_alive()

    async def start(self) -> None:
        self.app.home.inbox.mkdir(parents=True, exist_ok=True)
        self._start_observer()
        self._rescan_task = asyncio.get_running_loop().create_task(self._rescan_loop())
        self.app.hooks["watcher_healthy"] = self.healthy

    async def _rescan_loop(self) -> None:
        while True:
            await asyncio.sleep(self.app.config["engine.rescan_interval_s"])
            self.check_observer()
            self._poke()

    def check_observer(self) -> None:
        if not self.healthy():
            log.warning("watch.observer_dead", restarts=self.restarts)
            self.restarts += 1
            with contextlib.suppress(Exception):
                if self._observer is not None:
                    self._observer.stop()
            self._start_observer()

    async def stop(self) -> None:
        if self._rescan_task is not None:
            self._rescan_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._rescan_task
        if self._observer is not None:
            self._observer.stop()
            await asyncio.get_running_loop().run_in_executor(None, self._observer.join, 5)
            self._observer = None
