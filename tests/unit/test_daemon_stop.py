"""Daemon.stop_all: reverse order, one overall deadline, and a stop that hangs or fails does
not keep the others from stopping."""

from __future__ import annotations

import asyncio

import pytest
import structlog

from minionsd import daemon as daemon_mod
from minionsd.daemon import Daemon


class Part:
    """A component; the daemon logs components by class name, so each gets its own class."""

    def __new__(cls, name: str, *args: object) -> Part:
        return super().__new__(type(name, (cls,), {}))

    def __init__(self, name: str, stopped: list[str], behaviour: str = "ok") -> None:
        self.name = name
        self.stopped = stopped
        self.behaviour = behaviour

    async def stop(self) -> None:
        self.stopped.append(self.name)  # the synchronous start of stop() always runs
        if self.behaviour == "hang":
            await asyncio.Event().wait()
        if self.behaviour == "fail":
            raise RuntimeError("stop went wrong")


def run_stop(parts: list[Part]) -> list[dict]:
    async def scenario() -> None:
        # generous outer bound: stop_all must end on its own deadline, far inside this
        await asyncio.wait_for(Daemon(app=None).stop_all(parts), 30)

    with structlog.testing.capture_logs() as logs:
        asyncio.run(scenario())
    return logs


@pytest.fixture
def short_budget(monkeypatch):
    monkeypatch.setattr(daemon_mod, "STOP_BUDGET_S", 0.3)
    monkeypatch.setattr(daemon_mod, "STOP_FLOOR_S", 0.05)


def test_components_stop_in_reverse_order():
    stopped: list[str] = []
    logs = run_stop([Part(n, stopped) for n in "abc"])
    assert stopped == ["c", "b", "a"]
    assert [e["event"] for e in logs] == ["daemon.component_stopped"] * 3


def test_one_deadline_for_all_and_every_component_still_gets_its_stop(short_budget):
    stopped: list[str] = []
    parts = [Part("first", stopped), Part("hangs-1", stopped, "hang"),
             Part("fails", stopped, "fail"), Part("hangs-2", stopped, "hang"),
             Part("last", stopped)]
    logs = run_stop(parts)
    assert stopped == ["last", "hangs-2", "fails", "hangs-1", "first"]
    outcome = {e.get("component"): e["event"] for e in logs}
    assert outcome == {"last": "daemon.component_stopped", "hangs-2": "daemon.stop_timeout",
                       "fails": "daemon.stop_failed", "hangs-1": "daemon.stop_timeout",
                       "first": "daemon.component_stopped"}


def test_the_budget_fits_inside_specs_ten_seconds(tmp_path):
    from minionsd import config as config_mod
    from minionsd.home import Home
    from minionsd.memory.app import App
    from minionsd.storage.database import Database

    home = Home(tmp_path / "home")
    home.ensure()
    db = Database(home.db)
    try:
        app = App(home=home, config=config_mod.load(home.config, {}), db=db, environ={})
        components = len(daemon_mod.build_components(daemon_mod.Daemon(app)).parts)
    finally:
        db.close()
    assert components >= 8
    assert daemon_mod.STOP_BUDGET_S + components * daemon_mod.STOP_FLOOR_S < 10
