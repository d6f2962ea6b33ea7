"""The systemd notify protocol, written directly: readiness, status, stopping, watchdog pings.

Under `Type=notify` systemd passes a datagram socket in `NOTIFY_SOCKET` and waits for
`READY=1`; with `WatchdogSec=` it passes the ping interval in `WATCHDOG_USEC` and kills the
service when `WATCHDOG=1` stops arriving. The protocol is one AF_UNIX datagram per message, so
no library is needed (see docs DEPENDENCY-NOTES §8).

Invariant: nothing here raises or blocks the daemon. Without `NOTIFY_SOCKET` (a terminal,
launchd, tests) every call is a no-op returning False; a send that fails is logged and
returns False. Only the daemon's entry point reads the environment, so every function takes
an optional `environ` mapping and falls back to `os.environ` when it is not given.

When to send (the daemon's side of the contract): `ready()` after the socket is bound, the
database open and the first inbox reconcile scheduled; `watchdog_ping()` every half
`watchdog_interval_s()`, and only while the health checks pass, so a wedged loop becomes a
restart; `stopping()` on SIGTERM before draining; `status()` whenever a line in
`systemctl status` would help (e.g. "consolidating 12 notes").
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping

import structlog

log = structlog.get_logger(__name__)

# The kernel's sun_path limit on Linux; a longer address cannot be connected to.
_MAX_ADDRESS_BYTES = 108


def _env(environ: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if environ is None else environ


def _address(raw: str) -> str | None:
    """Turn NOTIFY_SOCKET into an AF_UNIX address: '@name' is Linux's abstract namespace."""
    if raw.startswith("@"):
        address = "\0" + raw[1:]
    elif raw.startswith("/"):
        address = raw
    else:
        # systemd also knows vsock: addresses (VMs); minionsd never runs there.
        return None
    if len(address.encode("utf-8", "surrogateescape")) > _MAX_ADDRESS_BYTES:
        return None
    return address


def sd_notify(state: str, *, environ: Mapping[str, str] | None = None) -> bool:
    """Send `state` (e.g. "READY=1\\nSTATUS=serving") to systemd; True if it was sent."""
    raw = _env(environ).get("NOTIFY_SOCKET")
    if not raw:
        return False
    address = _address(raw)
    if address is None:
        log.warning("systemd.notify_unusable_socket", notify_socket=raw)
        return False
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            # A full queue on systemd's side drops this message rather than stall the loop.
            sock.setblocking(False)
            sock.sendto(state.encode("utf-8", "replace"), address)
    except OSError as err:
        log.warning("systemd.notify_failed", notify_socket=raw, state=state, error=str(err))
        return False
    return True


def watchdog_interval_s(
    *, environ: Mapping[str, str] | None = None, pid: int | None = None
) -> float | None:
    """The watchdog deadline in seconds, or None when systemd expects no pings from us.

    `WATCHDOG_PID`, when set, names the process the deadline is for; any other process (a
    child that inherited the environment) must not ping. Ping at half this interval.
    """
    env = _env(environ)
    usec = env.get("WATCHDOG_USEC")
    if not usec:
        return None
    watchdog_pid = env.get("WATCHDOG_PID")
    if watchdog_pid:
        try:
            if int(watchdog_pid) != (os.getpid() if pid is None else pid):
                return None
        except ValueError:
            log.warning("systemd.watchdog_pid_invalid", watchdog_pid=watchdog_pid)
            return None
    try:
        value = int(usec)
    except ValueError:
        log.warning("systemd.watchdog_usec_invalid", watchdog_usec=usec)
        return None
    if value <= 0:
        return None
    return value / 1_000_000


def _one_line(text: str) -> str:
    # A newline would start a new KEY=VALUE assignment inside the datagram.
    return " ".join(text.split())


class Notifier:
    """The daemon's handle on systemd: a fixed environment, one method per message."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        env = _env(environ)
        # Copy what we need now: the daemon may later scrub its environment for children.
        self._environ = {
            key: env[key]
            for key in ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID")
            if key in env
        }

    @property
    def enabled(self) -> bool:
        """True when running under a service manager that listens for notifications."""
        return bool(self._environ.get("NOTIFY_SOCKET"))

    def watchdog_interval_s(self, pid: int | None = None) -> float | None:
        return watchdog_interval_s(environ=self._environ, pid=pid)

    def notify(self, state: str) -> bool:
        return sd_notify(state, environ=self._environ)

    def ready(self, status: str | None = None) -> bool:
        message = "READY=1"
        if status:
            message += f"\nSTATUS={_one_line(status)}"
        return self.notify(message)

    def status(self, text: str) -> bool:
        return self.notify(f"STATUS={_one_line(text)}")

    def stopping(self, status: str | None = None) -> bool:
        message = "STOPPING=1"
        if status:
            message += f"\nSTATUS={_one_line(status)}"
        return self.notify(message)

    def watchdog_ping(self) -> bool:
        return self.notify("WATCHDOG=1")

    def extend_timeout(self, seconds: float) -> bool:
        """Ask for more time to start or stop (a long FTS rebuild); resend before it runs out."""
        return self.notify(f"EXTEND_TIMEOUT_USEC={max(0, int(seconds * 1_000_000))}")
