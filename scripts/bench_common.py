"""What every section of scripts/bench.py shares: small printing and percentile helpers, the
config writer, the daemon under test (the test harness's DaemonProcess from tests/harness.py
plus the figures the bench reads about it) and the run's temp root (Bench).

Imported by scripts/bench.py, which puts the repository root on sys.path first.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import bench_data

from minionsd.rpc.client import Client
from minionsd.storage.database import connect
from tests.harness import DaemonProcess

WARMUP_BUDGET_S = 15.0
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 20.0


# --- small utilities -----------------------------------------------------------------------

def pct(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(1, min(len(ordered), int(-(-p * len(ordered) // 100))))
    return ordered[rank - 1]


def ms(ns: float) -> float:
    return ns / 1e6


def fmt_ms(value: float) -> str:
    return f"{value:8.2f}"


def say(text: str = "") -> None:
    print(text, flush=True)


def progress(text: str) -> None:
    if sys.stderr.isatty():
        sys.stderr.write("\r" + text + " " * 10)
        sys.stderr.flush()


def end_progress() -> None:
    if sys.stderr.isatty():
        sys.stderr.write("\r" + " " * 78 + "\r")
        sys.stderr.flush()


def proc_status(pid: int) -> dict[str, str]:
    fields = {}
    with contextlib.suppress(OSError), open(f"/proc/{pid}/status") as handle:
        for line in handle:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return fields


def cpu_model() -> str:
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as handle:
        for line in handle:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(str(value))


def write_config(home: Path, config: dict[str, dict[str, Any]]) -> None:
    lines = []
    for section, values in config.items():
        if section == "agents":
            for agent, fields in values.items():
                lines.append(f"[agents.{agent}]")
                lines += [f"{k} = {toml_value(v)}" for k, v in fields.items()]
                lines.append("")
            continue
        lines.append(f"[{section}]")
        lines += [f"{k} = {toml_value(v)}" for k, v in values.items()]
        lines.append("")
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("\n".join(lines), encoding="utf-8")




# --- the daemon under test -----------------------------------------------------------------

class BenchDaemon(DaemonProcess):
    """The test harness's daemon in its own session (Ctrl-C reaches the bench only; it stops
    the daemon itself), optionally pinned to one CPU, plus what the bench reads about it."""

    def __init__(self, home: Path, pin_cpu: int | None, *, code: Path | None = None,
                 python: str | None = None) -> None:
        super().__init__(home, cpus=None if pin_cpu is None else {pin_cpu}, new_session=True)
        # Another checkout's daemon (scripts/bench.py --old): its sources and its venv.
        self.code = code
        self.python = python

    def spawn(self) -> subprocess.Popen[bytes]:
        if self.code is None:
            return super().spawn()
        self.home.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")  # noqa: SIM115 - owned by the process
        self.proc = subprocess.Popen(
            [self.python or sys.executable, "-m", "minionsd.daemon", "--home", str(self.home),
             "--log-format", "json"],
            stdout=log, stderr=log, env=self.env, cwd=self.code, start_new_session=True)
        log.close()
        return self.proc

    @property
    def db_path(self) -> Path:
        return self.home / "engine" / "state.db"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def client(self, timeout: float = 300) -> Client:
        return super().client(timeout)

    def cpu_seconds(self) -> float:
        """The daemon's user+system CPU time so far (all threads): robust on a noisy box."""
        user, system = self.cpu_split()
        return user + system

    def cpu_split(self) -> tuple[float, float]:
        """The daemon's (user, system) CPU time so far, all threads."""
        try:
            with open(f"/proc/{self.pid}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            tick = os.sysconf("SC_CLK_TCK")
            return int(fields[11]) / tick, int(fields[12]) / tick
        except (OSError, IndexError, ValueError):
            return float("nan"), float("nan")

    def memory(self) -> dict[str, str]:
        status = proc_status(self.pid)
        return {k: status.get(k, "?") for k in ("VmHWM", "VmRSS")}

    def stop(self, sig: int = signal.SIGTERM, timeout: float = STOP_TIMEOUT_S) -> int:
        """SIGTERM and say how long the exit took (the harness kills a daemon that ignores it
        and raises)."""
        if self.proc is None or self.proc.poll() is not None:
            return super().stop(sig, timeout)
        began = time.perf_counter()
        code = super().stop(sig, timeout)
        say(f"   (daemon {self.home.name}: SIGTERM -> exit {code} in "
            f"{time.perf_counter() - began:.2f} s)")
        return code


def readonly_connection(daemon: BenchDaemon) -> sqlite3.Connection:
    """The same kind of connection the daemon reads with (minionsd.db.connect, mode=ro)."""
    return connect(daemon.db_path, readonly=True)


class Bench:
    """One run: the temp root its daemons' homes live under, the vocabulary, the base time."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.root = Path(tempfile.mkdtemp(prefix="mb-", dir="/tmp"))
        self.daemons: list[BenchDaemon] = []
        self.vocab = bench_data.Vocabulary(args.seed)
        # Records are dated over the year before today (midnight UTC); a few expire later.
        self.base_time = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
        if args.pin:
            os.sched_setaffinity(0, {0})

    def new_daemon(self, name: str, config: dict[str, dict[str, Any]]) -> BenchDaemon:
        home = self.root / name
        write_config(home, config)
        daemon = BenchDaemon(home, 1 if self.args.pin else None)
        self.daemons.append(daemon)
        return daemon.start(START_TIMEOUT_S)

    def close(self) -> None:
        for daemon in self.daemons:
            with contextlib.suppress(Exception):
                daemon.stop()
        if self.args.keep:
            say(f"kept temp homes under {self.root}")
        else:
            shutil.rmtree(self.root, ignore_errors=True)

