"""A small blocking JSON-RPC client for the minionsd socket, used by minionsctl, tests and
agent processes:

    from minionsd.client import Client
    with Client.for_home("~/.minions") as client:
        pack = client.call("prompt.assemble", task={"id": "W-1", "title": "Fix login"})

Standard library only, so importing it is cheap.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import socket
import stat
import time
from pathlib import Path
from typing import Any


class RpcError(Exception):
    """The daemon answered with a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        detail = data.get("detail") if isinstance(data, dict) else None
        super().__init__(f"{message}: {detail}" if detail else message)
        self.code = code
        self.message = message
        self.data = data
        self.detail = detail


class DaemonUnavailable(ConnectionError):
    """Nothing answers on the socket, or the daemon went away before it answered."""


class GatewayRefused(Exception):
    """An HTTP gateway (minionsd.rpc.http_client) refused the request: a bad token (401),
    too many requests (429)...; `status` and `reason` say which, `retry_after` (seconds, from
    the Retry-After header) when to try again, if the gateway said."""

    def __init__(self, status: int, reason: str, detail: str,
                 retry_after: str | None = None) -> None:
        super().__init__(f"the gateway refused the request (HTTP {status}): {detail}")
        self.status = status
        self.reason = reason
        self.detail = detail
        self.retry_after = retry_after


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    except OSError:
        return False
    return True


def running_socket(root: Path) -> Path | None:
    """The socket the running daemon bound, from engine/minionsd.bound (written after the
    bind, removed at a clean stop); None when there is no record or its pid is gone."""
    try:
        with open(root / "engine" / "minionsd.bound", "rb") as handle:
            pid_line, _, rest = handle.read(8192).partition(b"\n")
        pid = int(pid_line.strip() or b"0")
        path = rest.rstrip(b"\n").decode("utf-8")
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if pid <= 0 or not path or "\n" in path or not _pid_alive(pid):
        return None
    try:  # a crashed daemon's record whose pid was reused names a socket that is gone
        if not stat.S_ISSOCK(os.stat(path).st_mode):
            return None
    except OSError:
        return None
    return Path(path)


def socket_for_home(home: str | os.PathLike[str]) -> Path:
    """The socket path a home uses: the one its running daemon bound (a changed
    server.socket applies only at the daemon's next start), else server.socket from its
    config.toml, else the default."""
    root = Path(home).expanduser()
    bound = running_socket(root)
    if bound is not None:
        return bound
    try:
        with open(root / "config.toml", "rb") as handle:
            data = handle.read()
    except OSError:
        data = b""
    configured: Any = ""
    # Most configs never set a socket (the template only mentions it in a comment): then
    # there is nothing to parse, and no TOML parser to import (a tenth of a short command's
    # run time). A line that is all comment sets nothing; an escape could spell the key.
    if any((b"socket" in line or b"\\" in line) and not line.lstrip().startswith(b"#")
           for line in data.splitlines()):
        import tomllib

        try:
            configured = tomllib.loads(data.decode("utf-8")).get("server", {}).get("socket", "")
        except (UnicodeDecodeError, tomllib.TOMLDecodeError, AttributeError):
            configured = ""
    if isinstance(configured, str) and configured:
        return Path(configured).expanduser()
    return root / "engine" / "minionsd.sock"


class Client:
    def __init__(self, socket_path: str | os.PathLike[str], timeout: float = 60.0) -> None:
        self.socket_path = Path(socket_path)
        self.timeout = timeout
        self._sock: socket.socket | None = None
        self._buffer = b""
        self._ids = itertools.count(1)

    @classmethod
    def for_home(cls, home: str | os.PathLike[str], timeout: float = 60.0) -> Client:
        return cls(socket_for_home(home), timeout)

    def connect(self) -> Client:
        if self._sock is None:
            self._sock = self._open()
        return self

    def _open(self) -> socket.socket:
        """A connected socket. With a timeout set, a Unix socket's connect does not wait for
        room in the daemon's queue of new connections: when a burst of clients has filled it,
        the connect fails at once (EAGAIN). The daemon is there, so that is retried, with
        short pauses, until the timeout; then it is a TimeoutError (busy), never "not
        running"."""
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        pause = 0.001
        while True:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.settimeout(self.timeout)
                sock.connect(str(self.socket_path))
                return sock
            except (FileNotFoundError, ConnectionRefusedError) as exc:
                sock.close()
                raise DaemonUnavailable(f"no minionsd listening on {self.socket_path}") from exc
            except BlockingIOError:
                sock.close()
            except BaseException:
                sock.close()
                raise
            left = math.inf if deadline is None else deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"minionsd on {self.socket_path} did not take the "
                                   f"connection within {self.timeout:g} s: its queue of new "
                                   "connections stayed full (it runs, but is busy)")
            time.sleep(min(pause, left))
            pause = min(pause * 2, 0.05)

    def close(self) -> None:
        self._buffer = b""  # what was read belongs to this connection only
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def __enter__(self) -> Client:
        return self.connect()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send_raw(self, payload: bytes) -> None:
        self.connect()
        assert self._sock is not None
        try:
            self._sock.sendall(payload)
        except OSError as exc:
            self.close()
            raise DaemonUnavailable(f"minionsd on {self.socket_path} went away: {exc}") from exc

    def read_line(self) -> bytes:
        """The next reply line. Any failure closes the connection, so a later call never
        reads a reply meant for this one."""
        assert self._sock is not None
        while b"\n" not in self._buffer:
            try:
                chunk = self._sock.recv(65536)
            except TimeoutError:
                self.close()
                raise TimeoutError(f"no reply from minionsd within {self.timeout:g} s "
                                   "(the connection was dropped)") from None
            except OSError as exc:
                self.close()
                raise DaemonUnavailable(
                    f"minionsd on {self.socket_path} went away: {exc}") from exc
            if not chunk:
                self.close()
                raise DaemonUnavailable(
                    f"minionsd on {self.socket_path} closed the connection before answering")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def call(self, method: str, params: dict[str, Any] | None = None, /,
             **kwargs: Any) -> Any:
        """Call a method; keyword arguments become params. Raises RpcError on an error,
        DaemonUnavailable when the daemon is not there or goes away mid-call, TimeoutError
        when no reply comes within the timeout (the connection is then dropped)."""
        request_id = next(self._ids)
        message = {"jsonrpc": "2.0", "method": method, "id": request_id,
                   "params": dict(params or {}) | kwargs}
        payload = json.dumps(message, separators=(",", ":")).encode("utf-8") + b"\n"
        try:
            reply = self._send(payload, request_id, retry=True)
        except BaseException:
            self.close()
            raise
        if "error" in reply:
            error = reply["error"]
            raise RpcError(error.get("code", 0), error.get("message", ""), error.get("data"))
        return reply.get("result")

    def _reply_to(self, request_id: int) -> dict[str, Any]:
        """Read until the reply to `request_id`; a reply to an earlier request (one whose
        caller gave up) is discarded. An error with a null id is the daemon saying it could
        not read this request at all, so it is ours too."""
        while True:
            reply = json.loads(self.read_line())
            if not isinstance(reply, dict):
                continue
            if reply.get("id") == request_id:
                return reply
            if reply.get("id") is None and "error" in reply:
                return reply

    def _send(self, payload: bytes, request_id: int, retry: bool) -> dict[str, Any]:
        """Send one request and return its reply.

        A failed send means the daemon never got the whole line (the newline goes last), so
        it never ran the request. The daemon may have refused it part-way (a line over its
        size limit) and said why before closing: that answer is returned. Otherwise the
        connection was stale (the daemon restarted since the last call) and the request is
        sent once more on a new connection."""
        self.connect()
        assert self._sock is not None
        try:
            self._sock.sendall(payload)
        except OSError as exc:
            reply = self._answer_left_behind(request_id)
            self.close()
            if reply is not None:
                return reply
            if retry:
                return self._send(payload, request_id, retry=False)
            raise DaemonUnavailable(f"minionsd on {self.socket_path} went away: {exc}") from exc
        return self._reply_to(request_id)

    def _answer_left_behind(self, request_id: int) -> dict[str, Any] | None:
        """After a failed send: a reply the daemon wrote before it closed, if any."""
        try:
            return self._reply_to(request_id)
        except (OSError, ValueError):
            return None
