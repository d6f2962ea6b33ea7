"""The gateway's socket client (daemon_link.py) against small Unix-socket servers of its own:
a daemon that takes a request and never answers is a DaemonTimeout within the deadline; a
pooled connection the daemon closed while idle is replaced, not used."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

import pytest

from minionsd.gateway.daemon_link import DaemonLink, DaemonTimeout, timeout_for


def test_slow_methods_get_the_long_timeout():
    assert timeout_for(["status"]) == 60.0
    assert timeout_for(["status", "consolidation.run"]) == 3600.0


def run_with_server(handler, body) -> None:
    async def main() -> None:
        with tempfile.TemporaryDirectory(prefix="gl-", dir="/tmp") as root:
            path = Path(root) / "s.sock"
            server = await asyncio.start_unix_server(handler, str(path))
            try:
                await body(path)
            finally:
                server.close()
                await server.wait_closed()

    asyncio.run(main())


def test_a_daemon_that_never_answers_is_a_timeout():
    async def hang(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readline()
            await reader.read()  # never answers; ends when the client hangs up
        finally:
            writer.close()

    async def body(path: Path) -> None:
        link = DaemonLink(path)
        with pytest.raises(DaemonTimeout):
            await link.exchange_bytes(b'{"jsonrpc":"2.0","id":1,"method":"status"}', 0.2)
        await link.close()

    run_with_server(hang, body)


def test_a_connection_closed_while_idle_is_not_reused():
    served: list[int] = []

    async def answer_once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        served.append(1)
        await reader.readline()
        writer.write(b'{"jsonrpc":"2.0","id":1,"result":{"n":%d}}\n' % len(served))
        await writer.drain()
        writer.close()  # like a daemon restart: the connection ends after one answer

    async def body(path: Path) -> None:
        link = DaemonLink(path)
        assert await link.call("status") == {"n": 1}
        await asyncio.sleep(0.05)  # the close reaches the pooled connection
        assert await link.call("status") == {"n": 2}
        await link.close()

    run_with_server(answer_once, body)
