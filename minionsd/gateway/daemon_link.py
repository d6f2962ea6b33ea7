"""The gateway's way to the daemon: newline-delimited JSON-RPC on the Unix socket, asyncio.

`DaemonLink.exchange` sends one encoded message (a request or a batch) and returns the
decoded reply; `DaemonLink.call` is one request that raises RpcError for an error answer.
`GatewayCaller.call(method, params, identity)` is what /rpc, /mcp and the web view use: it
checks the identity's scope (forbidden, -32004), rewrites the params so the identity is the
token's (policy.py), and forwards.

Each exchange takes a connection from a small pool of idle ones, or opens a new one; a
connection that failed is dropped, never reused. A reused connection that the daemon closed
while it sat idle (a daemon restart) is seen before the request is written and replaced, so a
restarted daemon behind a running gateway costs no request.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from minionsd.gateway.identity import Identity
from minionsd.gateway.policy import Forbidden, admit, check_project
from minionsd.rpc.client import DaemonUnavailable, RpcError

READ_LIMIT = 64 * 1024 * 1024  # a daemon answer can be large (a knowledge entry, a search)
POOL_SIZE = 16
CALL_TIMEOUT_S = 60.0
# Jobs that can run for minutes on a big home (as minionsctl waits for them on the socket).
SLOW_METHODS = frozenset({"consolidation.run", "maintenance.run", "backup.create"})
SLOW_TIMEOUT_S = 3600.0


def timeout_for(methods: list[str]) -> float:
    return SLOW_TIMEOUT_S if SLOW_METHODS.intersection(methods) else CALL_TIMEOUT_S


class DaemonTimeout(TimeoutError):
    """The daemon accepted the request and did not answer in time (it may still finish)."""


class DaemonLink:
    """`locate`, when given, says where the home's daemon listens now (rpc.client's
    socket_for_home): asked when nothing answers on the current path, so a daemon restarted
    on a new server.socket is followed."""

    def __init__(self, socket_path: Path, timeout: float = CALL_TIMEOUT_S,
                 locate: Callable[[], Path] | None = None) -> None:
        self.socket_path = socket_path
        self.timeout = timeout
        self.locate = locate
        self._idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []

    async def _open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        try:
            return await self._connect()
        except DaemonUnavailable:
            moved = self.locate() if self.locate is not None else self.socket_path
            if moved == self.socket_path:
                raise
            self.socket_path = moved
            return await self._connect()

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        try:
            return await asyncio.open_unix_connection(str(self.socket_path), limit=READ_LIMIT)
        except (FileNotFoundError, ConnectionRefusedError) as exc:
            raise DaemonUnavailable(f"no minionsd listening on {self.socket_path}") from exc
        except OSError as exc:
            raise DaemonUnavailable(f"cannot connect to {self.socket_path}: {exc}") from exc

    async def _take(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        while self._idle:
            reader, writer = self._idle.pop()
            if not reader.at_eof() and not writer.is_closing():
                return reader, writer
            writer.close()
        return await self._open()

    def _give_back(self, pair: tuple[asyncio.StreamReader, asyncio.StreamWriter]) -> None:
        if len(self._idle) < POOL_SIZE:
            self._idle.append(pair)
        else:
            pair[1].close()

    async def exchange_bytes(self, payload: bytes, timeout: float | None = None
                             ) -> bytes | None:
        """Send one line (a request or batch, without its newline) and return the reply line;
        None for a message the daemon does not answer (notifications only). DaemonTimeout
        when no answer comes within `timeout` (default: the link's)."""
        expects_reply = _expects_reply(payload)
        wait = self.timeout if timeout is None else timeout
        reader, writer = await self._take()
        ok = False
        try:
            writer.write(payload + b"\n")
            await writer.drain()
            if not expects_reply:
                ok = True
                return None
            try:
                line = await asyncio.wait_for(reader.readline(), wait)
            except TimeoutError:
                raise DaemonTimeout(f"minionsd did not answer within {wait:g} s (it may "
                                    "still finish the request)") from None
            if not line.endswith(b"\n"):
                raise DaemonUnavailable(
                    f"minionsd on {self.socket_path} closed the connection before answering")
            ok = True
            return line
        except DaemonTimeout:
            raise  # a TimeoutError is an OSError: not "went away"
        except (ConnectionError, OSError) as exc:
            raise DaemonUnavailable(f"minionsd on {self.socket_path} went away: {exc}") from exc
        finally:
            if ok:
                self._give_back((reader, writer))
            else:
                writer.close()

    async def call(self, method: str, params: dict[str, Any] | None = None,
                   timeout: float | None = None) -> Any:
        message = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
        line = await self.exchange_bytes(json.dumps(message, separators=(",", ":")).encode(),
                                         timeout or timeout_for([method]))
        reply = json.loads(line or b"null")
        if not isinstance(reply, dict):
            raise DaemonUnavailable("the daemon's answer was not a JSON-RPC response")
        if "error" in reply:
            error = reply["error"]
            raise RpcError(error.get("code", 0), error.get("message", ""), error.get("data"))
        return reply.get("result")

    async def record_or_none(self, record_id: str) -> dict[str, Any] | None:
        """memory.get, or None when the daemon has no such record (or refuses the id)."""
        try:
            record = await self.call("memory.get", {"id": record_id})
        except RpcError:
            return None
        return record if isinstance(record, dict) else None

    async def close(self) -> None:
        while self._idle:
            _reader, writer = self._idle.pop()
            writer.close()
            with contextlib.suppress(OSError, ConnectionError):
                await writer.wait_closed()


def _expects_reply(payload: bytes) -> bool:
    """Whether the daemon answers this message: any request with an id, or anything that is
    not a well-formed notification (errors are answered)."""
    try:
        message = json.loads(payload)
    except ValueError:
        return True
    items = message if isinstance(message, list) else [message]
    if not items:
        return True
    return any(not isinstance(m, dict) or "id" in m for m in items)


class GatewayCaller:
    """One daemon call on behalf of a token: scope check, identity rewrite, forward."""

    def __init__(self, link: DaemonLink) -> None:
        self.link = link

    async def call(self, method: str, params: dict[str, Any] | None,
                   identity: Identity) -> Any:
        """The daemon's result; RpcError for a refusal (-32004 forbidden, -32602 for params
        the gateway cannot accept) or an error the daemon answered; DaemonUnavailable when
        the daemon is not there."""
        try:
            admitted = admit(method, params, identity)
            await check_project(method, admitted.params, identity, self.link.record_or_none)
        except Forbidden as exc:
            raise refusal(exc) from None
        return await self.link.call(method, admitted.params)


def refusal(exc: Forbidden) -> RpcError:
    return RpcError(exc.code, exc.message, {"detail": exc.detail, **exc.data})
