"""scripts/bench.py --old DIR: every headline figure of the current code beside the same figure
of another checkout (DIR, with its own .venv), measured in one run, in one table.

Each code tree gets its own daemons (started with that tree's .venv python and sources) and
its own `minionsctl`; the client side, the data and the timing are this tree's, so only the
daemon and CLI differ. Sections alternate old/new so drift in the machine's load hits both.
Figures: bulk load (records/s and daemon CPU per record), `memory.search` p50/p99, start-up to
the first answered `status`, peak RSS, state.db size and where its bytes go, `memory.retrieve`
p50/p99 for cycled tasks and tasks never asked at N records and at 10,000 (the load section's
home), consolidation (regex path, batches of 50), change-to-searchable at the inbox threshold,
`minionsctl status` wall and CPU, and the mixed-client load.
"""

from __future__ import annotations

import argparse
import os
import resource
import sqlite3
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import bench_data
from bench_common import Bench, BenchDaemon, pct, say
from bench_consolidation import stage_and_land, wait_batch
from bench_load import run_load
from bench_records import load_records, wait_for_index

from minionsd.rpc.client import Client


def _python(code: Path) -> str:
    return str(code / ".venv" / "bin" / "python")


def new_daemon(bench: Bench, code: Path, name: str,
               config: dict[str, dict[str, Any]]) -> BenchDaemon:
    from bench_common import write_config

    home = bench.root / name
    write_config(home, config)
    daemon = BenchDaemon(home, None, code=code, python=_python(code))
    bench.daemons.append(daemon)
    return daemon.start(60)


def db_breakdown(db: Path) -> dict[str, float]:
    """MB per table and index of state.db (SQLite's dbstat), the FTS5 tables summed."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name").fetchall()
        text = conn.execute("SELECT sum(length(CAST(title AS BLOB)) + length(CAST(body AS BLOB))"
                            ") FROM memory_records").fetchone()[0] or 0
    finally:
        conn.close()
    parts: dict[str, float] = {}
    for name, size in rows:
        key = "fts index" if name.startswith("memory_fts") else name
        parts[key] = parts.get(key, 0.0) + size / 1e6
    parts["(title+body text)"] = text / 1e6
    return parts


def cli_cost(code: Path, home: Path, runs: int = 15) -> tuple[float, float]:
    """`minionsctl status` of that tree: (median wall ms, mean CPU ms) over `runs` calls."""
    command = [str(code / ".venv" / "bin" / "minionsctl"), "--home", str(home), "status"]
    walls = []
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for _ in range(runs):
        began = time.perf_counter()
        subprocess.run(command, stdout=subprocess.DEVNULL, check=True)
        walls.append((time.perf_counter() - began) * 1000)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) / runs * 1000
    return pct(walls, 50), cpu


def search_latency(daemon: BenchDaemon, queries: list[str]) -> tuple[float, float]:
    times = []
    with daemon.client() as client:
        for query in queries[:50]:
            client.call("memory.search", {"query": query})  # warm-up
        for query in queries[50:]:
            began = time.perf_counter()
            client.call("memory.search", {"query": query})
            times.append((time.perf_counter() - began) * 1000)
    return pct(times, 50), pct(times, 99)


def retrieval_latency(bench: Bench, daemon: BenchDaemon, label: str,
                      samples: int = 200) -> dict[str, float]:
    """memory.retrieve p50/p99 ms: 20 tasks cycled (after one warm-up round), then `samples`
    // 2 tasks never asked before (nothing about them cached)."""
    seed = bench.args.seed
    cycled = bench_data.tasks(bench.vocab, seed, 20)
    fresh = bench_data.tasks(bench.vocab, seed + 1000, max(20, samples // 2))

    def timed(client: Client, spec: tuple[dict[str, Any], str, str]) -> float:
        task, project, agent = spec
        began = time.perf_counter()
        client.call("memory.retrieve", {"task": task, "project": project, "agent": agent})
        return (time.perf_counter() - began) * 1000

    with daemon.client() as client:
        for spec in cycled:
            timed(client, spec)
        warm = [timed(client, cycled[i % len(cycled)]) for i in range(samples)]
        cold = [timed(client, spec) for spec in fresh]
    return {f"retrieve cycled p50 ms ({label})": pct(warm, 50),
            f"retrieve cycled p99 ms ({label})": pct(warm, 99),
            f"retrieve never asked p50 ms ({label})": pct(cold, 50),
            f"retrieve never asked p99 ms ({label})": pct(cold, 99)}


def startup_ms(daemon: BenchDaemon) -> float:
    """Stop the daemon, start it again on the same home, time until `status` answers."""
    daemon.stop()
    began = time.perf_counter()
    daemon.spawn()
    while True:
        try:
            with Client(daemon.socket, timeout=5) as client:
                client.call("status")
            return (time.perf_counter() - began) * 1000
        except (ConnectionError, OSError):
            if daemon.proc is not None and daemon.proc.poll() is not None:
                raise RuntimeError(f"daemon exited: {daemon.log()}") from None
            time.sleep(0.005)


def records_figures(bench: Bench, code: Path, tag: str, records: int,
                    queries: list[str]) -> dict[str, Any]:
    daemon = new_daemon(bench, code, f"r-{tag}", {"engine": {"auto_consolidate_memory": False}})
    cpu_before = daemon.cpu_seconds()
    seconds, errors, _messages, _batches = load_records(
        daemon, bench.vocab, bench.args.seed, 0, records, bench.base_time)
    cpu = daemon.cpu_seconds() - cpu_before
    wait_for_index(daemon)
    p50, p99 = search_latency(daemon, queries)
    figures: dict[str, Any] = {
        "bulk load, records/s": records / seconds,
        "bulk load, daemon CPU ms/record": cpu / records * 1000,
        "bulk load errors": errors,
        "memory.search p50 ms": p50, "memory.search p99 ms": p99,
    }
    figures |= retrieval_latency(bench, daemon, f"{records // 1000}k")
    rss = daemon.memory()["VmHWM"]
    figures["daemon peak RSS MB"] = int(rss.split()[0]) / 1024 if rss != "?" else float("nan")
    figures["start-up to first status ms"] = startup_ms(daemon)
    figures["minionsctl status wall ms"], figures["minionsctl status CPU ms"] = \
        cli_cost(code, daemon.home)
    daemon.stop()
    db = daemon.db_path
    figures["state.db MB"] = sum(p.stat().st_size for p in db.parent.glob("state.db*")) / 1e6
    figures["state.db parts MB"] = db_breakdown(db)
    return figures


AFTER_S = 3.0


def consolidation_figures(bench: Bench, code: Path, tag: str, notes: int) -> dict[str, Any]:
    agents = {a: {"name": a.title()} for a in bench_data.AGENTS[:5]}
    daemon = new_daemon(bench, code, f"c-{tag}", {
        "engine": {"auto_consolidate_memory": False, "consolidation_max_batch": 50,
                   "inbox_settle_ms": 0}, "agents": agents})
    day = datetime.now(UTC)
    for index in range(notes):
        name, text = bench_data.inbox_note(bench.vocab, bench.args.seed, index, day)
        stage_and_land(bench, daemon.home, name, text)
    done = 0
    began = time.perf_counter()
    cpu_before = daemon.cpu_seconds()
    with daemon.client(timeout=600) as client:
        while True:
            result = client.call("consolidation.run", {"force": True})
            if result["mode"] == "nothing":
                break
            done += result["notes"]
    elapsed = time.perf_counter() - began
    cpu = daemon.cpu_seconds() - cpu_before
    # The knowledge watcher syncs the new entries once the batches leave it half a second of
    # quiet: that CPU belongs to consolidation too.
    time.sleep(AFTER_S)
    cpu_after = daemon.cpu_seconds() - cpu_before
    daemon.stop()
    return {"consolidation notes/s (batches of 50)": done / elapsed,
            "consolidation daemon CPU ms/note": cpu / max(1, done) * 1000,
            f"  the same, with the {AFTER_S:.0f} s after": cpu_after / max(1, done) * 1000,
            "change-to-searchable p50 ms (threshold)": searchable_ms(bench, code, tag)}


def searchable_ms(bench: Bench, code: Path, tag: str, rounds: int = 5) -> float:
    """The threshold-th note lands (four already settled in the inbox) -> its batch archived
    and a word only it holds found by memory.search: p50 ms over `rounds` (as section 4b)."""
    daemon = new_daemon(bench, code, f"w-{tag}", {"engine": {"inbox_consolidate_threshold": 5}})
    with daemon.client() as client:
        settle_s = client.call("config.get", {"key": "engine.inbox_settle_ms"})["value"] / 1000
        day = datetime.now(UTC)
        index = 90_000
        values = []
        for round_no in range(rounds):
            token = f"changeprobe{tag}{round_no}q{bench.args.seed}"
            for k in range(5):
                extra = f"Change probe marker {token}." if k == 4 else ""
                name, text = bench_data.inbox_note(bench.vocab, bench.args.seed, index, day,
                                                   extra_line=extra)
                index += 1
                if k == 4:
                    time.sleep(settle_s + 0.6)
                landed = stage_and_land(bench, daemon.home, name, text)
            archived, searchable = wait_batch(daemon, client, name, token, landed, 30)
            if archived is not None and searchable is not None:
                values.append(max(archived, searchable) * 1000)
            while client.call("status")["inbox"]["pending"]:
                time.sleep(0.05)
    daemon.stop()
    return pct(values, 50) if values else float("nan")


def load_figures(bench: Bench, code: Path, tag: str, records: int, clients: int,
                 calls: int) -> dict[str, Any]:
    daemon = new_daemon(bench, code, f"l-{tag}", {})
    load_records(daemon, bench.vocab, bench.args.seed, 0, records, bench.base_time)
    wait_for_index(daemon)
    retrieval = ({} if records >= bench.args.records  # the records section has this size's
                 else retrieval_latency(bench, daemon, f"{records // 1000}k"))
    figures = run_load(str(daemon.socket), clients, calls, 4, bench.args.seed)
    daemon.stop()
    methods = figures["methods"]
    return retrieval | {f"{clients}-client load calls/s": figures["calls_per_s"],
            f"{clients}-client load p99 ms (all)": methods["all"]["p99"],
            f"{clients}-client load status p99 ms": methods["status"]["p99"],
            f"{clients}-client load memory.add p50 ms": methods["memory.add"]["p50"]}


def run_compare(bench: Bench, old: Path, new: Path) -> None:
    args = bench.args
    queries = bench_data.search_queries(bench.vocab, args.seed, 50 + args.queries)
    trees = {"old": old, "new": new}
    # Like scripts/run: this tree's sources byte-compiled (start-up and minionsctl figures
    # depend on it where PYTHONDONTWRITEBYTECODE is set); the old tree is measured as it is.
    from bench_cli import compile_tree, has_bytecode

    compile_tree(new)
    for tag, code in trees.items():
        say(f"   {tag} code {'with' if has_bytecode(code) else 'WITHOUT'} bytecode caches")
    results: dict[str, dict[str, Any]] = {"old": {}, "new": {}}
    sections = [
        ("records", lambda code, tag: records_figures(bench, code, tag, args.records, queries)),
        ("consolidation", lambda code, tag: consolidation_figures(bench, code, tag, args.notes)),
    ]
    if args.load_calls:
        sections.append(("load", lambda code, tag: load_figures(
            bench, code, tag, min(args.records, 10_000), args.load_clients, args.load_calls)))
    for number, (name, section) in enumerate(sections):
        order = ("old", "new") if number % 2 == 0 else ("new", "old")
        for tag in order:
            say(f"   [{name}: {tag} code, load average {os.getloadavg()[0]:.2f}]")
            results[tag] |= section(trees[tag], tag)
    print_table(results, args)


def print_table(results: dict[str, dict[str, Any]], args: argparse.Namespace) -> None:
    say(f"\n== figures at {args.records:,} records, {args.notes} notes "
        f"(load average now {' '.join(f'{x:.2f}' for x in os.getloadavg())})")
    say(f"   {'figure':42} {'old':>12} {'new':>12} {'new/old':>8}")
    for key, old_value in results["old"].items():
        new_value = results["new"].get(key)
        if isinstance(old_value, dict):
            continue
        ratio = new_value / old_value if old_value else float("nan")
        say(f"   {key:42} {old_value:12,.2f} {new_value:12,.2f} {ratio:8.2f}")
    for tag in ("old", "new"):
        parts = results[tag].get("state.db parts MB", {})
        biggest = sorted(parts.items(), key=lambda kv: -kv[1])[:8]
        say(f"   state.db by table ({tag}): "
            + ", ".join(f"{name} {size:.1f}" for name, size in biggest))
