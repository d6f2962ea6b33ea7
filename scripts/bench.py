"""Benchmark a real minionsd daemon over its Unix socket. Prints figures; asserts nothing.

    .venv/bin/python scripts/bench.py                   # full run: 100k records (~10 min)
    .venv/bin/python scripts/bench.py --records 10000 --queries 300   # a shorter run
    .venv/bin/python scripts/bench.py --quick --mcp --gateway   # every section, tiny
    .venv/bin/python scripts/bench.py --only load --records 10000   # section 1 and RSS only
    .venv/bin/python scripts/bench.py --only search     # load + memory.search + RSS
    .venv/bin/python scripts/bench.py --only retrieval --gateway   # + the same over HTTP
    .venv/bin/python scripts/bench.py --only consolidation
    .venv/bin/python scripts/bench.py --only retrieval  # memory.retrieve / prompt.assemble
    .venv/bin/python scripts/bench.py --only retrieval --mcp   # + memory_context over MCP
    .venv/bin/python scripts/bench.py --only web        # the web view's pages at N records
    .venv/bin/python scripts/bench.py --only web --web-home /tmp/mb-x/w   # a kept home again
    .venv/bin/python scripts/bench.py --only mcp-start  # minionsctl mcp: start -> initialize
    .venv/bin/python scripts/bench.py --old /tmp/old    # one table: this code beside /tmp/old
    .venv/bin/python scripts/bench.py --only cli --old /tmp/old --cli-home DIR  # minionsctl
    .venv/bin/python scripts/bench.py --only startup --cli-home DIR   # start-up, profiled
    .venv/bin/python scripts/bench.py --only heavy-note [--old /tmp/old]  # 1 MB YAML note
    .venv/bin/python scripts/bench.py --only history    # a batch's move into a 10 MB history

Sections:
1. load      N synthetic engineering notes through `memory.add`, pipelined as JSON-RPC batches
2. search    `memory.search` over the socket vs `records.search()` in-process on a read-only
             connection to the same database file (the same SQL), interleaved query by query
3. rss       the daemon's peak RSS (VmHWM)
4. consolidation  (a) regex-path throughput on 1,000 inbox notes, forced batches of 50;
             (b) watch latency: 5th note lands -> archived and searchable
5. retrieval `memory.retrieve` / `prompt.assemble` at 10k and N records vs the bare FTS5
             naive-OR candidate query for the same terms: 20 tasks cycled (what the daemon
             caches about them is warm after the first round), then tasks never asked before
             (cold: nothing about them cached); with --mcp also `memory_context` through
             `minionsctl mcp` (the mcp SDK's client, one stdio session) beside the same
             `prompt.assemble` on the raw socket, interleaved call by call
6. mcp-start `minionsctl mcp` from process start to its `initialize` answer (what decides
             whether a headless agent's first turn has the memory tools), with a daemon up
7. web       the web view's pages (bench_web.py) through `minionsctl serve` at N records:
             median and p95 per page for a signed-in client

After each load the script waits (up to 120 s) until the daemon's FTS5 upkeep has merged the
index segments the load left, as it would have long before a search in a long-running daemon,
and prints how long that took.

Every daemon runs on a temp home under /tmp (short socket path) and is stopped with SIGTERM
at the end, also on Ctrl-C. Slow sections are bounded by time budgets (--search-budget-s,
--retrieval-budget-s, a 15 s warm-up cap); when a budget cuts a section short the output says
how many samples the figures are based on.
The data are deterministic for a --seed (scripts/bench_data.py).
Method (DEPENDENCY-NOTES §9): client and daemon are separate processes; percentiles come from
perf_counter_ns around each complete request after a warm-up; one trial per run (run the
script several times, or use --trials, and compare medians); --pin pins the daemon to CPU 1
and this process to CPU 0.

--quick runs every section at a tiny size (200 records, a few samples, one watch round): the
test suite runs it with --mcp --gateway as a smoke test (tests/integration/test_bench_smoke.py).
Its figures say nothing about performance; options given with it override its sizes.

With --gateway, section 5 also times both methods through the HTTP gateway's /rpc and
memory_context through its /mcp beside the socket, interleaved, and prints the gateway's RSS
(bench_gateway.py).

The sections live beside this entry point: bench_records.py (1-3), bench_consolidation.py (4),
bench_retrieval.py (5), bench_common.py (the daemon, which is tests/harness.py's DaemonProcess,
and helpers), bench_data.py (the synthetic data); db_space.py (where a state.db's bytes go,
printed after the load) and bench_search.py (memory.search in-process on a kept state.db, this
code beside another checkout, alternating) also run on their own.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_common import Bench, cpu_model, end_progress, say  # noqa: E402
from bench_consolidation import run_consolidation_throughput, run_watch_latency  # noqa: E402
from bench_records import run_records  # noqa: E402
from bench_web import run_web  # noqa: E402

# --quick: the sizes of a smoke run (explicit options still win).
QUICK = {"records": 200, "queries": 20, "retrieval_samples": 10, "notes": 20,
         "watch_rounds": 1, "burst_rounds": 1, "web_samples": 3}


MCP_START_RUNS = 20
INITIALIZE = (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":'
              b'"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}\n')


def run_mcp_start(bench: Bench, runs: int = MCP_START_RUNS) -> None:
    """Process start (Popen) -> the `initialize` answer's line read, for `minionsctl mcp` as an
    agent starts it (the console script beside this Python, else `-m minionsd.cli`)."""
    daemon = bench.new_daemon("mcp-start", {})
    script = Path(sys.executable).parent / "minionsctl"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "minionsd.cli"]
    command += ["--home", str(daemon.home), "mcp", "--agent", "bench", "--project", "bench"]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    times = []
    for _ in range(runs):
        started = time.perf_counter_ns()
        proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, env=env, cwd=REPO)
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(INITIALIZE)
        proc.stdin.flush()
        reply = json.loads(proc.stdout.readline())
        times.append((time.perf_counter_ns() - started) / 1e6)
        proc.stdin.close()
        proc.wait(30)
        proc.stdout.close()
        assert reply["result"]["serverInfo"]["title"] == "minionsd memory", reply
    times.sort()
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    say(f"\n== 6. minionsctl mcp: process start -> initialize answered ({runs} starts, "
        f"{' '.join(command[:1])}; load average {load})")
    say(f"   p50 {times[len(times) // 2]:.0f} ms, p90 {times[int(len(times) * 0.9)]:.0f} ms, "
        f"max {times[-1]:.0f} ms (target: 300 ms on an idle machine)")


# --- main -------------------------------------------------------------------------------------

def print_facts(args: argparse.Namespace) -> None:
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "?"
    load = os.getloadavg() if hasattr(os, "getloadavg") else ("?",) * 3
    say("== machine and run")
    say(f"   python {platform.python_version()} ({platform.python_implementation()}), "
        f"sqlite {sqlite3.sqlite_version}, {platform.system()} {platform.release()}")
    say(f"   CPU: {cpu_model()}, os.cpu_count()={os.cpu_count()}, usable={affinity}; "
        f"load average at start {' '.join(f'{x:.2f}' for x in load)}")
    say(f"   daemon: python -m minionsd.daemon (asyncio default loop, stdlib json), separate "
        f"process; pinned: {'daemon CPU 1, bench CPU 0' if args.pin else 'no'}")
    say(f"   dataset: {args.records:,} records, seed {args.seed}, {args.queries} search "
        f"queries, {args.retrieval_samples} retrieval samples, {args.notes} notes, "
        f"only={args.only or 'all'}, trials={args.trials}")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--only", choices=("load", "search", "consolidation", "retrieval",
                                            "mcp-start", "web", "cli", "startup",
                                            "heavy-note", "history"))
    parser.add_argument("--quick", action="store_true",
                        help="every section at a tiny size (200 records, a few samples; "
                        "the test suite's smoke run): no meaningful figures")
    parser.add_argument("--trials", type=int, default=1,
                        help="repeat the search timing (same process) and report the median")
    parser.add_argument("--retrieval-samples", type=int, default=200)
    parser.add_argument("--web-samples", type=int, default=30,
                        help="requests per web-view page (section 7)")
    parser.add_argument("--web-home", metavar="DIR",
                        help="section 7 on a home an earlier --only web --keep run loaded "
                        "(<kept root>/w), instead of loading N records again")
    parser.add_argument("--search-budget-s", type=float, default=120,
                        help="stop the search timing after this long (slow daemons)")
    parser.add_argument("--retrieval-budget-s", type=float, default=45,
                        help="stop each retrieval timing after this long")
    parser.add_argument("--notes", type=int, default=1000,
                        help="inbox notes for the consolidation throughput")
    parser.add_argument("--watch-rounds", type=int, default=10)
    parser.add_argument("--burst-rounds", type=int, default=1,
                        help="rounds of the burst scenario (stops after one slow round)")
    parser.add_argument("--pin", action="store_true",
                        help="pin the daemon to CPU 1 and this process to CPU 0")
    parser.add_argument("--keep", action="store_true", help="keep the temp homes")
    parser.add_argument("--mcp", action="store_true",
                        help="also time memory_context through minionsctl mcp (retrieval)")
    parser.add_argument("--gateway", action="store_true",
                        help="also time memory.retrieve / prompt.assemble through the HTTP "
                             "gateway's /rpc and memory_context through /mcp (retrieval)")
    parser.add_argument("--old", type=Path, metavar="DIR",
                        help="print one table of every headline figure for this code and the "
                        "checkout DIR (with its own .venv), e.g. `git worktree add /tmp/old "
                        "main` (scripts/bench_compare.py); the other sections are skipped")
    parser.add_argument("--cli-home", type=Path, metavar="DIR",
                        help="--only cli/startup: a copy of this loaded home (a stopped "
                        "daemon's) instead of loading --records records")
    parser.add_argument("--cli-runs", type=int, default=15,
                        help="--only cli/startup: calls (starts) per figure")
    parser.add_argument("--load-clients", type=int, default=64,
                        help="clients of the mixed load in the --old table")
    parser.add_argument("--load-calls", type=int, default=32_000,
                        help="calls of the mixed load in the --old table (0: skip it)")
    args = parser.parse_args(argv)
    if args.quick:
        parser.set_defaults(**QUICK)
        args = parser.parse_args(argv)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    print_facts(args)
    bench = Bench(args)

    def interrupted(signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, interrupted)
    began = time.perf_counter()
    try:
        if args.only == "heavy-note":  # bench_heavy_note.py: its own daemons, CPU per run
            from bench_heavy_note import main as run_heavy_note

            run_heavy_note(["--runs", str(max(args.trials, 3))]
                           + (["--old", str(args.old.resolve())] if args.old else []))
        elif args.only == "history":  # bench_history.py: files only, no daemon
            from bench_history import main as run_history

            run_history(["--mb", "0.2" if args.quick else "10"])
        elif args.only == "cli":
            from bench_cli import run_cli

            run_cli(bench, args.old.resolve() if args.old else None, REPO)
        elif args.only == "startup":
            from bench_startup import run_startup

            run_startup(bench)
        elif args.old is not None:
            from bench_compare import run_compare

            run_compare(bench, args.old.resolve(), REPO)
        elif args.only in (None, "load", "search", "retrieval"):
            run_records(bench)
        if args.old is None and args.only in (None, "consolidation"):
            run_consolidation_throughput(bench)
            run_watch_latency(bench)
        if args.old is None and args.only in (None, "mcp-start"):
            run_mcp_start(bench, 3 if args.quick else MCP_START_RUNS)
        if args.old is None and args.only in (None, "web"):
            run_web(bench)
    except KeyboardInterrupt:
        end_progress()
        say("\ninterrupted; stopping daemons and removing temp homes")
        return 130
    finally:
        bench.close()
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    say(f"\n== done in {time.perf_counter() - began:.0f} s (load average at end {load})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
