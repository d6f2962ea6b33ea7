"""A watcher's observer that died is restarted by check_observer, and events flow again: a
real watchdog observer on a temp directory."""

from __future__ import annotations

import asyncio
from pathlib import Path

from minionsd.home import Home
from minionsd.service.watch import InboxWatcher


class _App:
    def __init__(self, root: Path) -> None:
        self.home = Home(root)


def test_a_dead_observer_is_restarted_and_hints_flow_again(tmp_path: Path) -> None:
    async def scenario() -> tuple[int, int, bool]:
        hints = asyncio.Event()
        watcher = InboxWatcher(_App(tmp_path / "home"), on_change=hints.set)  # type: ignore[arg-type]
        await watcher.start()
        inbox = tmp_path / "home" / "notes" / "inbox"
        try:
            assert watcher.healthy()
            # Hints flow first: the observer's inotify reader is reading. (watchdog 7 leaks its
            # inotify descriptor and pipe when a reader is stopped before its first read.)
            (inbox / "first.md").write_text("hello\n")
            await asyncio.wait_for(hints.wait(), 10)
            hints.clear()
            watcher._observer.stop()  # the thread dies, as it does when a handler raises
            await asyncio.to_thread(watcher._observer.join, 5)
            assert not watcher.healthy()
            await asyncio.to_thread(watcher.check_observer)
            alive = watcher.healthy()
            (inbox / "n.md").write_text("hello\n")
            await asyncio.wait_for(hints.wait(), 10)
            return watcher.restarts, int(hints.is_set()), alive
        finally:
            await watcher.stop()

    restarts, hinted, alive = asyncio.run(scenario())
    assert (restarts, hinted, alive) == (1, 1, True)
