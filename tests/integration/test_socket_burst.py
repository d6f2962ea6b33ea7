"""A burst of connections to the daemon's socket (a fleet's hooks and tool calls arriving at
once): every one is queued and answered, and a client whose connection finds the daemon's queue
momentarily full waits for room within its timeout instead of reporting the daemon as not
running. A full queue that never drains is a timeout (busy), never "not running"."""

from __future__ import annotations

import json
import signal
import socket
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from minionsd.rpc.client import Client, DaemonUnavailable
from tests.harness import wait_for
from tests.integration.test_mcp_malformed import Bounded

BURST = 300  # connections opened while the daemon accepts none; far over asyncio's default


def test_a_burst_of_connections_is_queued_and_every_one_answered(daemon):
    """The daemon is stopped while the burst connects, so every connection waits in its listen
    queue at once: all of them must fit, and all are answered once it runs again."""
    assert daemon.proc is not None
    lock = threading.Lock()
    attempted: Counter[str] = Counter()
    outcomes: Counter[str] = Counter()

    def one() -> None:
        client = Client(daemon.socket, timeout=60)
        try:
            try:
                client.connect()
            finally:
                with lock:
                    attempted["done"] += 1
            status = client.call("status")
            outcome = "ok" if isinstance(status, dict) else repr(status)[:60]
        except Exception as exc:
            outcome = f"{type(exc).__name__}: {str(exc)[:80]}"
        finally:
            client.close()
        with lock:
            outcomes[outcome] += 1

    threads = [threading.Thread(target=one) for _ in range(BURST)]
    daemon.proc.send_signal(signal.SIGSTOP)
    try:
        for thread in threads:
            thread.start()
        try:  # every connect made (or failed) while the daemon is stopped
            wait_for(lambda: attempted["done"] == BURST, timeout=30, what="the connects")
        except AssertionError:
            pass  # a queue smaller than the burst: the rest wait for room, as they should
    finally:
        daemon.proc.send_signal(signal.SIGCONT)
    for thread in threads:
        thread.join(120)
    assert dict(outcomes) == {"ok": BURST}
    assert daemon.call("status")["pid"] == daemon.proc.pid


@pytest.fixture
def full_queue(tmp_path_factory) -> Iterator[tuple[Path, socket.socket,
                                                  list[socket.socket]]]:
    """A listening Unix socket that accepts nothing, its queue of new connections full (a
    daemon momentarily behind a burst)."""
    path = Path(tmp_path_factory.mktemp("q", numbered=True).as_posix()[:60]) / "s.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)
    fillers: list[socket.socket] = []
    while True:
        filler = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        filler.setblocking(False)
        try:
            filler.connect(str(path))
        except BlockingIOError:
            filler.close()
            break
        fillers.append(filler)
    yield path, server, fillers
    for filler in fillers:
        filler.close()
    server.close()


def test_a_full_queue_is_waited_for_not_reported_as_not_running(full_queue):
    path, server, fillers = full_queue
    replies: list[object] = []

    def call() -> None:
        try:
            replies.append(Client(path, timeout=60).call("status"))
        except Exception as exc:
            replies.append(exc)

    caller = threading.Thread(target=call)
    caller.start()
    try:  # give its connect time to meet the full queue
        wait_for(lambda: not caller.is_alive(), timeout=1.0, what="the call to give up")
    except AssertionError:
        pass  # still waiting for room, as it should
    assert caller.is_alive(), replies  # not given up on a full queue
    # The queue drains: the waiting filler connections are taken, then the caller's.
    taken = []
    server.settimeout(30)
    try:
        for _ in range(len(fillers) + 1):
            taken.append(server.accept()[0])
        request = b""
        conn = taken[-1]
        conn.settimeout(30)
        while not request.endswith(b"\n"):
            chunk = conn.recv(65536)
            assert chunk, "the client closed without sending its request"
            request += chunk
        message = json.loads(request)
        conn.sendall(json.dumps({"jsonrpc": "2.0", "id": message["id"],
                                 "result": {"ok": True}}).encode() + b"\n")
        caller.join(60)
    finally:
        for conn in taken:
            conn.close()
    assert replies == [{"ok": True}], replies


def test_a_queue_that_stays_full_is_a_timeout_not_daemon_unavailable(full_queue):
    path, _server, _fillers = full_queue
    with pytest.raises(TimeoutError) as info:
        Client(path, timeout=0.5).call("status")
    assert not isinstance(info.value, DaemonUnavailable)
    assert "busy" in str(info.value) and str(path) in str(info.value)


def test_mcp_initialize_calls_a_full_queue_busy_not_down(full_queue):
    path, _server, _fillers = full_queue
    client = Bounded("--socket", str(path))
    try:
        result = client.initialize()["result"]
        assert result["serverInfo"]["title"] == "minionsd memory", result
        assert "not reachable" not in result["instructions"]
        assert client.close() == 0, client.stderr()
    finally:
        if client.proc.poll() is None:
            client.kill()
