"""The mixed-client load: many concurrent clients adding, searching, retrieving, submitting
notes and asking `status`, each on its own connection, as a team of agents does after a CI run.

    .venv/bin/python scripts/bench_load.py                       # 64 clients, 32,000 calls
    .venv/bin/python scripts/bench_load.py --clients 16 --calls 4000 --records 2000

Starts a daemon on a temp home (auto-consolidation on, as configured by default), loads
--records records, then runs --clients clients spread over --procs worker processes (so the
clients' own Python does not share one interpreter lock), every client on its own connection,
each call drawn from the mix below. Prints calls/s and per-method p50/p99/max, and returns the
figures as a dict for scripts/bench.py. Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_data  # noqa: E402
from bench_common import Bench, pct, say  # noqa: E402

# (method, share of the calls)
MIX = (("memory.add", 0.30), ("memory.search", 0.25), ("memory.retrieve", 0.20),
       ("inbox.submit", 0.10), ("status", 0.15))


def _worker(socket_path: str, clients: int, calls: int, seed: int, out: Any,
            mix: tuple[tuple[str, float], ...] = MIX) -> None:
    from minionsd.rpc.client import Client

    vocab = bench_data.Vocabulary(seed)
    base = datetime.now(UTC).replace(microsecond=0)
    tasks = [task for task, _project, _agent in bench_data.tasks(vocab, seed, 40)]
    queries = bench_data.search_queries(vocab, seed, 200)
    samples: list[tuple[str, float, bool]] = []
    backlog: list[int] = []  # status.inbox.pending as the clients saw it
    lock = threading.Lock()
    methods = [m for m, _ in mix]
    weights = [w for _, w in mix]

    def client_loop(n: int) -> None:
        rng = random.Random(f"{seed}-{os.getpid()}-{n}")
        mine: list[tuple[str, float, bool]] = []
        with Client(socket_path, timeout=300) as client:
            for i in range(calls):
                method = rng.choices(methods, weights)[0]
                if method == "memory.add":
                    params = bench_data.record_params(vocab, seed, rng.randrange(10**9), base)
                elif method == "memory.search":
                    params = {"query": rng.choice(queries)}
                elif method == "memory.retrieve":
                    params = {"task": rng.choice(tasks)}
                elif method == "inbox.submit":
                    params = {"author": "loadbot", "title": f"load note {n}-{i}",
                              "body": f"Client {n} call {i}: " + rng.choice(queries)}
                else:
                    params = {}
                began = time.perf_counter()
                ok = True
                try:
                    reply = client.call(method, params)
                except Exception:  # an error reply counts as a call; it is reported
                    ok = False
                mine.append((method, time.perf_counter() - began, ok))
                if method == "status" and ok:  # how far consolidation is behind
                    backlog.append(reply["inbox"]["pending"])
        with lock:
            samples.extend(mine)

    threads = [threading.Thread(target=client_loop, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    out.put((samples, backlog))


def run_load(socket_path: str, clients: int, calls_total: int, procs: int,
             seed: int, mix: tuple[tuple[str, float], ...] = MIX) -> dict[str, Any]:
    per_client = max(1, calls_total // clients)
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    spread = [clients // procs + (1 if i < clients % procs else 0) for i in range(procs)]
    workers = [ctx.Process(target=_worker, args=(socket_path, n, per_client, seed, queue, mix))
               for n in spread if n]
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    for worker in workers:
        worker.start()
    samples: list[tuple[str, float, bool]] = []
    backlog: list[int] = []
    for _ in workers:
        got, pending = queue.get()
        samples.extend(got)
        backlog.extend(pending)
    elapsed = time.perf_counter() - began
    for worker in workers:
        worker.join()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # the joined client processes
    clients_cpu = (after.ru_utime - children.ru_utime) + (after.ru_stime - children.ru_stime)
    figures: dict[str, Any] = {"calls": len(samples), "seconds": elapsed,
                               "clients_cpu_s": clients_cpu,
                               "clients_cpu_ms_per_call": clients_cpu / len(samples) * 1000,
                               "calls_per_s": len(samples) / elapsed, "methods": {},
                               "inbox_pending_max": max(backlog, default=0),
                               "inbox_pending_p50": pct(backlog, 50) if backlog else 0}
    for method, _ in (*mix, ("all", 0)):
        times = [t * 1000 for m, t, _ in samples if method in (m, "all")]
        errors = sum(1 for m, _, ok in samples if method in (m, "all") and not ok)
        if times:
            figures["methods"][method] = {"n": len(times), "p50": pct(times, 50),
                                          "p99": pct(times, 99), "max": max(times),
                                          "errors": errors}
    return figures


def print_load(figures: dict[str, Any], clients: int) -> None:
    say(f"   {figures['calls']:,} calls from {clients} clients in {figures['seconds']:.1f} s = "
        f"{figures['calls_per_s']:,.0f} calls/s (load average {os.getloadavg()[0]:.2f})")
    say(f"   {'method':18} {'calls':>7} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'errors':>6}")
    for method, row in figures["methods"].items():
        say(f"   {method:18} {row['n']:7,} {row['p50']:8.1f} {row['p99']:8.1f} "
            f"{row['max']:8.1f} {row['errors']:6}")
    say(f"   inbox notes pending as status saw them: p50 {figures['inbox_pending_p50']}, "
        f"max {figures['inbox_pending_max']}")
    if "daemon_cpu_ms_per_call" in figures:
        say(f"   daemon CPU {figures['daemon_cpu_s']:.1f} s (system "
            f"{figures.get('daemon_system_cpu_s', float('nan')):.1f} s) = "
            f"{figures['daemon_cpu_ms_per_call']:.2f} ms per call; the clients' CPU "
            f"{figures['clients_cpu_s']:.1f} s = {figures['clients_cpu_ms_per_call']:.2f} ms "
            "per call")


def run_load_section(bench: Bench, records: int, clients: int, calls: int,
                     procs: int) -> dict[str, Any]:
    from bench_records import load_records

    daemon = bench.new_daemon("load", {})
    say(f"\n== 6. load: {clients} concurrent clients, {calls:,} calls "
        f"({', '.join(f'{m} {w:.0%}' for m, w in MIX)}) over {records:,} records")
    load_records(daemon, bench.vocab, bench.args.seed, 0, records, bench.base_time)
    figures = measured_load(daemon, clients, calls, procs, bench.args.seed)
    print_load(figures, clients)
    daemon.stop()
    return figures


def measured_load(daemon: Any, clients: int, calls: int, procs: int, seed: int,
                  profile: str | None = None,
                  mix: tuple[tuple[str, float], ...] = MIX) -> dict[str, Any]:
    """run_load plus the daemon's CPU time over the run (all its threads: robust on a busy
    machine) and, with `profile`, a py-spy record of the daemon (--gil --idle) into that file."""
    spy = None
    if profile:
        spy = subprocess.Popen(
            [str(Path(sys.executable).with_name("py-spy")), "record", "--pid", str(daemon.pid),
             "--format", "raw" if profile.endswith(".txt") else "speedscope",
             "--output", profile, "--rate", "100", "--threads", "--nonblocking"]
            + ([] if os.environ.get("BENCH_LOAD_BUSY") else ["--idle"])
            + (["--gil"] if os.environ.get("BENCH_LOAD_GIL") else []),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.0)
    user_before, system_before = daemon.cpu_split()
    figures = run_load(str(daemon.socket), clients, calls, procs, seed, mix)
    user, system = daemon.cpu_split()
    system -= system_before
    cpu = user - user_before + system
    figures["daemon_system_cpu_s"] = system
    if spy is not None:
        spy.send_signal(signal.SIGINT)
        spy.wait(60)
    figures["daemon_cpu_s"] = cpu
    figures["daemon_cpu_ms_per_call"] = cpu / figures["calls"] * 1000
    return figures


def parse_mix(text: str | None) -> tuple[tuple[str, float], ...]:
    if not text:
        return MIX
    known = {m for m, _ in MIX} | {"config.get"}  # config.get: what any call waits for
    mix = []
    for part in text.split(","):
        method, _, weight = part.partition("=")
        if method not in known:
            raise SystemExit(f"--mix: unknown method {method!r} (one of {sorted(known)})")
        mix.append((method, float(weight or 1)))
    return tuple(mix)


def build_template(root: Path, code: Path | None, python: str | None, records: int,
                   seed: int) -> Path:
    """A home holding `records` records loaded by `code`'s daemon (stopped again), kept under
    `root` and reused by later runs: loading 10,000 records takes a while on a busy machine."""
    from bench_common import BenchDaemon, write_config
    from bench_records import load_records

    tag = "old" if code is not None else "new"
    template = root / f"home-{tag}-{records}-{seed}"
    if (template / "engine" / "state.db").exists():
        return template
    building = root / f"building-{tag}"
    shutil.rmtree(building, ignore_errors=True)
    write_config(building, {})
    daemon = BenchDaemon(building, None, code=code, python=python).start(60)
    vocab = bench_data.Vocabulary(seed)
    base = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    try:
        seconds, errors, _messages, _batches = load_records(daemon, vocab, seed, 0, records,
                                                            base)
        say(f"   ({tag} template: {records:,} records in {seconds:.1f} s, {errors} errors)")
    finally:
        daemon.stop()
    building.rename(template)
    return template


def templated_run(root: Path, template: Path, code: Path | None, python: str | None,
                  args: argparse.Namespace, profile: str | None) -> dict[str, Any]:
    from bench_common import BenchDaemon

    home = root / "run"
    shutil.rmtree(home, ignore_errors=True)
    shutil.copytree(template, home, ignore=shutil.ignore_patterns("*.sock", "*.pid"))
    daemon = BenchDaemon(home, None, code=code, python=python).start(60)
    try:
        return measured_load(daemon, args.clients, args.calls, args.procs, args.seed, profile,
                             parse_mix(args.mix))
    finally:
        daemon.stop()
        shutil.rmtree(home, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--calls", type=int, default=32_000)
    parser.add_argument("--procs", type=int, default=4)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--templates", help="keep the loaded homes in this directory and "
                        "copy them for each run (built on first use)")
    parser.add_argument("--old", help="also run the load on this checkout (its .venv), "
                        "alternating with this code; needs --templates")
    parser.add_argument("--rounds", type=int, default=1, help="runs of each code (with --old)")
    parser.add_argument("--mix", help="another mix, e.g. 'status=1' or 'memory.add=1,"
                        "status=1' (with --templates): CPU per call of one method alone; "
                        "config.get (which does nothing) shows the event loop's floor")
    parser.add_argument("--profile", help="py-spy record the daemon into this file "
                        "(.txt: collapsed stacks; else speedscope); BENCH_LOAD_GIL=1 adds --gil")
    args = parser.parse_args(argv)
    if args.templates:
        return templated_main(args)
    bench = Bench(argparse.Namespace(seed=args.seed, pin=False, keep=False))
    try:
        figures = run_load_section(bench, args.records, args.clients, args.calls, args.procs)
    finally:
        bench.close()
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1), encoding="utf-8")
    return 0


def templated_main(args: argparse.Namespace) -> int:
    root = Path(args.templates)
    root.mkdir(parents=True, exist_ok=True)
    codes: dict[str, tuple[Path | None, str | None]] = {"new": (None, None)}
    if args.old:
        old = Path(args.old).resolve()
        codes["old"] = (old, str(old / ".venv" / "bin" / "python"))
    templates = {tag: build_template(root, code, python, args.records, args.seed)
                 for tag, (code, python) in codes.items()}
    results: dict[str, list[dict[str, Any]]] = {tag: [] for tag in codes}
    say(f"\n== load: {args.clients} concurrent clients, {args.calls:,} calls "
        f"({', '.join(f'{m} {w:.0%}' for m, w in parse_mix(args.mix))}) over "
        f"{args.records:,} records")
    for number in range(args.rounds):
        order = list(codes) if number % 2 == 0 else list(reversed(codes))
        for tag in order:
            code, python = codes[tag]
            say(f"   [{tag} code, round {number + 1}, load average {os.getloadavg()[0]:.2f}]")
            figures = templated_run(root, templates[tag], code, python, args,
                                    args.profile if tag == "new" and number == 0 else None)
            print_load(figures, args.clients)
            results[tag].append(figures)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
