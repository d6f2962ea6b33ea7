"""Where a consolidation batch writes its KB entries' temp files: engine/staging/, outside the
watched knowledge/ tree, then hard-links each to its name (filing.write_kb_entries).

A hard link needs both names on one file system; a category directory on another one (a
symlink to another disk) gets its temps beside the entry instead, as create_new_text does.
Temps that a killed daemon left behind (another process id in the name) are removed when a
batch first stages here; one daemon per home, one batch at a time, so none is in use.
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

DIRECTORY = "staging"
_TEMP_RE = re.compile(r"\.new\.(\d+)\.[0-9a-f]{12}$")  # fileio's temp name ending


class Staging:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._devices: dict[Path, bool] = {}  # category directory -> same file system
        self._swept = False

    def temp_beside(self, target: Path) -> Path:
        """The path whose temp file (fileio's `.<name>.new.<pid>.<random>` beside it) becomes
        `target`: under the staging directory when that is on target's file system."""
        if not self._same_device(target.parent):
            return target
        if not self._swept:
            self._swept = True
            remove_leftovers(self.directory)
        return self.directory / target.name

    def _same_device(self, parent: Path) -> bool:
        same = self._devices.get(parent)
        if same is None:
            try:
                self.directory.mkdir(mode=0o700, exist_ok=True)
                same = os.stat(self.directory).st_dev == os.stat(parent).st_dev
            except OSError:
                same = False
            self._devices[parent] = same
        return same


def remove_leftovers(directory: Path) -> int:
    """Remove the temps of processes other than this one; the count removed."""
    mine = str(os.getpid())
    removed = 0
    try:
        entries = list(os.scandir(directory))
    except FileNotFoundError:
        return 0
    for entry in entries:
        match = _TEMP_RE.search(entry.name)
        if match and match.group(1) != mine and entry.is_file(follow_symlinks=False):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.path)
                removed += 1
    return removed
