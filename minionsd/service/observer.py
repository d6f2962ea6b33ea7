"""One watchdog observer on one directory, owned by a watcher that can check and restart it.

watchdog can drop events (queue overflow) and its observer thread dies silently when a handler
raises, so watchers treat events as hints only, and the rescan job calls `check_observer`
(from any thread) to restart an observer that died. Subclasses say which directory, whether
recursively, and which handler.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from pathlib import Path

import structlog
from watchdog.events import FileSystemEventHandler
from watchdog.observers import Observer

log = structlog.get_logger()


class ObservedDirectory:
    DEAD_EVENT = "watch.observer_dead"
    RECURSIVE = False

    def __init__(self) -> None:
        self._observer: Observer | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        self.restarts = 0

    def _directory(self) -> Path:
        raise NotImplementedError

    def _handler(self) -> FileSystemEventHandler:
        raise NotImplementedError

    def _start_observer(self) -> None:
        observer = Observer()
        observer.daemon = True
        observer.schedule(self._handler(), str(self._directory()), recursive=self.RECURSIVE)
        observer.start()
        self._observer = observer

    def _begin(self) -> None:
        """Start observing (on the event loop, from the component's start())."""
        self._loop = asyncio.get_running_loop()
        self._start_observer()

    def healthy(self) -> bool:
        return self._observer is not None and self._observer.is_alive()

    def check_observer(self) -> None:
        """Restart a dead observer (callable from any thread, e.g. the rescan job)."""
        with self._lock:
            if self._loop is None or self.healthy():
                return
            log.warning(self.DEAD_EVENT, restarts=self.restarts)
            self.restarts += 1
            with contextlib.suppress(Exception):
                if self._observer is not None:
                    self._observer.stop()
            self._start_observer()

    def _detach(self) -> Observer | None:
        """Stop restarting: the observer to stop, now no longer ours."""
        with self._lock:
            observer, self._observer, self._loop = self._observer, None, None
        return observer

    @staticmethod
    async def _join(observer: Observer | None) -> None:
        if observer is not None:
            observer.stop()
            await asyncio.get_running_loop().run_in_executor(None, observer.join, 5)
