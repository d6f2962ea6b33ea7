"""sd_notify against a real AF_UNIX datagram socket, as systemd listens (DEPENDENCY-NOTES §8)."""

from __future__ import annotations

import os
import socket
import sys
import tempfile
import uuid
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from minionsd.service.systemd import Notifier, sd_notify, watchdog_interval_s

pytestmark = pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="needs AF_UNIX")


class Listener:
    """A bound datagram socket standing in for systemd's notify socket."""

    def __init__(self, address: str, notify_socket: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(address)
        self.sock.settimeout(2.0)
        self.notify_socket = notify_socket
        self.environ = {"NOTIFY_SOCKET": notify_socket}

    def recv(self) -> bytes:
        return self.sock.recv(4096)

    def pending(self) -> bool:
        self.sock.setblocking(False)
        try:
            self.sock.recv(4096)
        except BlockingIOError:
            return False
        finally:
            self.sock.settimeout(2.0)
        return True


@pytest.fixture
def listener(tmp_path):
    path = tmp_path / "notify.sock"
    short_dir = None
    if len(os.fsencode(path)) > 100:  # sun_path is 108 bytes; pytest paths can be longer
        short_dir = tempfile.mkdtemp(prefix="sdn-", dir="/tmp")
        path = Path(short_dir) / "n.sock"
    lst = Listener(str(path), str(path))
    yield lst
    lst.sock.close()
    if short_dir:
        path.unlink(missing_ok=True)
        os.rmdir(short_dir)


@pytest.fixture
def abstract_listener():
    if not sys.platform.startswith("linux"):
        pytest.skip("abstract socket namespace is Linux-only")
    name = f"minionsd-test-{uuid.uuid4().hex}"
    lst = Listener("\0" + name, "@" + name)
    yield lst
    lst.sock.close()


def test_ready_reaches_a_path_socket(listener):
    assert sd_notify("READY=1", environ=listener.environ) is True
    assert listener.recv() == b"READY=1"


def test_abstract_address(abstract_listener):
    assert sd_notify("READY=1\nSTATUS=up", environ=abstract_listener.environ) is True
    assert abstract_listener.recv() == b"READY=1\nSTATUS=up"


def test_reads_os_environ_by_default(listener, monkeypatch):
    monkeypatch.setenv("NOTIFY_SOCKET", listener.notify_socket)
    assert sd_notify("WATCHDOG=1") is True
    assert listener.recv() == b"WATCHDOG=1"


@pytest.mark.parametrize("environ", [{}, {"NOTIFY_SOCKET": ""}])
def test_no_socket_is_a_no_op(environ):
    assert sd_notify("READY=1", environ=environ) is False
    assert Notifier(environ).ready() is False
    assert Notifier(environ).enabled is False


def test_no_socket_in_os_environ(monkeypatch):
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    assert sd_notify("READY=1") is False


@pytest.mark.parametrize(
    "notify_socket",
    ["relative/path.sock", "vsock:2:1234", "/" + "x" * 200],
)
def test_unusable_address_returns_false_and_logs(notify_socket):
    with capture_logs() as logs:
        assert sd_notify("READY=1", environ={"NOTIFY_SOCKET": notify_socket}) is False
    assert [e["event"] for e in logs] == ["systemd.notify_unusable_socket"]


def test_missing_socket_file_returns_false_and_logs(tmp_path):
    environ = {"NOTIFY_SOCKET": str(tmp_path / "gone.sock")}
    with capture_logs() as logs:
        assert sd_notify("READY=1", environ=environ) is False
    assert logs[0]["event"] == "systemd.notify_failed"
    assert logs[0]["log_level"] == "warning"


def test_wrong_socket_type_returns_false(listener):
    # A stream socket where a datagram socket should be: the send fails, nothing raises.
    path = listener.notify_socket + ".stream"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as stream:
        stream.bind(path)
        stream.listen(1)
        try:
            with capture_logs():
                assert sd_notify("READY=1", environ={"NOTIFY_SOCKET": path}) is False
        finally:
            os.unlink(path)


def test_notifier_messages(listener):
    n = Notifier(listener.environ)
    assert n.enabled
    assert n.ready("serving on engine/minionsd.sock")
    assert listener.recv() == b"READY=1\nSTATUS=serving on engine/minionsd.sock"
    assert n.ready()
    assert listener.recv() == b"READY=1"
    assert n.status("consolidating\n12 notes\nREADY=1")
    # Newlines are folded so a status can never smuggle in another assignment.
    assert listener.recv() == b"STATUS=consolidating 12 notes READY=1"
    assert n.watchdog_ping()
    assert listener.recv() == b"WATCHDOG=1"
    assert n.stopping()
    assert listener.recv() == b"STOPPING=1"
    assert n.stopping("draining batch")
    assert listener.recv() == b"STOPPING=1\nSTATUS=draining batch"
    assert n.extend_timeout(90)
    assert listener.recv() == b"EXTEND_TIMEOUT_USEC=90000000"


def test_notifier_keeps_its_environment(listener):
    environ = dict(listener.environ)
    n = Notifier(environ)
    environ.clear()  # the daemon may scrub its environment after start-up
    assert n.watchdog_ping()
    assert listener.recv() == b"WATCHDOG=1"


def test_non_ascii_status(listener):
    assert Notifier(listener.environ).status("café ✓ \ud800")
    assert listener.recv() == "STATUS=café ✓ ?".encode()


def test_nothing_sent_without_socket(listener):
    Notifier({}).ready()
    assert not listener.pending()


# --- WATCHDOG_USEC / WATCHDOG_PID -----------------------------------------------------------


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, None),
        ({"WATCHDOG_USEC": ""}, None),
        ({"WATCHDOG_USEC": "30000000"}, 30.0),
        ({"WATCHDOG_USEC": "500000"}, 0.5),
        ({"WATCHDOG_USEC": "0"}, None),
        ({"WATCHDOG_USEC": "-5"}, None),
        ({"WATCHDOG_USEC": "thirty"}, None),
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": str(os.getpid())}, 30.0),
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": str(os.getpid() + 1)}, None),
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "not-a-pid"}, None),
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": ""}, 30.0),
    ],
)
def test_watchdog_interval(environ, expected):
    with capture_logs():
        assert watchdog_interval_s(environ=environ) == expected
        assert Notifier(environ).watchdog_interval_s() == expected


def test_watchdog_pid_can_be_given():
    environ = {"WATCHDOG_USEC": "10000000", "WATCHDOG_PID": "4242"}
    assert watchdog_interval_s(environ=environ, pid=4242) == 10.0
    assert watchdog_interval_s(environ=environ, pid=4243) is None
    assert Notifier(environ).watchdog_interval_s(pid=4242) == 10.0


def test_watchdog_reads_os_environ_by_default(monkeypatch):
    monkeypatch.setenv("WATCHDOG_USEC", "20000000")
    monkeypatch.setenv("WATCHDOG_PID", str(os.getpid()))
    assert watchdog_interval_s() == 20.0
    monkeypatch.delenv("WATCHDOG_USEC")
    assert watchdog_interval_s() is None
