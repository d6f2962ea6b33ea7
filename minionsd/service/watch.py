"""Inbox watching: watchdog events are hints; the scheduled rescan job is the ground truth.

watchdog can drop events (queue overflow) and its observer thread dies silently when a
handler raises, so the handler here does nothing but hand a "look again" to the loop, and the
rescan job (jobs.rescan, every engine.rescan_interval_s) restarts a dead observer
(observer.py).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path

import structlog
from watchdog.events import FileSystemEvent, FileSystemEventHandler

from minionsd.memory.app import App
from minionsd.service.observer import ObservedDirectory

log = structlog.get_logger()


class _Hint(FileSystemEventHandler):
    """Hands "look again" to the loop; a burst of events (a batch archiving its notes) wakes
    the loop once: an event that finds a hint already on its way adds nothing, and the flag
    is cleared before the poke runs, so no event after it goes unseen."""

    def __init__(self, loop: asyncio.AbstractEventLoop, poke: Callable[[], None]) -> None:
        self.loop = loop
        self.poke = poke
        self._lock = threading.Lock()
        self._queued = False

    def on_any_event(self, event: FileSystemEvent) -> None:
        try:
            if event.event_type in ("created", "modified", "closed", "moved"):
                with self._lock:
                    if self._queued:
                        return
                    self._queued = True
                self.loop.call_soon_threadsafe(self._deliver)
        except Exception:
            with self._lock:
                self._queued = False

    def _deliver(self) -> None:
        with self._lock:
            self._queued = False
        self.poke()


class InboxWatcher(ObservedDirectory):
    def __init__(self, app: App, on_change: Callable[[], None]) -> None:
        super().__init__()
        self.app = app
        self._on_change = on_change  # called on the event loop for every hint

    def _directory(self) -> Path:
        return self.app.home.inbox

    def _handler(self) -> FileSystemEventHandler:
        assert self._loop is not None
        return _Hint(self._loop, self._on_change)

    async def start(self) -> None:
        self.app.home.inbox.mkdir(parents=True, exist_ok=True)
        self._begin()

    async def stop(self) -> None:
        await self._join(self._detach())
