"""scripts/bench.py --only startup: daemon start-up to the first answered `status`, and where
the time goes.

1. --cli-runs plain starts of this tree's daemon on a copy of a loaded home (--cli-home, or
   --records records loaded first): process start -> first `status` answered, median and
   each run, with the daemon's CPU time up to that answer (/proc/<pid>/stat); each start
   alternates with one on an empty home, so what the records cost is the difference of two
   figures taken under the same load. With --old DIR, that checkout's daemon (its own .venv
   python and sources) starts on its own copy of the same home, alternating too.
2. One start with timestamps: the daemon runs in a child of this script that wraps the
   start-up steps (config, home, database and migrations, the app, each component's start,
   the socket) and stamps when each began and ended, relative to process start; imports are
   the time before `main` runs. It also stamps what runs after the first answer (work moved
   off the start-up path), until the daemon is stopped. Nothing in the daemon is changed for
   this: the wrappers live in this file.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
_CHILD = "--startup-child"


def first_status_ms(socket: Path, began: float, proc: subprocess.Popen[bytes]) -> float:
    from minionsd.rpc.client import Client

    while True:
        try:
            with Client(socket, timeout=5) as client:
                client.call("status")
            return (time.perf_counter() - began) * 1000
        except (ConnectionError, OSError):
            if proc.poll() is not None:
                raise RuntimeError(f"daemon exited with {proc.returncode}") from None
            time.sleep(0.002)


def cpu_ms(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK") * 1000


def start_once(home: Path, command: list[str], settle_s: float = 0.0,
               code: Path = REPO) -> tuple[float, float]:
    """(ms to the first status, daemon CPU ms by then) for one start; then SIGTERM."""
    log = open(home / "bench-daemon.log", "ab")  # noqa: SIM115 - closed below
    began = time.perf_counter()
    proc = subprocess.Popen(command, stdout=log, stderr=log, cwd=code,
                            start_new_session=True)
    try:
        wall = first_status_ms(home / "engine" / "minionsd.sock", began, proc)
        cpu = cpu_ms(proc.pid)
        time.sleep(settle_s)
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()
    return wall, cpu


def _plain(home: Path, code: Path = REPO) -> list[str]:
    python = sys.executable if code == REPO else str(code / ".venv" / "bin" / "python")
    return [python, "-m", "minionsd.daemon", "--home", str(home), "--log-format", "json"]


def run_startup(bench: Any) -> None:
    from bench_cli import compile_tree, has_bytecode, prepare_home
    from bench_common import pct, say, write_config

    args = bench.args
    compile_tree(REPO)  # as scripts/run does
    daemon, total = prepare_home(bench)
    daemon.stop()
    home = daemon.home
    empty = bench.root / "empty"
    write_config(empty, {"engine": {"auto_consolidate_memory": False}})
    homes = {f"{total:,} records": (home, REPO), "empty home": (empty, REPO)}
    if args.old is not None:
        old = args.old.resolve()
        old_home = bench.root / "old-home"
        shutil.copytree(home, old_home, symlinks=True)
        homes[f"old code, {total:,}"] = (old_home, old)
    figures: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in homes}
    for where, code in homes.values():  # lay the empty home out; warm the page cache
        start_once(where, _plain(where, code), code=code)
    for _ in range(args.cli_runs):
        for name, (where, code) in homes.items():
            wall, cpu = start_once(where, _plain(where, code), code=code)
            figures[name][0].append(wall)
            figures[name][1].append(cpu)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    if args.old is not None:
        say(f"   old code {'with' if has_bytecode(args.old) else 'WITHOUT'} bytecode caches")
    say(f"\n== start-up to the first answered status ({args.cli_runs} starts each, "
        f"alternating; load average {load})")
    for name, (walls, cpus) in figures.items():
        say(f"   {name:20} median {pct(walls, 50):5.0f} ms (min {min(walls):4.0f}, max "
            f"{max(walls):5.0f}); daemon CPU by then median {pct(cpus, 50):4.0f} ms")
    timeline = home / "startup-timeline.json"
    traced = [sys.executable, str(Path(__file__).resolve()), _CHILD, str(timeline),
              "--home", str(home), "--log-format", "json"]
    wall, _cpu = start_once(home, traced, settle_s=3.0)
    stamps = json.loads(timeline.read_text())
    say(f"   one start with timestamps ({wall:.0f} ms to the first status; ms since process "
        "start; status #1 is the ready summary, #2 the first client's; [after] = began after "
        "that answer):")
    first = stamps.get("status #2", [None, None])[1]
    for name, (start, end) in sorted(stamps.items(), key=lambda kv: kv[1][0]):
        after = " [after]" if first is not None and start >= first else ""
        say(f"   {start:8.1f} {end:8.1f} {end - start:8.1f}  {name}{after}")


# --- the traced child ----------------------------------------------------------------------

def _child(out: Path, argv: list[str]) -> int:
    began = time.time()
    # The interpreter's own start, before this line ran, counts too: from the process's start.
    with open("/proc/self/stat") as handle:
        ticks = int(handle.read().rsplit(")", 1)[1].split()[19])
    with open("/proc/uptime") as handle:
        uptime = float(handle.read().split()[0])
    origin = began - (uptime - ticks / os.sysconf("SC_CLK_TCK"))
    stamps: dict[str, list[float]] = {}

    def ms() -> float:
        return (time.time() - origin) * 1000

    def save() -> None:
        out.write_text(json.dumps(stamps))

    stamps["interpreter start"] = [0.0, (began - origin) * 1000]
    at = ms()
    sys.path.insert(0, str(REPO))
    import minionsd.daemon as daemon_mod

    stamps["imports (minionsd.daemon)"] = [at, ms()]

    def timed(owner: Any, attr: str, label: str) -> None:
        original = getattr(owner, attr)
        if asyncio_iscoroutinefunction(original):
            async def wrapper_async(*a: Any, **k: Any) -> Any:
                start = ms()
                try:
                    return await original(*a, **k)
                finally:
                    stamps.setdefault(label, [start, ms()])
            setattr(owner, attr, wrapper_async)
            return

        def wrapper(*a: Any, **k: Any) -> Any:
            start = ms()
            try:
                return original(*a, **k)
            finally:
                stamps.setdefault(label, [start, ms()])
        setattr(owner, attr, wrapper)

    from asyncio import iscoroutinefunction as asyncio_iscoroutinefunction

    from minionsd.memory.consolidate.pipeline import Pipeline
    from minionsd.service import consolidation

    timed(daemon_mod.config_mod, "load", "config load")
    timed(daemon_mod.Home, "ensure", "home layout")
    timed(daemon_mod.PidFile, "acquire", "pid lock")
    timed(daemon_mod.Database, "__init__", "database open (migrations)")
    timed(daemon_mod.App, "__init__", "app")
    timed(consolidation.ConsolidationService, "scan_report", "inbox scan (consolidation)")
    timed(Pipeline, "recover", "journal recovery (consolidation)")
    original_build = daemon_mod.build_components

    def build(*a: Any, **k: Any) -> Any:
        start = ms()
        wiring = original_build(*a, **k)
        stamps["build components"] = [start, ms()]
        for component in wiring.parts:
            name = type(component).__name__
            timed(component, "start", f"start {name}")
            for extra in ("after_ready", "warm"):
                if hasattr(component, extra):
                    timed(component, extra, f"{extra} {name}")
        return wiring

    daemon_mod.build_components = build
    timed(daemon_mod.RpcServer, "start", "socket listening")
    original_status = daemon_mod.Daemon.status

    async def status(self: Any) -> dict[str, Any]:
        # The first call is the daemon's own (systemd's ready summary), the next a client's.
        start = ms()
        try:
            return await original_status(self)
        finally:
            calls = sum(1 for name in stamps if name.startswith("status #"))
            if calls < 3:
                stamps[f"status #{calls + 1}"] = [start, ms()]
            save()

    daemon_mod.Daemon.status = status  # type: ignore[method-assign]
    try:
        return daemon_mod.main(argv)
    finally:
        save()


if __name__ == "__main__" and len(sys.argv) > 2 and sys.argv[1] == _CHILD:
    sys.exit(_child(Path(sys.argv[2]), sys.argv[3:]))
