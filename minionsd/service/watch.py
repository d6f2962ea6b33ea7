"""Inbox watching: watchdog events are hints; the scheduled rescan job is the ground truth.

watchdog can drop events (queue overflow) and its observer thread dies silently when a
handler raises, so the handler here does nothing but hand a "look again" to the loop, and the
rescan job (jobs.rescan, every engine.rescan_interval_s) restarts a dead observer.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable

import structlog
from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from minionsd.memory.app import App

log = structlog.get_logger()


class _Hint(FileSystemEventHandler):
    def __init__(self, loop: asyncio.AbstractEventLoop, poke: Callable[[], None]) -> None:
        self.loop = loop
        self.poke = poke

    def on_any_event(self, event: FileSystemEvent) -> None:
        try:
            if event.event_type in ("created", "modified", "closed", "moved"):
                self.loop.call_soon_threadsafe(self.poke)
        except Exception:
            pass


class InboxWatcher:
    def __init__(self, app: App, on_change: Callable[[], None]) -> None:
        self.app = app
        self._on_change = on_change  # called on the event loop for every hint
        self._observer: Observer | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        self.restarts = 0

    def _start_observer(self) -> None:
        observer = Observer()
        observer.daemon = True
        assert self._loop is not None
        observer.schedule(_Hint(self._loop, self._on_change),
                          str(self.app.home.inbox), recursive=False)
        observer.start()
        self._observer = observer

    def healthy(self) -> bool:
        return self._observer is not None and self._observer.is_alive()

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self.app.home.inbox.mkdir(parents=True, exist_ok=True)
        self._start_observer()

    def check_observer(self) -> None:
        """Restart a dead observer (callable from any thread)."""
        with self._lock:
            if self._loop is None or self.healthy():
                return
            log.warning("watch.observer_dead", restarts=self.restarts)
            self.restarts += 1
            with contextlib.suppress(Exception):
                if self._observer is not None:
                    self._observer.stop()
            self._start_observer()

    async def stop(self) -> None:
        with self._lock:
            observer, self._observer, self._loop = self._observer, None, None
        if observer is not None:
            observer.stop()
            await asyncio.get_running_loop().run_in_executor(None, observer.join, 5)
