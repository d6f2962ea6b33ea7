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
once). Anything that is not a JSON-RPC line is answered with a parse error and skipped.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from typing import Any, BinaryIO

from minionsd.agents.protocol import PARSE_ERROR, SLOW_METHODS, Connection, error_reply
from minionsd.agents.session import Session

MAX_LINE_BYTES = 16 * 1024 * 1024
DRAIN_S = 35.0  # how long calls under way may finish once stdin closed (above a call's 30 s)


class StdioServer:
    def __init__(self, session: Session, stdin: BinaryIO, stdout: BinaryIO) -> None:
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

    def _answer(self, message: Any) -> None:
        reply = self.connection.handle(message)
        if reply is not None and reply.get("id") not in self._cancelled:
            self.send(reply)

    def _dispatch(self, message: Any) -> None:
        self.connection.claim_era(message)
        if isinstance(message, dict) and message.get("method") == "notifications/cancelled":
            params = message.get("params")
            if isinstance(params, dict) and "requestId" in params:
                self._cancelled.add(params["requestId"])
            return
        if isinstance(message, dict) and message.get("method") in SLOW_METHODS \
                and "id" in message:
            worker = threading.Thread(target=self._answer, args=(message,), daemon=True,
                                      name=f"mcp-call-{message.get('id')}")
            self._workers = [w for w in self._workers if w.is_alive()] + [worker]
            worker.start()
            return
        self._answer(message)

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
                message = json.loads(line)
            except (ValueError, UnicodeDecodeError) as exc:
                self.send(error_reply(None, PARSE_ERROR, f"Parse error: {exc}"))
                continue
            if isinstance(message, list):  # a batch (2025-03-26): answered in one line
                replies = [r for r in map(self.connection.handle, message) if r is not None]
                if replies:
                    self.send(replies)
                continue
            self._dispatch(message)
        for worker in self._workers:
            worker.join(DRAIN_S)


def _stop(signum: int, _frame: Any) -> None:
    raise SystemExit(128 + signum)


def run(session: Session) -> int:
    """Serve MCP on stdin/stdout until the client closes stdin (exit 0) or a signal stops it
    (exit 128 + the signal's number)."""
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    StdioServer(session, sys.stdin.buffer, sys.stdout.buffer).serve()
    return 0
