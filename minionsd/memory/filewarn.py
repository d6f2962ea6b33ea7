"""Files read with a warning (SPEC §2 v3): a hand-edited file that is not valid UTF-8.

Such a file is read with U+FFFD for each undecodable byte and never fails what reads it; the
warning names the file in the log (once, when first seen or when its reason changes) and in
`status.warnings` until the file reads clean again: valid UTF-8 without U+FFFD. A file that
minionsd rewrote after such a read (a digest or notebook append, pinned.append) keeps U+FFFD
where the bytes were, so its warning stays and says so.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import structlog

from minionsd.clock import iso

log = structlog.get_logger()

REPLACEMENT = "\ufffd"
REWRITTEN = ("was not valid UTF-8 and was written back with U+FFFD in place of the "
             "undecodable bytes; replace those characters by hand to clear this warning")


class FileWarnings:
    """The warnings of the files read so far, by home-relative path (implements
    fileio.ReadWarnings); safe from any thread."""

    def __init__(self, root: Path, clock: Callable[[], datetime]) -> None:
        self._root = root
        self._clock = clock
        self._lock = threading.Lock()
        self._items: dict[str, dict[str, Any]] = {}

    def _rel(self, path: Path) -> str:
        try:
            return str(Path(path).relative_to(self._root))
        except ValueError:
            return str(path)

    def replaced(self, path: Path, reason: str, event: str = "file.read_with_warning") -> None:
        rel = self._rel(path)
        with self._lock:
            known = self._items.get(rel)
            if known is not None and known["reason"] == reason:
                return
            self._items[rel] = {"file": rel, "reason": reason, "at": iso(self._clock())}
        log.warning(event, file=rel, reason=reason)

    def clean(self, path: Path, text: str) -> None:
        if not self._items:  # the common case: no lock, nothing to do
            return
        rel = self._rel(path)
        with self._lock:
            known = self._items.get(rel)
            if known is None:
                return
            if REPLACEMENT not in text:
                del self._items[rel]
            elif known["reason"] != REWRITTEN:
                known["reason"] = REWRITTEN
            else:
                return
        if REPLACEMENT in text:
            log.warning("file.read_with_warning", file=rel, reason=REWRITTEN)
        else:
            log.info("file.read_clean_again", file=rel)

    def forget(self, path: Path) -> None:
        """The file is gone (deleted, moved away): its warning goes too."""
        with self._lock:
            self._items.pop(self._rel(path), None)

    def list(self) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(item) for _, item in sorted(self._items.items())]
