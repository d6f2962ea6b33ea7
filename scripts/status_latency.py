"""How long `status` takes on a real daemon: idle, and while clients keep it busy retrieving.

    .venv/bin/python scripts/status_latency.py                 # 10,000 records, 64 clients
    .venv/bin/python scripts/status_latency.py --records 100000 --clients 32

Loads the records through `memory.add` (scripts/bench.py's loader and data), times `status`
calls on an idle daemon, then again while a separate process runs `--clients` connections that
each loop `memory.retrieve`; `config.get` under the same load shows what any call costs there.
Prints figures and asserts nothing; the machine's other load moves them, so compare runs made
one after the other.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

import bench_data  # noqa: E402
from bench_common import BenchDaemon, write_config  # noqa: E402
from bench_records import load_records  # noqa: E402

from minionsd.client import Client  # noqa: E402

LOADER = """
import json, sys, threading
from minionsd.client import Client

socket, clients, tasks = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])

def loop(n):
    with Client(socket, timeout=300) as client:
        i = 0
        while True:
            client.call("memory.retrieve", {"task": tasks[(n + i) % len(tasks)]})
            i += 1

threads = [threading.Thread(target=loop, args=(n,), daemon=True) for n in range(clients)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
"""


def timed(client: Client, method: str, params: dict, count: int) -> list[float]:
    samples = []
    for _ in range(count):
        began = time.perf_counter()
        client.call(method, params)
        samples.append((time.perf_counter() - began) * 1000)
    return samples


def describe(label: str, samples: list[float]) -> str:
    ordered = sorted(samples)
    return (f"{label}: p50 {statistics.median(ordered):.1f} ms, "
            f"p90 {ordered[int(0.9 * (len(ordered) - 1))]:.1f} ms, max {ordered[-1]:.1f} ms "
            f"({len(ordered)} calls)")


def run(args: argparse.Namespace, code: Path | None, tag: str) -> None:
    root = Path(tempfile.mkdtemp(prefix="msl-", dir="/tmp"))
    home = root / "home"
    write_config(home, {})
    python = str(code / ".venv" / "bin" / "python") if code is not None else None
    daemon = BenchDaemon(home, None, code=code, python=python).start()
    loader = None
    try:
        vocab = bench_data.Vocabulary(args.seed)
        base = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
        seconds, errors, _messages, _batches = load_records(
            daemon, vocab, args.seed, 0, args.records, base)
        print(f"[{tag} code] loaded {args.records:,} records in {seconds:.1f} s "
              f"({errors} errors)")
        tasks = [task for task, _project, _agent in bench_data.tasks(vocab, args.seed, 40)]
        with Client(daemon.socket, timeout=120) as client:
            timed(client, "status", {}, 5)
            print(describe("status, idle", timed(client, "status", {}, args.calls)))
            loader = subprocess.Popen(
                [sys.executable, "-c", LOADER, str(daemon.socket), str(args.clients),
                 json.dumps(tasks)], cwd=REPO)
            # Let every client connect (the loader's start-up takes a while on a busy machine)
            # and the daemon's caches settle under the load.
            time.sleep(3)
            timed(client, "memory.retrieve", {"task": tasks[0]}, 20)
            cpu = daemon.cpu_seconds()
            busy = timed(client, "status", {}, args.calls)
            floor = timed(client, "config.get", {"key": "engine.inbox_settle_ms"}, args.calls)
            cpu = daemon.cpu_seconds() - cpu
            print(describe(f"status, {args.clients} clients retrieving", busy))
            print(describe(f"config.get, {args.clients} clients retrieving", floor))
            print(f"daemon CPU meanwhile {cpu:.1f} s (load average "
                  f"{' '.join(f'{x:.2f}' for x in os.getloadavg())})")
    finally:
        if loader is not None:
            loader.terminate()
            loader.wait(30)
        daemon.stop()
        shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--old", help="run the same on this checkout (its .venv) afterwards")
    args = parser.parse_args(argv)
    run(args, None, "this")
    if args.old:
        run(args, Path(args.old).resolve(), "old")
    return 0


if __name__ == "__main__":
    sys.exit(main())
