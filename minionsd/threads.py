"""Run blocking work on a daemon thread and await it from the loop.

asyncio.to_thread uses the default executor, which interpreter shutdown waits for; a hung LLM
call there would hold up SIGTERM. A daemon thread is abandoned instead, which is safe for our
work because every step it takes is journalled or idempotent.

Threads are kept for reuse (DaemonWorkers): starting a thread makes the caller wait until the
new thread has run its first lines, and on the event loop under load that wait is a wait for
the interpreter lock (two hand-overs, each up to the switch interval) during which no request
is served. Handing work to an idle worker is a queue put. A job never waits for another: when
no worker is idle a new one is started, so a hung call cannot hold up the next.
"""

from __future__ import annotations

import asyncio
import itertools
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")
Job = Callable[[], None]


class DaemonWorkers:
    """Daemon threads that run one job at a time and wait for the next; an idle worker ends
    after `idle_s` without work, and at most `max_idle` wait at once (the rest end)."""

    def __init__(self, *, idle_s: float = 20.0, max_idle: int = 32) -> None:
        self.idle_s = idle_s
        self.max_idle = max_idle
        self._jobs: queue.SimpleQueue[tuple[Job, str] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0  # workers waiting for a job, less the jobs queued for them
        self._numbers = itertools.count(1)
        self._closed = False
        self._waiting: set[threading.Thread] = set()

    def submit(self, job: Job, name: str) -> None:
        """Run `job` on a worker thread named `name` while it runs; never waits for work.
        After close() every job gets a thread of its own."""
        with self._lock:
            waiting = self._idle > 0
            if waiting:
                self._idle -= 1
                self._jobs.put((job, name))
        if not waiting:
            threading.Thread(target=self._work, args=(job, name), name=name,
                             daemon=True).start()

    def idle(self) -> int:
        with self._lock:
            return self._idle

    def close(self, timeout: float = 2.0) -> None:
        """End the waiting workers (at shutdown, so none is left behind); a worker still
        running a job ends when it is done (or is abandoned with the process)."""
        with self._lock:
            self._closed = True
        self.end_waiting(timeout)

    def end_waiting(self, timeout: float = 2.0) -> None:
        """End the workers waiting for a job now, without closing: a later job starts a new
        one (an embedding process, such as a test run, lets go of idle threads this way)."""
        with self._lock:
            waiting, self._idle = list(self._waiting), 0
            for _ in waiting:
                self._jobs.put(None)
        for thread in waiting:
            thread.join(timeout)

    def _work(self, job: Job, name: str) -> None:
        me = threading.current_thread()
        resting = f"worker-{next(self._numbers)}"
        while True:
            me.name = name
            job()  # catches its own exceptions (see run_in_daemon_thread)
            me.name = resting
            with self._lock:
                if self._closed or self._idle >= self.max_idle:
                    return
                self._idle += 1
                self._waiting.add(me)
            next_job = self._wait()
            with self._lock:
                self._waiting.discard(me)
            if next_job is None:
                return
            job, name = next_job

    def _wait(self) -> tuple[Job, str] | None:
        """The next job, or None when this worker should end (idle too long, or closed)."""
        while True:
            try:
                return self._jobs.get(timeout=self.idle_s)
            except queue.Empty:
                with self._lock:
                    # A job put after the timeout was counted against this worker: take it.
                    if self._jobs.empty():
                        if not self._closed:  # close() has uncounted it already
                            self._idle -= 1
                        return None


async def run_in_daemon_thread(fn: Callable[..., T], *args: Any, workers: DaemonWorkers,
                               name: str = "worker") -> T:
    """fn(*args) on one of `workers`' daemon threads, awaited from the running loop."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(setter: Callable[[Any], None], value: Any) -> None:
        if not future.done():
            setter(value)

    def hand_back(setter: Callable[[Any], None], value: Any) -> None:
        try:
            loop.call_soon_threadsafe(settle, setter, value)
        except RuntimeError:
            pass  # the loop closed during shutdown; nobody waits for this result any more

    def target() -> None:
        try:
            result = fn(*args)
        except BaseException as exc:
            hand_back(future.set_exception, exc)
        else:
            hand_back(future.set_result, result)

    workers.submit(target, name)
    return await future


class SharedRun:
    """One run of `work` (a coroutine function) shared by every caller that asks while it is
    not yet under way: a caller always gets the outcome of a run that began after it asked
    (so it sees every change finished before its call), and callers arriving while a run is
    under way share the next one. N concurrent callers cost at most two runs, not N queued
    one behind another."""

    def __init__(self, work: Callable[[], Any]) -> None:
        self._work = work
        self._running: asyncio.Future[Any] | None = None
        self._next: asyncio.Future[Any] | None = None  # handed to callers, started later

    async def get(self) -> Any:
        if self._running is None:
            self._running = self._start()
            future = self._running
        else:
            if self._next is None:
                self._next = asyncio.get_running_loop().create_future()
            future = self._next
        return await asyncio.shield(future)

    def _start(self) -> asyncio.Future[Any]:
        task = asyncio.ensure_future(self._work())
        task.add_done_callback(self._finished)
        return task

    def _finished(self, task: asyncio.Future[Any]) -> None:
        if not task.cancelled():
            task.exception()  # retrieved here: its callers may all have gone away
        waiting, self._next = self._next, None
        self._running = None
        if waiting is None:
            return
        self._running = self._start()

        def hand_over(done: asyncio.Future[Any]) -> None:
            if waiting.done():
                return
            if done.cancelled():
                waiting.cancel()
            elif done.exception() is not None:
                waiting.set_exception(done.exception())
            else:
                waiting.set_result(done.result())

        self._running.add_done_callback(hand_over)
