"""The elapsed-time spinner minionsctl draws on stderr while a slow call (maintenance, backup,
consolidate) waits for the daemon."""

from __future__ import annotations

import sys
import threading
import time
from typing import Any


class Progress:
    """An elapsed-time spinner on stderr while a slow call waits; nothing unless a TTY.

    It starts after a short delay so quick answers print no flicker, and erases its line
    before the result is printed.
    """

    FRAMES = "|/-\\"
    DELAY_S = 0.3
    TICK_S = 0.1

    def __init__(self, label: str, stream: Any = None) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._drawn = False

    def __enter__(self) -> Progress:
        isatty = getattr(self.stream, "isatty", None)
        if isatty is not None and isatty():
            self._thread = threading.Thread(target=self._run, name="progress", daemon=True)
            self._thread.start()
        return self

    def _run(self) -> None:
        started = time.monotonic()
        if self._stop.wait(self.DELAY_S):
            return
        frame = 0
        while True:
            elapsed = time.monotonic() - started
            self.stream.write(f"\r{self.FRAMES[frame % len(self.FRAMES)]} {self.label} "
                              f"running... {elapsed:.1f}s")
            self.stream.flush()
            self._drawn = True
            frame += 1
            if self._stop.wait(self.TICK_S):
                return

    def __exit__(self, *exc: object) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        if self._drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
