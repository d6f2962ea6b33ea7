"""`minionsctl serve`: the gateway process. Reads the home's config, refuses to start when
it would be unsafe (SPEC §5.2: exit 2 and one line saying why), and runs uvicorn in the
foreground until SIGTERM or SIGINT.

Start-up refusals: a listen address that is not loopback without TLS or `behind_proxy`; TLS
files missing; no usable token in the daemon yet (nobody could use the gateway, and a gateway
with nothing to check is one mistake from an open one). A daemon that does not answer at
start is exit 3, like any client.

Slow clients: uvicorn's h11 protocol cuts idle keep-alive connections but not a client that
dribbles its request headers; `SlowCutProtocol` closes a connection whose request line and
headers have not all arrived `read_timeout_s` after the connection opened or the previous
response ended. The body's own deadline is the Guard's.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from pathlib import Path
from typing import Any

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from minionsd.gateway.app import build_app
from minionsd.gateway.settings import GatewaySettings
from minionsd.rpc.client import Client, DaemonUnavailable, RpcError

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_UNREACHABLE = 0, 1, 2, 3
HEADER_TIMEOUT_S = 30.0


class SlowCutProtocol(H11Protocol):
    """H11Protocol that closes a connection whose request headers take too long."""

    header_timeout_s = HEADER_TIMEOUT_S

    def connection_made(self, transport: Any) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_header_timer()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm_header_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        timer = getattr(self, "_header_timer", None)
        if timer is not None:
            timer.cancel()
        super().connection_lost(exc)

    def _arm_header_timer(self) -> None:
        old = getattr(self, "_header_timer", None)
        if old is not None:
            old.cancel()
        waiting_for = self.cycle
        self._header_timer = self.loop.call_later(self.header_timeout_s, self._cut_if_still,
                                                  waiting_for)

    def _cut_if_still(self, waiting_for: Any) -> None:
        # A new request since the timer was armed has its own cycle object: not slow.
        if self.cycle is waiting_for and not self.transport.is_closing():
            self.logger.info("gateway.slow_client_cut")
            self.transport.close()


def check_tokens(socket: Path) -> str | None:
    """Why the gateway must not start for lack of tokens, or None."""
    with Client(socket, timeout=10.0) as client:
        usable = client.call("token.count")["usable"]
    if usable < 1:
        return ("no usable token exists yet, so the gateway would refuse everyone: create "
                "one first with `minionsctl token create NAME --agent ID --scope read` for an "
                "agent, or run `minionsctl web` for the web view's own")
    return None


class GatewayServer(uvicorn.Server):
    """uvicorn's server that says where it listens once it does (not before it has bound)."""

    def __init__(self, config: uvicorn.Config, announce: str) -> None:
        super().__init__(config)
        self.announce = announce

    async def startup(self, sockets: Any = None) -> None:
        await super().startup(sockets)
        if self.started:
            print(self.announce, file=sys.stderr, flush=True)


def make_server(settings: GatewaySettings, app: Any = None) -> uvicorn.Server:
    SlowCutProtocol.header_timeout_s = settings.read_timeout_s
    config = uvicorn.Config(
        app or build_app(settings), host=settings.host, port=settings.port,
        http=SlowCutProtocol, ws="none", lifespan="on", access_log=False,
        log_level="warning", server_header=False, proxy_headers=settings.behind_proxy,
        timeout_keep_alive=5, timeout_graceful_shutdown=5,
        ssl_certfile=settings.tls_cert or None, ssl_keyfile=settings.tls_key or None)
    return GatewayServer(config, f"minionsctl serve: listening on {settings.base_url} for "
                                 f"{settings.socket}")


def run(settings: GatewaySettings) -> int:
    problem = settings.refusal()
    if problem:
        print(f"minionsctl serve: {problem}", file=sys.stderr)
        return EXIT_USAGE
    try:
        problem = check_tokens(settings.socket)
    except (DaemonUnavailable, TimeoutError, OSError) as exc:
        print(f"minionsctl serve: minionsd is not reachable on {settings.socket} ({exc}); "
              "start the daemon first", file=sys.stderr)
        return EXIT_UNREACHABLE
    except RpcError as exc:
        print(f"minionsctl serve: the daemon refused token.count: {exc}", file=sys.stderr)
        return EXIT_ERROR
    if problem:
        print(f"minionsctl serve: {problem}", file=sys.stderr)
        return EXIT_USAGE
    # Access logs would carry URLs; tokens never are in one (the Guard refuses them there),
    # but the gateway keeps its own log to start/stop lines and warnings anyway.
    logging.getLogger("uvicorn.access").disabled = True
    server = make_server(settings)
    # uvicorn handles SIGTERM/SIGINT while it serves and raises them again once it has shut
    # down; these handlers make that second delivery a no-op, so a clean stop exits 0.
    signal.signal(signal.SIGTERM, lambda *_: None)
    signal.signal(signal.SIGINT, lambda *_: None)
    try:
        asyncio.run(server.serve())
    except KeyboardInterrupt:
        pass
    except SystemExit:  # uvicorn gives up at start (the address is taken...) with its own line
        pass
    if not server.started:
        print(f"minionsctl serve: could not listen on {settings.host}:{settings.port} (see "
              "the line above)", file=sys.stderr)
        return EXIT_ERROR
    print("minionsctl serve: stopped", file=sys.stderr, flush=True)
    return EXIT_OK
