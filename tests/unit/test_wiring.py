"""service/components.build: every component that serves the daemon something is in the
Wiring list the daemon reads for it (a part left out would silently serve nothing)."""

from __future__ import annotations

from pathlib import Path

from minionsd import config as config_mod
from minionsd.daemon import Daemon, build_components
from minionsd.home import Home
from minionsd.memory.app import App
from minionsd.storage.database import Database


def test_each_component_is_listed_for_what_it_serves(tmp_path: Path) -> None:
    home = Home(tmp_path / "home")
    home.ensure()
    db = Database(home.db)
    try:
        app = App(home=home, config=config_mod.load(home.config, {}), db=db, environ={})
        wiring = build_components(Daemon(app))
    finally:
        db.close()

    def having(*names: str) -> set[int]:
        return {id(part) for part in wiring.parts
                if all(callable(getattr(part, name, None)) for name in names)}

    assert having("methods") == {id(part) for part in wiring.methods}
    assert having("config_changed") == {id(part) for part in wiring.config_listeners}
    assert having("status_reads") == {id(part) for part in wiring.status_on_disk}
    assert having("status_now") - having("status_reads") == {id(part) for part in wiring.status}
    listed = [*wiring.methods, *wiring.config_listeners, *wiring.status, *wiring.status_on_disk]
    assert {id(part) for part in listed} <= {id(part) for part in wiring.parts}
    assert len({id(part) for part in wiring.parts}) == len(wiring.parts)
