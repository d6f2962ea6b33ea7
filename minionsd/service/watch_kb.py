"""Knowledge watching (SPEC §3.7): a hand edit under knowledge/<category>/ reaches SQL live.

watchdog reports created, modified, moved and deleted files under knowledge/; the handler only
notes which entry paths were touched. After `DEBOUNCE_S` without further events the touched
paths are handed, one by one, to `kb_sweep.sync_kb_file`, the KB sweep's code for a single file,
so an editor's burst of writes costs one import. Notebooks (knowledge/agents/), knowledge/_swept/,
hidden, temporary and non-`.md` files are ignored. The daemon's own writes need no special
case: syncing a file SQL already matches changes nothing, and an entry an open consolidation
batch is writing is left to the batch (which links it to the note's record) and looked at again
a few seconds later. The scheduled sweep remains the safety net for missed events.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from pathlib import Path

import structlog
from watchdog.events import FileSystemEvent, FileSystemEventHandler

from minionsd.home import KB_CATEGORIES
from minionsd.memory import kb_sweep
from minionsd.memory.app import App
from minionsd.memory.inbox import is_candidate_name
from minionsd.service.observer import ObservedDirectory

log = structlog.get_logger()
DEBOUNCE_S = 0.5
DEFER_RETRY_S = 5.0  # how soon an entry a batch was writing is looked at again
SYNC_CHUNK = 64  # entries synced per worker thread (a stop waits for one chunk at most)


def present_first(paths: list[Path]) -> list[Path]:
    """`paths`, those that exist first, each part in path order."""
    return sorted(paths, key=lambda path: (not path.exists(), str(path)))


class _Touched(FileSystemEventHandler):
    def __init__(self, watcher: KnowledgeWatcher) -> None:
        self.watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        try:
            if event.is_directory or event.event_type not in (
                    "created", "modified", "closed", "moved", "deleted"):
                return
            for raw in (event.src_path, getattr(event, "dest_path", "")):
                if raw:
                    self.watcher.touched(Path(str(raw)))
        except Exception:
            pass


class KnowledgeWatcher(ObservedDirectory):
    DEAD_EVENT = "kb_watch.observer_dead"
    RECURSIVE = True

    def __init__(self, app: App) -> None:
        super().__init__()
        self.app = app
        self._pending: set[Path] = set()
        self._last_touch = 0.0  # monotonic time of the latest event (under _lock)
        self._armed = False  # a debounce is scheduled or running (under _lock)
        self._stopping = threading.Event()
        self._timer: asyncio.TimerHandle | None = None
        self._task: asyncio.Task | None = None
        self._deferred: set[Path] = set()  # entries an open batch was writing (see _defer)
        self._retry: asyncio.TimerHandle | None = None
        self.synced = 0

    def entry_path(self, path: Path) -> bool:
        """True for knowledge/<category>/<name>.md with a watched category and a real name."""
        root = self.app.home.root / "knowledge"
        try:
            parts = path.relative_to(root).parts
        except ValueError:
            return False
        return len(parts) == 2 and parts[0] in KB_CATEGORIES and is_candidate_name(parts[1])

    def touched(self, path: Path) -> None:
        """Called on the observer thread for every event path. Only the first event of a
        quiet spell wakes the loop; later ones just move the quiet spell's end (a burst of
        a thousand entries costs one timer, not a thousand)."""
        if not self.entry_path(path):
            return
        with self._lock:
            self._pending.add(path)
            self._last_touch = time.monotonic()
            wake, self._armed = not self._armed, True
            loop = self._loop
        if wake and loop is not None:
            loop.call_soon_threadsafe(self._debounce)

    def _debounce(self, delay: float = DEBOUNCE_S) -> None:
        if self._timer is not None:
            self._timer.cancel()
        assert self._loop is not None
        self._timer = self._loop.call_later(delay, self._flush)

    def _flush(self) -> None:
        self._timer = None
        with self._lock:
            quiet_in = self._last_touch + DEBOUNCE_S - time.monotonic()
        if quiet_in > 0:
            self._debounce(quiet_in)  # events came meanwhile: wait for DEBOUNCE_S of quiet
            return
        if self._task is not None and not self._task.done():
            self._debounce()  # one sync at a time; look again once this one is done
            return
        with self._lock:
            paths, self._pending = sorted(self._pending, key=str), set()
            self._armed = False
        if paths and self._loop is not None:
            self._task = self._loop.create_task(self._sync(paths))

    async def _sync(self, paths: list[Path]) -> None:
        """The touched entries, a chunk per worker thread (not a thread per entry). Files on
        disk go first: a moved file (both of its paths touched) is then found at its new path
        while SQL still knows the old one, and keeps its record (kb_sweep._moved_from)."""
        paths = await self.app.off_loop(present_first, paths, name="kb-watch")
        for start in range(0, len(paths), SYNC_CHUNK):
            if self._stopping.is_set():
                return
            chunk = paths[start:start + SYNC_CHUNK]
            deferred = await self.app.off_loop(self._sync_chunk, chunk, name="kb-watch")
            for path in deferred:
                self._defer(path)

    def _sync_chunk(self, paths: list[Path]) -> list[Path]:
        """Sync each entry (on a worker thread); returns the ones an open batch is writing."""
        deferred = []
        for path in paths:
            if self._stopping.is_set():
                break
            try:
                outcome = kb_sweep.sync_kb_file(self.app, path, self.app.now())
            except Exception:
                log.exception("kb_watch.sync_failed", path=self.app.home.rel(path))
                continue
            self.synced += 1
            if outcome == "deferred":
                log.info("kb_watch.deferred", path=self.app.home.rel(path))
                deferred.append(path)
            if outcome not in ("unchanged", "deferred"):
                log.info("kb_watch.synced", path=self.app.home.rel(path), outcome=outcome)
        return deferred

    def _defer(self, path: Path) -> None:
        """An open batch is writing `path` and links it itself; look again a little later, so
        an edit made meanwhile still reaches SQL once the batch is done."""
        self._deferred.add(path)
        if self._retry is None and self._loop is not None:
            self._retry = self._loop.call_later(DEFER_RETRY_S, self._look_again)

    def _look_again(self) -> None:
        self._retry = None
        paths, self._deferred = self._deferred, set()
        for path in paths:
            self.touched(path)

    def _directory(self) -> Path:
        return self.app.home.root / "knowledge"

    def _handler(self) -> FileSystemEventHandler:
        return _Touched(self)

    async def start(self) -> None:
        for category in KB_CATEGORIES:
            (self._directory() / category).mkdir(parents=True, exist_ok=True)
        self._stopping.clear()
        self._begin()

    async def stop(self) -> None:
        self._stopping.set()
        observer = self._detach()
        if self._timer is not None:
            self._timer.cancel()
        if self._retry is not None:
            self._retry.cancel()
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(self._task, 5)
        await self._join(observer)
