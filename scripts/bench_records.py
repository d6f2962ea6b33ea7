"""scripts/bench.py sections 1-3 on one daemon: load N records through `memory.add`
(pipelined JSON-RPC batches), `memory.search` over the socket vs `records.search()` in-process
on the same file, and the daemon's peak RSS; section 5 (bench_retrieval) runs at each
checkpoint of the load."""

from __future__ import annotations

import argparse
import json
import os
import socket
import sqlite3
import statistics
import threading
import time
from datetime import UTC, datetime
from typing import Any

import bench_add_steps
import bench_data
import db_space
from bench_common import (
    WARMUP_BUDGET_S,
    Bench,
    BenchDaemon,
    end_progress,
    fmt_ms,
    ms,
    pct,
    progress,
    readonly_connection,
    say,
)
from bench_retrieval import bench_retrieval

from minionsd.rpc.client import Client
from minionsd.storage import fts, records
from minionsd.storage.database import connect
from minionsd.text import ftsquery

LOAD_BATCH = 500
LOAD_BATCH_BYTES = 900_000  # stay under server.max_request_bytes (1 MiB)
RETRIEVAL_SIZES = (10_000, 100_000)
COMMON_WORDS = ("test", "cache", "retry", "timeout", "build", "deploy", "py", "err", "jitter",
                "tokenrefresher")


# --- 1. load --------------------------------------------------------------------------------

def load_records(daemon: BenchDaemon, vocab: bench_data.Vocabulary, seed: int, start: int,
                 stop: int, base: datetime) -> tuple[float, int, list[str], int]:
    """memory.add records [start, stop) as pipelined JSON-RPC batches on one connection.

    A sender thread writes batches while this thread reads replies, so the daemon always has
    the next batch waiting. Returns (seconds, errors, first error messages, batches).
    """
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(daemon.socket))
    reader = sock.makefile("rb", buffering=1 << 20)
    batches: list[int] = []
    failure: list[BaseException] = []

    def send() -> None:
        try:
            parts: list[bytes] = []
            size = 0
            for index, params in enumerate(
                    bench_data.record_stream(vocab, seed, start, stop, base), start):
                part = json.dumps({"jsonrpc": "2.0", "id": index, "method": "memory.add",
                                   "params": params}, separators=(",", ":")).encode()
                if parts and (len(parts) >= LOAD_BATCH or size + len(part) > LOAD_BATCH_BYTES):
                    batches.append(len(parts))
                    sock.sendall(b"[" + b",".join(parts) + b"]\n")
                    parts, size = [], 0
                parts.append(part)
                size += len(part) + 1
            if parts:
                batches.append(len(parts))
                sock.sendall(b"[" + b",".join(parts) + b"]\n")
        except BaseException as exc:
            failure.append(exc)

    began = time.perf_counter()
    sender = threading.Thread(target=send, name="bench-load-sender", daemon=True)
    sender.start()
    received = errors = 0
    messages: list[str] = []
    total = stop - start
    try:
        while received < total:
            if failure:
                raise RuntimeError(f"sending failed: {failure[0]!r}")
            line = reader.readline()
            if not line:
                raise RuntimeError(f"daemon closed the connection after {received} replies")
            replies = json.loads(line)
            if isinstance(replies, dict):
                replies = [replies]
            for reply in replies:
                received += 1
                if "error" in reply:
                    errors += 1
                    if len(messages) < 3:
                        messages.append(json.dumps(reply["error"])[:300])
            if received % 5000 < len(replies):
                rate = received / (time.perf_counter() - began)
                progress(f"  loading {start + received:,}/{stop:,} ({rate:,.0f} rec/s)")
    finally:
        end_progress()
        elapsed = time.perf_counter() - began
        sender.join(5)
        reader.close()
        sock.close()
    return elapsed, errors, messages, len(batches)


def describe_dataset(daemon: BenchDaemon, total: int) -> None:
    """Document frequencies, so the data set can be judged (and compared with real notes)."""
    conn = readonly_connection(daemon)
    try:
        shares = []
        for word in COMMON_WORDS:
            matched = conn.execute("SELECT count(*) FROM memory_fts WHERE memory_fts MATCH ?",
                                   (ftsquery.quote_term(word),)).fetchone()[0]
            shares.append(f"{word} {matched / total:.0%}")
        say("   share of records containing: " + ", ".join(shares))
        top = conn.execute("SELECT term, doc FROM memory_vocab ORDER BY doc DESC LIMIT 10")
        terms = conn.execute("SELECT count(*) FROM memory_vocab").fetchone()[0]
        say(f"   indexed terms {terms:,}; most common (stemmed): "
            + ", ".join(f"{row[0]} {row[1] / total:.0%}" for row in top))
    except sqlite3.Error as exc:
        say(f"   (dataset statistics unavailable: {exc})")
    finally:
        conn.close()


SINGLE_ADDS = 200


def single_add_latency(daemon: BenchDaemon, vocab: bench_data.Vocabulary, seed: int,
                       start: int, base: datetime, count: int = SINGLE_ADDS) -> None:
    """memory.add one call at a time on one connection (each its own commit and disk sync):
    what an agent's single write waits for, next to the bulk figures."""
    times: list[int] = []
    cpu_before = daemon.cpu_seconds()
    with daemon.client() as client:
        for params in bench_data.record_stream(vocab, seed, start, start + count, base):
            t0 = time.perf_counter_ns()
            client.call("memory.add", params)
            times.append(time.perf_counter_ns() - t0)
    cpu = (daemon.cpu_seconds() - cpu_before) / count
    say(f"   single memory.add, one call at a time ({count}): p50 {ms(pct(times, 50)):.2f} ms, "
        f"p99 {ms(pct(times, 99)):.2f} ms; daemon CPU {cpu * 1000:.2f} ms/call; "
        f"load average {os.getloadavg()[0]:.2f}")


# --- 2. search ------------------------------------------------------------------------------

def search_params(query: str) -> dict[str, Any]:
    # Exactly what the memory.search handler passes to records.search.
    return {"query": query, "type": None, "scope": None, "status": None, "project": None,
            "agent": None, "limit": 20}


def timed_socket(client: Client, query: str) -> tuple[int, int]:
    t0 = time.perf_counter_ns()
    result = client.call("memory.search", {"query": query})
    return time.perf_counter_ns() - t0, result["total"]


def timed_direct(conn: sqlite3.Connection, query: str) -> tuple[int, int]:
    t0 = time.perf_counter_ns()
    result = records.search(conn, search_params(query), datetime.now(UTC))
    return time.perf_counter_ns() - t0, result["total"]


def bench_search(daemon: BenchDaemon, vocab: bench_data.Vocabulary, args: argparse.Namespace,
                 dataset: int) -> None:
    warmup = min(200, args.queries)
    queries = bench_data.search_queries(vocab, args.seed, warmup + args.queries)
    conn = readonly_connection(daemon)
    say(f"\n== 2. memory.search: socket vs in-process records.search() "
        f"({args.queries} queries, {warmup} warm-up, limit 20, {dataset:,} records)")
    say("   queries: 1-4 words from the vocabulary (words, identifiers, error codes, config "
        "keys, file names, paths); socket and direct interleaved, order alternating")
    trial_rows = []
    daemon_cpu: list[float] = []
    slowest: list[tuple[float, float, int, str]] = []
    totals: list[int] = []
    with daemon.client() as client:
        warm_until = time.monotonic() + WARMUP_BUDGET_S
        for done, query in enumerate(queries[:warmup], 1):
            client.call("memory.search", {"query": query})
            records.search(conn, search_params(query), datetime.now(UTC))
            if time.monotonic() > warm_until:
                say(f"   (warm-up cut to {done} queries by its {WARMUP_BUDGET_S:.0f} s budget)")
                break
        for trial in range(args.trials):
            sock_ns: list[int] = []
            direct_ns: list[int] = []
            cpu_before = daemon.cpu_seconds()
            deadline = time.monotonic() + args.search_budget_s
            for i, query in enumerate(queries[warmup:]):
                if time.monotonic() > deadline:
                    say(f"   ! time budget ({args.search_budget_s:.0f} s) reached after {i} "
                        f"of {args.queries} queries: figures below are for {i} queries")
                    break
                if i % 2:
                    d_ns, total = timed_direct(conn, query)
                    s_ns, _ = timed_socket(client, query)
                else:
                    s_ns, total = timed_socket(client, query)
                    d_ns, _ = timed_direct(conn, query)
                sock_ns.append(s_ns)
                direct_ns.append(d_ns)
                if trial == 0:
                    totals.append(total)
                    slowest.append((sock_ns[-1], direct_ns[-1], total, query))
                if i % 50 == 0:
                    progress(f"  search trial {trial + 1}: {i}/{args.queries}")
            end_progress()
            trial_rows.append((sock_ns, direct_ns))
            daemon_cpu.append((daemon.cpu_seconds() - cpu_before) / max(1, len(sock_ns)))
    conn.close()
    say(f"   {'':34} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8} {'max ms':>8} {'mean ms':>8}")
    for trial, (sock_ns, direct_ns) in enumerate(trial_rows, 1):
        for label, values in (("socket memory.search", sock_ns),
                              ("direct records.search (sqlite3)", direct_ns)):
            tag = f"{label}" + (f" [trial {trial}]" if args.trials > 1 else "")
            say(f"   {tag:34} {fmt_ms(ms(pct(values, 50)))} {fmt_ms(ms(pct(values, 90)))} "
                f"{fmt_ms(ms(pct(values, 99)))} {fmt_ms(ms(max(values)))} "
                f"{fmt_ms(ms(statistics.fmean(values)))}")
        diff = [s - d for s, d in zip(sock_ns, direct_ns, strict=True)]
        say(f"   daemon CPU per memory.search: {daemon_cpu[trial - 1] * 1000:.1f} ms (mean; "
            f"load average now {os.getloadavg()[0]:.2f})")
        say(f"   ratio socket/direct: p50 {pct(sock_ns, 50) / pct(direct_ns, 50):.2f}x, "
            f"p99 {pct(sock_ns, 99) / pct(direct_ns, 99):.2f}x; paired overhead "
            f"(socket - direct, same query) p50 {ms(pct(diff, 50)):.2f} ms, "
            f"p99 {ms(pct(diff, 99)):.2f} ms")
    if args.trials > 1:
        p50s = [pct(s, 50) / pct(d, 50) for s, d in trial_rows]
        say(f"   median over {args.trials} trials of the p50 ratio: {statistics.median(p50s):.2f}x"
            f" (spread {min(p50s):.2f}-{max(p50s):.2f})")
    say(f"   matches per query ('total'): median {pct(totals, 50):,.0f}, p90 "
        f"{pct(totals, 90):,.0f}, max {max(totals):,} of {dataset:,} "
        f"({sum(1 for t in totals if t > dataset * 0.2)} of {len(totals)} queries match >20%)")
    say("   slowest queries (socket ms / direct ms / matches / query):")
    for sock_t, direct_t, total, query in sorted(slowest, reverse=True)[:5]:
        say(f"     {ms(sock_t):8.1f} {ms(direct_t):8.1f} {total:>8,}  {query!r}")



def wait_for_index(daemon: BenchDaemon, budget_s: float = 120.0) -> None:
    """Merge the FTS5 segments the load left, as the daemon's upkeep would have long before
    anyone searched in a daemon that runs for months (the same 'merge' steps, run here until
    one finds nothing to merge, so the figures do not depend on upkeep ticks)."""
    began = time.monotonic()
    steps = 0
    conn = connect(daemon.db_path)
    try:
        while time.monotonic() - began < budget_s and fts.merge_step(conn, 500):
            steps += 1
    finally:
        conn.close()
    say(f"   index upkeep: {steps} FTS5 merge steps in {time.monotonic() - began:.1f} s")


# --- 1-3, 5: the records daemon ----------------------------------------------------------

def run_records(bench: Bench) -> None:
    args = bench.args
    total = args.records
    daemon = bench.new_daemon("r", {"engine": {"auto_consolidate_memory": False}})
    say(f"\n== 1. load: {total:,} records via memory.add, JSON-RPC batches of <= {LOAD_BATCH} "
        f"(<= {LOAD_BATCH_BYTES // 1000} KB), pipelined on one connection")
    want_retrieval = args.only in (None, "retrieval")
    if want_retrieval:
        checkpoints = sorted({n for n in RETRIEVAL_SIZES if n < total} | {total})
    elif args.only == "load" and total >= 50_000:  # does a record cost more in a bigger table?
        checkpoints = [total * k // 5 for k in range(1, 6)]
    else:
        checkpoints = [total]
    loaded = 0
    load_time = 0.0
    for checkpoint in checkpoints:
        if loaded:
            say(f"\n== 1. load (continued) to {checkpoint:,}")
        cpu_before = daemon.cpu_seconds()
        elapsed, errors, messages, batches = load_records(daemon, bench.vocab, args.seed, loaded,
                                                 checkpoint, bench.base_time)
        cpu = daemon.cpu_seconds() - cpu_before
        load_time += elapsed
        count = checkpoint - loaded
        say(f"   records {loaded:>7,}..{checkpoint:>7,}: {elapsed:7.1f} s  "
            f"{count / elapsed:8,.0f} records/s  ({batches} batches, errors {errors})")
        say(f"     daemon CPU {cpu:.1f} s = {cpu / count * 1000:.2f} ms/record "
            f"({cpu / elapsed:.0%} of one core); load average {os.getloadavg()[0]:.2f}")
        for message in messages:
            say(f"     error: {message}")
        loaded = checkpoint
        wait_for_index(daemon)
        if want_retrieval:
            bench_retrieval(daemon, bench.vocab, args, checkpoint)
    db_files = {p.name: p.stat().st_size for p in daemon.db_path.parent.glob("state.db*")}
    say(f"\n   load total: {total:,} records in {load_time:.1f} s = "
        f"{total / load_time:,.0f} records/s; database files: "
        + ", ".join(f"{k} {v / 1e6:.1f} MB" for k, v in db_files.items()))
    with daemon.client() as client:
        counts = client.call("status")["records"]
    say(f"   status.records: {counts}")
    try:
        for line in db_space.space_lines(str(daemon.db_path), top=8):
            say("   " + line)
    except sqlite3.Error as exc:
        say(f"   (where state.db's bytes go: unavailable, {exc})")
    describe_dataset(daemon, total)
    if args.only == "load":  # the same daemon: one write among `total` records
        single_add_latency(daemon, bench.vocab, args.seed + 1, 0, bench.base_time)
        for line in bench_add_steps.report(min(total, 3000), 3):  # where a record's CPU goes
            say(line)
    if args.only in (None, "search"):
        bench_search(daemon, bench.vocab, args, total)
    memory = daemon.memory()
    say(f"\n== 3. daemon memory after {total:,} records: peak RSS (VmHWM) {memory['VmHWM']}, "
        f"current RSS (VmRSS) {memory['VmRSS']}")
    daemon.stop()
