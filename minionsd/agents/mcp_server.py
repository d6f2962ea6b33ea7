"""`minionsctl mcp`: an MCP server on stdio (newline-delimited JSON-RPC), SDK-free so that it
answers `initialize` within milliseconds of its start: agents' headless sessions do not wait for
slow MCP servers, and importing the `mcp` SDK alone takes over a second.

It holds no state and opens no database: each tool call and resource read is one call on the
daemon's socket (protocol.py, tools.py, resources.py), made in a thread of its own on a fresh
connection, so a slow call never holds up `ping`, `tools/list` or other calls, the daemon
stays the single writer however many sessions run, and a daemon restart between two calls is
invisible to the session. A daemon that is down or hung answers as an MCP tool error naming
the socket and what to do; the server stays up.

It ends when stdin closes (after answering the calls under way) or on SIGINT / SIGTERM (at
once). A line that is not JSON is answered with a parse error (-32700), one that is not a
JSON-RPC 2.0 message (an id or a method of the wrong type, an empty batch) with -32600 and id
null, and the server keeps serving.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import threading
import time
from typing import Any, BinaryIO, Protocol

from minionsd.agents.protocol import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    PARSE_ERROR,
    SLOW_METHODS,
    Connection,
    envelope_error,
    error_reply,
    valid_id,
)
from minionsd.agents.session import Session

MAX_LINE_BYTES = 16 * 1024 * 1024
DRAIN_S = 35.0  # how long calls under way may finish once stdin closed (above a call's 30 s)


class LineSource(Protocol):
    def readline(self, limit: int, /) -> bytes: ...


class StdioServer:
    def __init__(self, session: Session, stdin: LineSource, stdout: BinaryIO) -> None:
        self.connection = Connection(session, daemon_problem=session.problem)
        self.stdin, self.stdout = stdin, stdout
        self._write_lock = threading.Lock()
        self._cancelled: set[Any] = set()
        self._workers: list[threading.Thread] = []

    def send(self, reply: dict[str, Any] | list[dict[str, Any]]) -> None:
        try:
            line = json.dumps(reply, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate somewhere: escape it instead
            line = json.dumps(reply, separators=(",", ":")).encode("ascii")
        with self._write_lock:
            try:
                self.stdout.write(line + b"\n")
                self.stdout.flush()
            except (BrokenPipeError, ValueError, OSError):
                pass  # the client is gone; the read loop ends on EOF

    def _reply_to(self, message: Any) -> dict[str, Any] | None:
        """The connection's reply, with a last-resort guard: a defect answers -32603 (or
        nothing, for a notification), so no request goes unanswered and no thread dies."""
        try:
            return self.connection.handle(message)
        except Exception as exc:
            if not isinstance(message, dict) or "id" not in message:
                return None
            request_id = message["id"] if valid_id(message["id"]) else None
            method = str(message.get("method"))[:80]
            return error_reply(request_id, INTERNAL_ERROR, f"{method} failed inside minionsd's "
                               f"MCP server: {type(exc).__name__}")

    def _answer(self, message: Any) -> None:
        reply = self._reply_to(message)
        if reply is not None and reply.get("id") not in self._cancelled:
            self.send(reply)

    def _dispatch(self, message: Any) -> None:
        if envelope_error(message) is not None or not isinstance(message.get("method"), str):
            self._answer(message)  # -32600 for a malformed message; nothing for a reply
            return
        self.connection.claim_era(message)
        method = message["method"]
        if method == "notifications/cancelled":
            params = message.get("params")
            request_id = params.get("requestId") if isinstance(params, dict) else None
            if request_id is not None and valid_id(request_id):
                self._cancelled.add(request_id)
            return
        if method in SLOW_METHODS and "id" in message:
            worker = threading.Thread(target=self._answer, args=(message,), daemon=True,
                                      name="mcp-call")
            self._workers = [w for w in self._workers if w.is_alive()] + [worker]
            try:
                worker.start()
            except RuntimeError:  # no thread to be had: answer it here, later than the rest
                self._workers.pop()
                self._answer(message)
            return
        self._answer(message)

    def _batch(self, messages: list[Any]) -> None:
        """A batch (2025-03-26): answered in one line, in order; an empty one is -32600."""
        if not messages:
            self.send(error_reply(None, INVALID_REQUEST, "an empty batch is not a request"))
            return
        replies = [r for r in map(self._reply_to, messages) if r is not None]
        if replies:
            self.send(replies)

    def serve(self) -> None:
        while True:
            line = self.stdin.readline(MAX_LINE_BYTES + 1)
            if not line:
                break
            if not line.strip():
                continue
            if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
                self.send(error_reply(None, PARSE_ERROR, "message over 16 MiB"))
                while line and not line.endswith(b"\n"):  # skip the rest of it
                    line = self.stdin.readline(MAX_LINE_BYTES)
                continue
            try:
                message = json.loads(line, parse_constant=_not_json)
            except (ValueError, UnicodeDecodeError) as exc:
                self.send(error_reply(None, PARSE_ERROR, f"Parse error: {exc}"))
                continue
            except RecursionError:
                self.send(error_reply(None, PARSE_ERROR, "Parse error: nested too deeply"))
                continue
            try:
                if isinstance(message, list):
                    self._batch(message)
                else:
                    self._dispatch(message)
            except Exception as exc:  # the loop itself must outlive any one line
                self.send(error_reply(None, INTERNAL_ERROR, "the message could not be handled "
                                      f"inside minionsd's MCP server: {type(exc).__name__}"))
        deadline = time.monotonic() + DRAIN_S
        for worker in self._workers:
            # Short waits: a signal's handler runs between them, never 35 s late.
            while worker.is_alive() and time.monotonic() < deadline:
                worker.join(0.2)


def _not_json(token: str) -> Any:
    """Python's json reads NaN and Infinity, which JSON has not (an id echoed back as one would
    make a reply no strict parser reads): a parse error instead."""
    raise ValueError(f"{token} is not a JSON value")


class SignalSafeLines:
    """The lines of file descriptor `fd`, read so that SIGINT/SIGTERM always ends the wait.

    Python runs a signal's handler between bytecodes, and a blocking read() is only broken off
    by a signal that arrives while the call is under way: one that arrives just before it
    (after the previous line was handled) leaves the read waiting for the next line, which may
    never come. Here the wait is a select() on the input and on a wake-up pipe that the C-level
    handler writes to (signal.set_wakeup_fd), so a signal arriving at any moment ends it."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._buffer = bytearray()
        self._eof = False
        self._wake_read, wake_write = os.pipe()
        os.set_blocking(self._wake_read, False)
        os.set_blocking(wake_write, False)
        self._wake_write = wake_write
        self._previous_wakeup = signal.set_wakeup_fd(wake_write)

    def close(self) -> None:
        signal.set_wakeup_fd(self._previous_wakeup)
        os.close(self._wake_read)
        os.close(self._wake_write)

    def readline(self, limit: int) -> bytes:
        """A line with its newline, at most `limit` bytes of one, or b"" at the end of input."""
        while True:
            end = self._buffer.find(b"\n", 0, limit)
            if end >= 0 or len(self._buffer) >= limit or (self._eof and self._buffer):
                size = end + 1 if end >= 0 else min(limit, len(self._buffer))
                line = bytes(self._buffer[:size])
                del self._buffer[:size]
                return line
            if self._eof:
                return b""
            readable, _, _ = select.select([self.fd, self._wake_read], [], [])
            if self._wake_read in readable:
                os.read(self._wake_read, 512)  # the handler has run, or runs next
            if self.fd in readable:
                chunk = os.read(self.fd, 1 << 16)
                self._buffer += chunk
                self._eof = not chunk


def _stop(signum: int, _frame: Any) -> None:
    raise SystemExit(128 + signum)


def run(session: Session) -> int:
    """Serve MCP on stdin/stdout until the client closes stdin (exit 0) or a signal stops it
    (exit 128 + the signal's number)."""
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    lines = SignalSafeLines(sys.stdin.fileno())
    try:
        StdioServer(session, lines, sys.stdout.buffer).serve()
    finally:
        lines.close()
    return 0
