"""A real gateway process for tests and the bench: `python -m minionsd.cli --home H serve
--listen 127.0.0.1:PORT` in front of a DaemonProcess, started and stopped like the daemon.
No pytest here, so scripts/bench.py starts gateways the same way the tests do."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.harness import REPO, DaemonProcess, wait_for


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def make_token(daemon: DaemonProcess, name: str, agent: str, scopes: str,
               project: str | None = None, **extra: Any) -> str:
    params: dict[str, Any] = {"name": name, "agent": agent, "scopes": scopes} | extra
    if project:
        params["project"] = project
    return daemon.call("token.create", **params)["token"]


class GatewayProcess:
    def __init__(self, daemon: DaemonProcess, port: int | None = None, *,
                 scheme: str = "http", ca: str | None = None, host: str = "127.0.0.1") -> None:
        self.daemon = daemon
        self.host = host  # what it listens on; it is always reached on 127.0.0.1
        self.port = port or free_port()
        self.scheme = scheme
        self.ca = ca  # the certificate an https gateway is checked against
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = daemon.home.parent / f"gateway-{self.port}.log"

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        return [sys.executable, "-m", "minionsd.cli", "--home", str(self.daemon.home), "serve",
                "--listen", f"{self.host}:{self.port}"]

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MINIONS_", "ANTHROPIC_"))}
        env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
        return env

    def spawn(self) -> subprocess.Popen[bytes]:
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                         env=self.env(), cwd=REPO)
        return self.proc

    def healthy(self) -> bool:
        context = ssl.create_default_context(cafile=self.ca) if self.ca else None
        try:
            with urllib.request.urlopen(self.url + "/healthz", timeout=2,
                                        context=context) as response:
                return json.loads(response.read()).get("ok") is True
        except (OSError, urllib.error.URLError, ValueError):
            return False

    def start(self, timeout: float = 30.0) -> GatewayProcess:
        self.spawn()

        def up() -> bool:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"gateway exited {self.proc.returncode}:\n{self.log()}")
            return self.healthy()

        try:
            wait_for(up, timeout=timeout, interval=0.05, what="the gateway to answer /healthz")
        except BaseException:
            self.stop()
            raise
        return self

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def stop(self, timeout: float = 15.0) -> int | None:
        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(5)

    def rpc(self, token: str | None, body: Any, headers: dict[str, str] | None = None
            ) -> tuple[int, dict[str, str], Any]:
        """POST /rpc with urllib: (status, headers, decoded JSON body or None)."""
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        request = urllib.request.Request(self.url + "/rpc", data=data, method="POST",
                                         headers={"Content-Type": "application/json",
                                                  **(headers or {})})
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                status, raw, got = response.status, response.read(), dict(response.headers)
        except urllib.error.HTTPError as exc:
            status, raw, got = exc.code, exc.read(), dict(exc.headers)
            exc.close()
        return status, {k.lower(): v for k, v in got.items()}, (json.loads(raw) if raw else None)


def call_rpc(gateway: GatewayProcess, token: str, method: str, **params: Any) -> dict[str, Any]:
    """One request through the gateway; the JSON-RPC reply (result or error)."""
    status, _, reply = gateway.rpc(token, {"jsonrpc": "2.0", "id": 1, "method": method,
                                           "params": params})
    assert status == 200, (status, reply)
    return reply


def gateway_with(daemon: DaemonProcess, scheme: str = "http", ca: str | None = None,
                 host: str = "127.0.0.1", port: int | None = None,
                 **config: Any) -> GatewayProcess:
    """A second gateway on the same daemon whose settings differ: config.toml is the home's,
    read by a gateway at start, so the keys are set, the gateway started, and the keys put
    back (the first gateway keeps what it read)."""
    before = {key: daemon.call("config.get", key=key)["value"] for key in config}
    for key, value in config.items():
        daemon.call("config.set", key=key, value=value)
    try:
        return GatewayProcess(daemon, port, scheme=scheme, ca=ca, host=host).start()
    finally:
        for key, value in before.items():
            daemon.call("config.set", key=key, value=value)


@contextmanager
def daemon_and_gateway(prefix: str, prepare: Callable[[DaemonProcess], Any] | None = None
                       ) -> Iterator[tuple[DaemonProcess, GatewayProcess]]:
    """A fresh home with a daemon and a gateway in front of it (the gateway refuses to start
    without a token, so a read token `boot` is made first); `prepare` runs on the daemon before
    the gateway starts. Both processes and the home are gone afterwards, even when a start
    fails."""
    root = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    daemon: DaemonProcess | None = None
    gateway: GatewayProcess | None = None
    try:
        daemon = DaemonProcess(root / "home").start()
        if prepare is not None:
            prepare(daemon)
        make_token(daemon, "boot", "boot-bot", "read")
        gateway = GatewayProcess(daemon).start()
        yield daemon, gateway
    finally:
        if gateway is not None:
            gateway.stop()
        if daemon is not None:
            daemon.kill()
        shutil.rmtree(root, ignore_errors=True)


__all__ = ["GatewayProcess", "Path", "call_rpc", "daemon_and_gateway", "free_port", "gateway_with",
           "make_token"]
