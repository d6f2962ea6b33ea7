"""The test harness's daemon start-up: a real `python -m minionsd.daemon` on a temp home, and
`wait_for`, the deadline poll. No pytest here, so scripts (scripts/bench.py, scripts/eval.py)
start their daemons the same way the tests do; tests/conftest.py re-exports both. Also
`home_app`, an App on a fresh home for tests that drive the daemon's parts in-process."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from minionsd.client import Client, DaemonUnavailable

REPO = Path(__file__).resolve().parent.parent
START_TIMEOUT_S = 20.0


def wait_for(predicate: Callable[[], Any], timeout: float = 15.0, interval: float = 0.02,
             what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(interval)


class DaemonProcess:
    """A real minionsd subprocess on a temp home.

    `env` adds to the caller's environment (minus MINIONS_/ANTHROPIC_/NOTIFY_/WATCHDOG_
    variables), `args` follow `--home`; `cpus` pins the process (and the threads it starts) to
    those CPUs; `new_session` puts it in its own session, so a Ctrl-C at the terminal reaches
    only the caller, which stops the daemon itself."""

    def __init__(self, home: Path, env: dict[str, str] | None = None,
                 args: list[str] | None = None, *, cpus: set[int] | None = None,
                 new_session: bool = False) -> None:
        self.home = home
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("MINIONS_", "ANTHROPIC_", "NOTIFY_", "WATCHDOG_"))}
        self.env.update(env or {})
        self.args = args or []
        self.cpus = cpus
        self.new_session = new_session
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = home.parent / f"daemon-{id(self)}.log"

    @property
    def socket(self) -> Path:
        return self.home / "engine" / "minionsd.sock"

    def spawn(self) -> subprocess.Popen[bytes]:
        self.home.mkdir(parents=True, exist_ok=True)
        cpus = self.cpus

        def pin() -> None:  # runs in the child between fork and exec
            os.sched_setaffinity(0, cpus or set())

        log = open(self.log_path, "ab")  # noqa: SIM115 - owned by the process
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "minionsd.daemon", "--home", str(self.home),
             "--log-format", "json", *self.args],
            stdout=log, stderr=log, env=self.env, cwd=REPO,
            preexec_fn=pin if cpus is not None else None,
            start_new_session=self.new_session,
        )
        log.close()
        return self.proc

    def start(self, timeout: float = START_TIMEOUT_S) -> DaemonProcess:
        self.spawn()
        wait_for(self._answers, timeout=timeout, what=f"daemon on {self.socket}\n{self.log()}")
        return self

    def _answers(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise AssertionError(f"daemon exited with {self.proc.returncode}:\n{self.log()}")
        try:
            with Client(self.socket, timeout=5) as client:
                client.call("status")
            return True
        except (DaemonUnavailable, ConnectionError, OSError):
            return False

    def client(self, timeout: float = 30) -> Client:
        return Client(self.socket, timeout=timeout).connect()

    def call(self, method: str, **params: Any) -> Any:
        with self.client() as client:
            return client.call(method, params)

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-6000:]
        except OSError:
            return ""

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15) -> int:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"daemon ignored signal {sig}:\n{self.log()}") from None

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@contextlib.contextmanager
def home_app(root: Path, config_toml: str) -> Iterator[Any]:
    """An App on a fresh home at `root` with `config_toml` as its config.toml and a real
    state.db, for tests that drive the daemon's parts in-process; its worker threads and
    the database are closed after."""
    from minionsd.config import load as load_config
    from minionsd.home import Home
    from minionsd.memory.app import App
    from minionsd.storage.database import Database

    home = Home(root)
    home.ensure()
    (root / "config.toml").write_text(config_toml)
    db = Database(home.db)
    app = App(home=home, config=load_config(home.config, {}), db=db)
    try:
        yield app
    finally:
        app.workers.close()
        db.close()


@contextlib.contextmanager
def app_with_record(root: Path, body: str, **fields: Any) -> Iterator[tuple[Any, str]]:
    """home_app on a fresh home at `root` holding one human, global, semantic record titled
    "Cache flush" with `body` (and `fields`): (app, record id)."""
    from minionsd.storage import records
    from minionsd.storage.record_fields import validate_new

    with home_app(root, "") as app:
        record = {"title": "Cache flush", "body": body, "type": "semantic", "scope": "global",
                  "trust": "human", "source": "test", **fields}
        yield app, app.db.write_blocking(
            lambda conn: records.insert(conn, validate_new(record), app.now()))


@contextlib.contextmanager
def recall_dispatcher(root: Path, body: str) -> Iterator[tuple[Any, str, Any]]:
    """The daemon's method table (the recall surface's methods included) over a fresh home at
    `root` holding one record with `body`, served in-process: (dispatcher, record id, db)."""
    from minionsd.memory.recall import RecallSurface
    from minionsd.rpc.methods import build_methods
    from minionsd.rpc.protocol import Dispatcher

    with app_with_record(root, body) as (app, record_id):
        surface = RecallSurface(app)

        async def unused(*_args: Any) -> dict[str, Any]:
            return {}

        dispatcher = Dispatcher(build_methods(app, status=unused, config_changed=unused,
                                              extra=surface.methods()))
        try:
            yield dispatcher, record_id, app.db
        finally:
            surface.telemetry.flush()


def run_at_once(calls: list[Callable[[], Any]]) -> list[Any]:
    """Each of `calls` on a thread of its own, all released together by a barrier: what each
    returned or raised, in order."""
    import threading

    outcomes: list[Any] = [None] * len(calls)
    start = threading.Barrier(len(calls))

    def one(n: int) -> None:
        start.wait()
        try:
            outcomes[n] = calls[n]()
        except BaseException as exc:
            outcomes[n] = exc

    threads = [threading.Thread(target=one, args=(n,)) for n in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes
