"""A real gateway process (`minionsctl serve`) in front of a real daemon, for the web view's
tests, and the Playwright launch of Debian's chromium (Playwright's own browser download
cannot work here; scripts/test-tools/chromium.sh installs the system one)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from tests.harness import REPO, wait_for

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class GatewayProcess:
    """`minionsctl serve --listen 127.0.0.1:<free port>` on `home`."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = home.parent / f"gateway-{self.port}.log"

    def start(self) -> GatewayProcess:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MINIONS_")}
        log = open(self.log_path, "ab")  # noqa: SIM115 - owned by the process
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "minionsd.cli", "--home", str(self.home), "serve",
             "--listen", f"127.0.0.1:{self.port}"],
            stdout=log, stderr=log, env=env, cwd=REPO)
        log.close()
        wait_for(self._healthy, timeout=30, what=f"gateway on {self.url}\n{self.log()}")
        return self

    def _healthy(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise AssertionError(f"gateway exited with {self.proc.returncode}:\n{self.log()}")
        try:
            with urllib.request.urlopen(self.url + "/healthz", timeout=2) as answer:
                return answer.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start_browser(playwright: Any) -> Any:
    """Debian's chromium, headless, no network but loopback. Playwright's launch() gives
    every browser a fresh temporary profile of its own (a --user-data-dir argument is refused
    there), removed when the browser closes."""
    return playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                      args=CHROMIUM_ARGS)
