"""No ordinary path drops or hides a note: duplicate names, stdin bodies, quarantine, loose
front matter, concurrent knowledge authoring and the pruning of consolidation leftovers,
all through the real daemon, its socket, its files and the CLI."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from minionsd.client import Client, RpcError
from minionsd.markdown import parse_note
from tests.conftest import REPO, wait_for

T0 = "2030-01-01T00:00:00.000Z"


def _quiet_config(home: Path, extra: str = "") -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        "[engine]\ninbox_settle_ms = 0\nauto_consolidate_memory = false\n" + extra)


@pytest.fixture
def quiet(make_daemon, short_home):
    _quiet_config(short_home)
    return make_daemon()


@pytest.fixture
def clocked(make_daemon, short_home):
    _quiet_config(short_home)
    clock = short_home.parent / "clock.txt"
    clock.write_text(T0)
    daemon = make_daemon(env={"MINIONS_TEST_CLOCK_FILE": str(clock)})
    daemon.clock = clock
    return daemon


def ctl(home: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "minionsd.cli", "--home", str(home), *args],
                          input=stdin, capture_output=True, text=True, cwd=REPO, timeout=60)


# --- 9. concurrent knowledge.create ------------------------------------------------------------

def test_concurrent_knowledge_create_with_one_title_keeps_every_body(quiet):
    d = quiet
    rounds, width = 6, 6
    results: dict[int, dict] = {}
    errors: list[BaseException] = []

    def create(n: int, barrier: threading.Barrier) -> None:
        try:
            with Client(d.socket, timeout=60) as client:
                barrier.wait()
                results[n] = client.call("knowledge.create", {
                    "category": "conventions", "title": "Shared title",
                    "body": f"Body number {n} with its own words.", "author": "ripley"})
        except BaseException as exc:  # reported below with the call number
            errors.append(exc)

    for r in range(rounds):
        barrier = threading.Barrier(width)
        threads = [threading.Thread(target=create, args=(r * width + i, barrier))
                   for i in range(width)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == []
    assert len(results) == rounds * width
    paths = [r["path"] for r in results.values()]
    assert len(set(paths)) == len(paths)
    for n, result in results.items():
        text = (d.home / result["path"]).read_text()
        assert f"Body number {n} with" in text
        assert text.count("Body number") == 1
        record = d.call("memory.get", id=result["record_id"])
        assert f"Body number {n} with" in record["body"]
    leftovers = [p.name for p in (d.home / "knowledge" / "conventions").iterdir()
                 if ".new." in p.name or ".tmp." in p.name]
    assert leftovers == []
