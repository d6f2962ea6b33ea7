"""The asyncio Unix-socket transport: newline-delimited JSON-RPC, peer-uid check, size cap.

Knows bytes and connections only; what a request means is the Dispatcher's business.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import stat
import struct
from pathlib import Path

import structlog

from minionsd.errors import StorageError
from minionsd.rpc.protocol import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    Dispatcher,
    dumps,
    error_response,
)

log = structlog.get_logger()
SUN_PATH_MAX = 107
MAX_OVERLAP = 2  # lines of one connection handled at once (bulk batches only)
# Connections waiting to be accepted: a fleet of agents' hooks and tool calls can arrive at
# once (the kernel caps it at net.core.somaxconn).
LISTEN_BACKLOG = max(socket.SOMAXCONN, 1024)


def _ready(value: bytes | None) -> asyncio.Future[bytes | None]:
    future: asyncio.Future[bytes | None] = asyncio.get_running_loop().create_future()
    future.set_result(value)
    return future


def peer_uid(sock: socket.socket) -> int | None:
    """The connecting process's uid: SO_PEERCRED on Linux, LOCAL_PEERCRED (xucred) on macOS
    and the BSDs; None where neither exists (the 0700 directory is then the only guard)."""
    linux = getattr(socket, "SO_PEERCRED", None)
    if linux is not None:
        raw = sock.getsockopt(socket.SOL_SOCKET, linux, struct.calcsize("3i"))
        _pid, uid, _gid = struct.unpack("3i", raw)
        return uid
    bsd = getattr(socket, "LOCAL_PEERCRED", None)
    if bsd is not None:
        # struct xucred { u_int cr_version; uid_t cr_uid; short cr_ngroups; gid_t[16]; }
        raw = sock.getsockopt(0, bsd, struct.calcsize("2I h 16I"))
        _version, uid = struct.unpack_from("2I", raw)
        return uid
    return None


def bind_socket(path: Path) -> socket.socket:
    """Bind a 0600 listening socket, removing a stale socket file (caller holds the pid lock)."""
    if len(os.fsencode(path)) > SUN_PATH_MAX:
        raise StorageError(f"socket path {path} is longer than {SUN_PATH_MAX} bytes; "
                           "set server.socket to a shorter path")
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        pass
    else:
        if not stat.S_ISSOCK(mode):
            raise StorageError(f"{path} exists and is not a socket; refusing to replace it")
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o177)
    try:
        sock.bind(str(path))
    finally:
        os.umask(old_umask)
    os.chmod(path, 0o600)
    sock.listen(LISTEN_BACKLOG)
    return sock


class RpcServer:
    def __init__(self, dispatcher: Dispatcher, path: Path, max_request_bytes: int) -> None:
        self.dispatcher = dispatcher
        self.path = path
        self.max_request_bytes = max_request_bytes
        self._server: asyncio.AbstractServer | None = None
        self._inode: int | None = None
        self._connections: set[asyncio.Task] = set()

    async def start(self) -> None:
        sock = bind_socket(self.path)
        self._inode = os.stat(self.path).st_ino
        # Leave room above the cap so an oversized line is detected by length, not by a
        # reader exception that would leave the buffer in an unknown state.
        # The backlog again: asyncio listens once more on a socket it is given (100 unless
        # told otherwise).
        self._server = await asyncio.start_unix_server(
            self._serve, sock=sock, limit=self.max_request_bytes + 2, backlog=LISTEN_BACKLOG
        )

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._connections.add(task)
        try:
            uid = peer_uid(writer.get_extra_info("socket"))
            if uid is not None and uid != os.getuid():
                log.warning("rpc.peer_refused", uid=uid)
                return
            await self._serve_lines(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass  # client went away, or shutdown closed the connection
        finally:
            if task is not None:
                self._connections.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _serve_lines(self, reader: asyncio.StreamReader,
                           writer: asyncio.StreamWriter) -> None:
        """Read lines, answer each in order. A line starts only when the one before it has
        been handled, except that a batch of bulk requests only (memory.add) may start while
        the batch of bulk requests before it is still being handled: a client importing in
        pipelined batches keeps the preparing thread busy while the writer commits (at most
        MAX_OVERLAP lines in flight). Replies are sent by a task of their own, in order."""
        replies: asyncio.Queue[asyncio.Future[bytes | None] | None] = asyncio.Queue()
        sender = asyncio.create_task(self._send_replies(replies, writer))
        in_flight: list[tuple[asyncio.Future[bytes | None], bool]] = []
        try:
            while True:
                try:
                    line = await reader.readline()
                except (ValueError, asyncio.LimitOverrunError):
                    line = None
                if line is not None and not line:
                    break
                if line is None or len(line.rstrip(b"\r\n")) > self.max_request_bytes:
                    replies.put_nowait(_ready(dumps(error_response(
                        None, INVALID_REQUEST, "Invalid Request",
                        f"request line exceeds server.max_request_bytes "
                        f"({self.max_request_bytes})"))))
                    break
                if not line.strip():
                    continue
                message, error = self.dispatcher.parse(line)
                bulk = error is None and self.dispatcher.bulk_only(message)
                in_flight = [(f, b) for f, b in in_flight if not f.done()]
                while in_flight and (not (bulk and in_flight[-1][1])
                                     or len(in_flight) >= MAX_OVERLAP):
                    await asyncio.wait([in_flight.pop(0)[0]])
                future = _ready(error) if error is not None else \
                    asyncio.ensure_future(self._handle(message))
                in_flight.append((future, bulk))
                replies.put_nowait(future)
            replies.put_nowait(None)
            await sender
        finally:
            if not sender.done():
                sender.cancel()
            for future, _ in in_flight:
                future.cancel()

    async def _handle(self, message: object) -> bytes | None:
        try:
            return await self.dispatcher.handle_decoded(message)
        except Exception:
            # The dispatcher answers every failure it knows; this is the last guard so a
            # client is never left waiting on a connection that silently closed.
            log.exception("rpc.request_failed")
            return dumps(error_response(None, INTERNAL_ERROR, "Internal error",
                                        "the request failed unexpectedly; "
                                        "the daemon log has details"))

    @staticmethod
    async def _send_replies(replies: asyncio.Queue[asyncio.Future[bytes | None] | None],
                            writer: asyncio.StreamWriter) -> None:
        while (future := await replies.get()) is not None:
            reply = await future
            if reply is not None:
                writer.write(reply)
                await writer.drain()

    async def stop(self) -> None:
        if self._server is None:
            return
        self._server.close()
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.gather(*self._connections, return_exceptions=True)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._server.wait_closed(), 2)
        self._server = None
        with contextlib.suppress(OSError):
            if os.stat(self.path).st_ino == self._inode:
                self.path.unlink()
