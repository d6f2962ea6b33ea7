"""The daemon speaks the sd_notify protocol to a datagram socket the test owns."""

from __future__ import annotations

import socket
import time

from tests.conftest import wait_for


def test_ready_watchdog_and_stopping(make_daemon, short_home):
    short_home.mkdir(parents=True)
    path = short_home.parent / "notify.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    sock.setblocking(False)
    messages: list[str] = []

    def drain() -> list[str]:
        while True:
            try:
                messages.append(sock.recv(4096).decode())
            except BlockingIOError:
                return messages

    daemon = make_daemon(env={"NOTIFY_SOCKET": str(path), "WATCHDOG_USEC": "400000"})
    try:
        wait_for(lambda: any("READY=1" in m for m in drain()), what="READY=1")
        ready = next(m for m in messages if "READY=1" in m)
        assert "STATUS=" in ready and "pending" in ready
        # By the time READY=1 arrives the socket answers (ready means serving).
        assert daemon.call("status")["pid"] == daemon.proc.pid
        wait_for(lambda: sum("WATCHDOG=1" in m for m in drain()) >= 3, what="watchdog pings")
        assert daemon.stop() == 0
        time.sleep(0.1)
        assert any("STOPPING=1" in m for m in drain())
    finally:
        sock.close()


def test_no_notify_socket_is_fine(daemon):
    assert daemon.call("status")["pid"] == daemon.proc.pid
    assert daemon.stop() == 0
