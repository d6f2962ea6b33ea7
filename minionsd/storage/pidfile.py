"""Single-instance guard: an exclusive flock on engine/minionsd.pid held for the process life.

The kernel drops the lock when the process dies, so a pid file left by a crash is simply
taken over by the next daemon.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from minionsd.errors import InvalidState
from minionsd.fileio import atomic_write_text


class PidFile:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            raise InvalidState(
                f"another minionsd is already running on this home (pid {holder}); "
                f"pid file {self.path}"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        os.fsync(fd)
        self._fd = fd

    def release(self) -> None:
        if self._fd is None:
            return
        try:
            self.path.unlink(missing_ok=True)
        finally:
            os.close(self._fd)
            self._fd = None


class SocketRecord:
    """engine/minionsd.bound: the running daemon's pid and the socket it actually bound.

    Clients (minionsd.rpc.client.socket_for_home) prefer it while that pid lives, so a
    `config set server.socket` (applied at the next start) never cuts them off from the
    daemon that is running. Written atomically after the bind, removed at a clean stop; one
    left by a crash names a dead pid and is ignored.
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    def write(self, socket_path: Path) -> None:
        atomic_write_text(self.path, f"{os.getpid()}\n{socket_path}\n")

    def remove(self) -> None:
        """Remove the record if it is this process's own."""
        try:
            pid = self.path.read_text(encoding="utf-8", errors="replace").split("\n", 1)[0]
        except OSError:
            return
        if pid.strip() == str(os.getpid()):
            self.path.unlink(missing_ok=True)
