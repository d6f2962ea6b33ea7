"""minionsd.client.Client against a real Unix-socket server written here, which answers
late, answers with a stale reply first, or hangs up mid-call."""

from __future__ import annotations

import json
import shutil
import socket
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from minionsd.client import Client, DaemonUnavailable, RpcError

Behaviour = Callable[[socket.socket, dict, "ScriptedServer"], None]


class ScriptedServer:
    """Accepts connections one at a time; each request line is handed to the next scripted
    behaviour (in order), which writes whatever it likes on the connection."""

    def __init__(self, path: Path, script: list[Behaviour]) -> None:
        self.path = path
        self.script = list(script)
        self.release = threading.Event()
        self.connections = 0
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(path))
        self.listener.listen(4)
        self.listener.settimeout(0.05)
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name="scripted-server")
        self.thread.start()

    def _run(self) -> None:
        while not self.stopping.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            self.connections += 1
            with conn:
                self._serve(conn)

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(0.05)
        buffer = b""
        while not self.stopping.is_set():
            try:
                chunk = conn.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                return
            if not chunk:
                return
            buffer += chunk
            while b"\n" in buffer:
                line, _, buffer = buffer.partition(b"\n")
                request = json.loads(line)
                behaviour = self.script.pop(0) if self.script else answer
                if behaviour(conn, request, self) == "hang up":
                    return

    def stop(self) -> None:
        self.stopping.set()
        self.release.set()
        self.thread.join()
        self.listener.close()


def reply(request: dict, result: object) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}).encode() + b"\n"


def answer(conn: socket.socket, request: dict, server: ScriptedServer) -> None:
    conn.sendall(reply(request, {"method": request["method"], "id": request["id"]}))


def answer_after_release(conn: socket.socket, request: dict, server: ScriptedServer) -> None:
    """Answer only once the test says so (after the client has given up)."""
    while not server.release.wait(0.05):
        if server.stopping.is_set():
            return
    try:
        answer(conn, request, server)
    except OSError:
        pass  # the client dropped the connection, as it should


def stale_then_answer(conn: socket.socket, request: dict, server: ScriptedServer) -> None:
    conn.sendall(reply({"id": request["id"] - 1}, {"stale": True}))
    conn.sendall(b'[{"jsonrpc":"2.0","id":99,"result":1}]\n')
    answer(conn, request, server)


def hang_up(conn: socket.socket, request: dict, server: ScriptedServer) -> str:
    return "hang up"


def half_reply_then_hang_up(conn: socket.socket, request: dict, server: ScriptedServer) -> str:
    conn.sendall(b'{"jsonrpc":"2.0","id":')
    return "hang up"


def null_id_error(conn: socket.socket, request: dict, server: ScriptedServer) -> None:
    conn.sendall(b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid '
                 b'Request","data":{"detail":"too long"}}}\n')


@pytest.fixture
def socket_dir() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="cl-", dir="/tmp"))
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def serve(socket_dir: Path) -> Iterator[Callable[[list[Behaviour]], ScriptedServer]]:
    servers: list[ScriptedServer] = []

    def start(script: list[Behaviour]) -> ScriptedServer:
        server = ScriptedServer(socket_dir / "s.sock", script)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def test_a_timed_out_call_never_hands_its_reply_to_the_next_call(serve):
    server = serve([answer_after_release])
    with Client(server.path, timeout=0.5) as client:
        with pytest.raises(TimeoutError, match="no reply"):
            client.call("slow.one")
        server.release.set()  # the late reply to call 1 is now on its way
        assert client.call("next.one") == {"method": "next.one", "id": 2}
        assert client.call("third.one") == {"method": "third.one", "id": 3}


def test_stale_replies_are_discarded_by_id(serve):
    server = serve([answer, stale_then_answer])
    with Client(server.path, timeout=10) as client:
        assert client.call("first")["id"] == 1
        assert client.call("second") == {"method": "second", "id": 2}
    assert server.connections == 1


def test_a_null_id_error_is_the_reply_to_the_current_call(serve):
    server = serve([null_id_error])
    with Client(server.path, timeout=10) as client, pytest.raises(RpcError) as caught:
        client.call("anything")
    assert caught.value.code == -32600 and caught.value.detail == "too long"


@pytest.mark.parametrize("behaviour", [hang_up, half_reply_then_hang_up])
def test_a_daemon_that_goes_away_mid_call_is_daemon_unavailable(serve, behaviour):
    server = serve([behaviour])
    with Client(server.path, timeout=10) as client:
        with pytest.raises(DaemonUnavailable, match="closed the connection before answering"):
            client.call("doomed")
        # the client reconnects for the next call and gets its own reply
        assert client.call("after") == {"method": "after", "id": 2}
    assert server.connections == 2


def test_nothing_listening_is_daemon_unavailable(socket_dir):
    with pytest.raises(DaemonUnavailable, match="no minionsd listening"):
        Client(socket_dir / "none.sock", timeout=5).call("status")


def test_a_daemon_gone_between_calls_is_daemon_unavailable(serve):
    server = serve([])
    client = Client(server.path, timeout=10).connect()
    try:
        assert client.call("one")["id"] == 1
        server.stop()
        with pytest.raises(DaemonUnavailable):
            client.call("two")
    finally:
        client.close()


def test_an_oversized_request_gets_the_daemons_answer_not_a_broken_pipe(make_daemon,
                                                                        short_home):
    short_home.mkdir(parents=True)
    (short_home / "config.toml").write_text("[server]\nmax_request_bytes = 2048\n")
    daemon = make_daemon()
    with daemon.client() as client:
        with pytest.raises(RpcError) as caught:
            client.call("pinned.set", text="x" * 4_000_000)  # far past the socket buffers
        assert caught.value.code == -32600 and "max_request_bytes" in caught.value.detail
        assert client.call("status")["pid"] == daemon.proc.pid  # a fresh connection


def test_a_connection_left_from_before_a_restart_heals_on_the_next_call(make_daemon,
                                                                        short_home):
    first = make_daemon()
    client = first.client()
    try:
        assert client.call("status")["pid"] == first.proc.pid
        assert first.stop() == 0
        second = make_daemon()
        # the old connection is dead; the request never reached anyone, so it is resent
        assert client.call("status")["pid"] == second.proc.pid
    finally:
        client.close()
