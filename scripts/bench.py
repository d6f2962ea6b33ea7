"""Benchmark a real minionsd daemon over its Unix socket. Prints figures; asserts nothing.

    .venv/bin/python scripts/bench.py                   # full run: 100k records (~10 min)
    .venv/bin/python scripts/bench.py --quick           # 10k records, 300 queries
    .venv/bin/python scripts/bench.py --only search     # load + memory.search + RSS
    .venv/bin/python scripts/bench.py --only consolidation
    .venv/bin/python scripts/bench.py --only retrieval  # memory.retrieve / prompt.assemble
    .venv/bin/python scripts/bench.py --only retrieval --mcp   # + memory_context over MCP

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
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import os
import platform
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_data  # noqa: E402

from minionsd import fts, ftsquery, records  # noqa: E402
from minionsd.db import connect  # noqa: E402
from minionsd.rpc.client import Client, DaemonUnavailable, RpcError  # noqa: E402

METHOD_NOT_FOUND = -32601
LOAD_BATCH = 500
LOAD_BATCH_BYTES = 900_000  # stay under server.max_request_bytes (1 MiB)
RETRIEVAL_SIZES = (10_000, 100_000)
WARMUP_BUDGET_S = 15.0
COMMON_WORDS = ("test", "cache", "retry", "timeout", "build", "deploy", "py", "err", "jitter",
                "tokenrefresher")


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


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


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

class Daemon:
    """A real `python -m minionsd.daemon` on a temp home."""

    def __init__(self, home: Path, pin_cpu: int | None) -> None:
        self.home = home
        self.pin_cpu = pin_cpu
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = home.parent / f"{home.name}-daemon.log"

    @property
    def socket(self) -> Path:
        return self.home / "engine" / "minionsd.sock"

    @property
    def db_path(self) -> Path:
        return self.home / "engine" / "state.db"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self, timeout: float = 30) -> Daemon:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("MINIONS_", "ANTHROPIC_", "NOTIFY_", "WATCHDOG_"))}
        cpu = self.pin_cpu

        def pin() -> None:
            if cpu is not None:
                os.sched_setaffinity(0, {cpu})

        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "minionsd.daemon", "--home", str(self.home),
                 "--log-format", "json"],
                stdout=log, stderr=log, env=env, cwd=REPO, preexec_fn=pin,
                start_new_session=True,  # Ctrl-C reaches us only; we stop the daemon ourselves
            )
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"daemon exited with {self.proc.returncode}:\n{self.log()}")
            try:
                with Client(self.socket, timeout=5) as client:
                    client.call("status")
                return self
            except (OSError, DaemonUnavailable, RpcError, ValueError):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"daemon did not answer:\n{self.log()}") from None
                time.sleep(0.05)

    def client(self, timeout: float = 300) -> Client:
        return Client(self.socket, timeout=timeout).connect()

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def cpu_seconds(self) -> float:
        """The daemon's user+system CPU time so far (all threads): robust on a noisy box."""
        try:
            with open(f"/proc/{self.pid}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            return float("nan")

    def memory(self) -> dict[str, str]:
        status = proc_status(self.pid)
        return {k: status.get(k, "?") for k in ("VmHWM", "VmRSS")}

    def stop(self) -> int | None:
        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        self.proc.send_signal(signal.SIGTERM)
        began = time.perf_counter()
        try:
            code = self.proc.wait(20)
            say(f"   (daemon {self.home.name}: SIGTERM -> exit {code} in "
                f"{time.perf_counter() - began:.2f} s)")
            return code
        except subprocess.TimeoutExpired:
            say(f"  ! daemon {self.proc.pid} ignored SIGTERM for 20 s; killing it")
            self.proc.kill()
            return self.proc.wait()


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.root = Path(tempfile.mkdtemp(prefix="mb-", dir="/tmp"))
        self.daemons: list[Daemon] = []
        self.vocab = bench_data.Vocabulary(args.seed)
        # Records are dated over the year before today (midnight UTC); a few expire later.
        self.base_time = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
        if args.pin:
            os.sched_setaffinity(0, {0})

    def new_daemon(self, name: str, config: dict[str, dict[str, Any]]) -> Daemon:
        home = self.root / name
        write_config(home, config)
        daemon = Daemon(home, 1 if self.args.pin else None)
        self.daemons.append(daemon)
        return daemon.start()

    def close(self) -> None:
        for daemon in self.daemons:
            with contextlib.suppress(Exception):
                daemon.stop()
        if self.args.keep:
            say(f"kept temp homes under {self.root}")
        else:
            shutil.rmtree(self.root, ignore_errors=True)


# --- 1. load --------------------------------------------------------------------------------

def load_records(daemon: Daemon, vocab: bench_data.Vocabulary, seed: int, start: int,
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
        except BaseException as exc:  # noqa: BLE001 - reported by the reading thread
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


def describe_dataset(daemon: Daemon, total: int) -> None:
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


def readonly_connection(daemon: Daemon) -> sqlite3.Connection:
    """The same kind of connection the daemon reads with (minionsd.db.connect, mode=ro)."""
    return connect(daemon.db_path, readonly=True)


def bench_search(daemon: Daemon, vocab: bench_data.Vocabulary, args: argparse.Namespace,
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


# --- 5. retrieval ---------------------------------------------------------------------------

def terms_for(task: dict[str, Any]) -> tuple[list[str], str]:
    """The task's query terms: minionsd.retrieval.query.task_terms if present, else the same
    word rules memory.search uses (ftsquery.search_terms), capped at 32."""
    try:
        from minionsd.retrieval.query import task_terms  # type: ignore[import-not-found]
    except ImportError:
        task_terms = None
    if task_terms is not None:
        with contextlib.suppress(Exception):
            params = inspect.signature(task_terms).parameters
            terms = task_terms(task) if len(params) >= 1 else task_terms()
            if isinstance(terms, list | tuple) and all(isinstance(t, str) for t in terms):
                return list(terms), "minionsd.retrieval.query.task_terms"
    return ftsquery.search_terms(bench_data.task_text(task), 32), "ftsquery.search_terms"


NAIVE_OR_SQL = """SELECT r.* FROM memory_fts JOIN memory_records r ON r.seq = memory_fts.rowid
    WHERE memory_fts MATCH ? ORDER BY bm25(memory_fts, {w}) LIMIT 50"""


def method_available(client: Client, method: str, params: dict[str, Any]) -> tuple[bool, str]:
    try:
        client.call(method, params)
    except RpcError as exc:
        if exc.code == METHOD_NOT_FOUND:
            return False, "not implemented yet (-32601)"
        return False, f"error {exc.code}: {exc}"
    return True, "ok"


def bench_retrieval(daemon: Daemon, vocab: bench_data.Vocabulary, args: argparse.Namespace,
                    dataset: int) -> None:
    task_specs = bench_data.tasks(vocab, args.seed, 20)
    weights = ", ".join(str(w) for w in fts.BM25_WEIGHTS)
    sql = NAIVE_OR_SQL.format(w=weights)
    conn = readonly_connection(daemon)
    prepared = []
    source = ""
    for task, project, agent in task_specs:
        terms, source = terms_for(task)
        expression = ftsquery.match_expression(terms) or '""'
        matched = conn.execute(
            "SELECT count(*) FROM memory_fts WHERE memory_fts MATCH ?", (expression,)
        ).fetchone()[0]
        prepared.append((task, project, agent, terms, expression, matched))
    n_terms = [len(p[3]) for p in prepared]
    say(f"\n== 5. retrieval at {dataset:,} records ({len(prepared)} tasks, terms from {source}: "
        f"mean {statistics.fmean(n_terms):.1f}, min {min(n_terms)}, max {max(n_terms)})")
    matched = [p[5] for p in prepared]
    say(f"   naive OR of all terms matches median {pct(matched, 50):,.0f} records "
        f"({pct(matched, 50) / dataset:.0%} of the set), max {max(matched):,}")
    say(f"   example terms: {' '.join(prepared[0][3])}")
    samples = args.retrieval_samples
    warmup = min(20, samples)
    timings: dict[str, list[int]] = {"naive-OR floor (in-process)": []}
    with daemon.client() as client:
        first = {"task": prepared[0][0], "project": prepared[0][1], "agent": prepared[0][2]}
        methods = []
        for method in ("memory.retrieve", "prompt.assemble"):
            ok, note = method_available(client, method, first)
            if ok:
                methods.append(method)
                timings[f"{method} (socket)"] = []
            else:
                say(f"   {method}: {note}")
        modes: dict[str, int] = {}
        warmed = 0
        deadline = time.monotonic() + WARMUP_BUDGET_S + args.retrieval_budget_s
        warm_until = time.monotonic() + WARMUP_BUDGET_S
        for i in range(warmup + samples):
            if i < warmup and time.monotonic() > warm_until:
                continue  # warm-up budget spent: skip the rest of the warm-up
            warmed += i < warmup
            if time.monotonic() > deadline and i > warmup + 10:
                say(f"   ! time budget ({args.retrieval_budget_s:.0f} s) reached after "
                    f"{i - warmup} samples")
                break
            task, project, agent, _terms, expression, _ = prepared[i % len(prepared)]
            params = {"task": task, "project": project, "agent": agent}
            for method in methods:
                t0 = time.perf_counter_ns()
                result = client.call(method, params)
                elapsed = time.perf_counter_ns() - t0
                if i >= warmup:
                    timings[f"{method} (socket)"].append(elapsed)
                    if method == "memory.retrieve":
                        key = f"{result.get('mode')}/{result.get('fallback_reason')}"
                        modes[key] = modes.get(key, 0) + 1
            # The floor costs up to a second a query at 100k: time it on every 4th task
            # only (the first 20 always), so it does not eat the section's time budget.
            if i < 20 or i % 4 == 0:
                t0 = time.perf_counter_ns()
                conn.execute(sql, (expression,)).fetchall()
                elapsed = time.perf_counter_ns() - t0
                if i >= warmup:
                    timings["naive-OR floor (in-process)"].append(elapsed)
            if i % 20 == 0:
                progress(f"  retrieval {i}/{warmup + samples}")
        end_progress()
        if "memory.retrieve" in methods:
            fresh_retrievals(client, vocab, args)
    conn.close()
    floor = timings["naive-OR floor (in-process)"]
    counts = ", ".join(f"{label.split(' ')[0]} {len(values)}" for label, values in timings.items())
    say(f"   (samples after {warmed} warm-up, tasks cycled: {counts})")
    say(f"   {'':34} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}  vs naive-OR p50 / p99")
    for label, values in timings.items():
        ratio = "" if values is floor else (
            f"  {pct(values, 50) / pct(floor, 50):5.2f}x / "
            f"{pct(values, 99) / pct(floor, 99):5.2f}x")
        say(f"   {label:34} {fmt_ms(ms(pct(values, 50)))} {fmt_ms(ms(pct(values, 99)))} "
            f"{fmt_ms(ms(max(values)))}{ratio}")
    if modes:
        say(f"   memory.retrieve mode/fallback_reason: {modes}")
    if not methods:
        say("   memory.retrieve / prompt.assemble not implemented yet: only the naive-OR floor "
            "is shown (what a single OR query over all task terms costs)")
    if args.mcp and "prompt.assemble" in methods:
        bench_mcp(daemon, prepared, args)


def bench_mcp(daemon: Daemon, prepared: list[tuple[Any, ...]], args: argparse.Namespace
              ) -> None:
    """memory_context through `minionsctl mcp` over one stdio session (the mcp SDK's client)
    vs prompt.assemble with the same params on the raw socket, interleaved call by call."""
    import anyio
    from mcp import Client as McpClient
    from mcp import StdioServerParameters

    _task, project, agent, *_ = prepared[0]
    command = [sys.executable, "-m", "minionsd.cli", "--home", str(daemon.home), "mcp",
               "--agent", agent, "--project", project]
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    samples = min(args.retrieval_samples, 200)
    warmup = min(10, samples)
    timings: dict[str, list[int]] = {"prompt.assemble (raw socket)": [],
                                     "memory_context (MCP stdio)": []}

    async def run() -> str:
        params = StdioServerParameters(command=command[0], args=command[1:], env=env)
        async with McpClient(params, mode="legacy", read_timeout_seconds=120) as mcp:
            with daemon.client() as raw:
                deadline = time.monotonic() + args.retrieval_budget_s
                for i in range(warmup + samples):
                    if time.monotonic() > deadline and i > warmup + 10:
                        say(f"   ! time budget reached after {i - warmup} samples")
                        break
                    task = prepared[i % len(prepared)][0]
                    t0 = time.perf_counter_ns()
                    raw.call("prompt.assemble", {"task": task, "project": project,
                                                 "agent": agent})
                    t1 = time.perf_counter_ns()
                    result = await mcp.call_tool("memory_context", {"task": task})
                    t2 = time.perf_counter_ns()
                    if result.is_error:
                        raise RuntimeError(result.content[0].text)
                    if i >= warmup:
                        timings["prompt.assemble (raw socket)"].append(t1 - t0)
                        timings["memory_context (MCP stdio)"].append(t2 - t1)
            return mcp.protocol_version

    version = anyio.run(run)
    say(f"   MCP: one `minionsctl mcp` session (protocol {version}), {len(prepared)} tasks "
        f"cycled, agent {agent}, project {project}, {warmup} warm-up calls")
    say(f"   {'':34} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}  samples")
    for label, values in timings.items():
        say(f"   {label:34} {fmt_ms(ms(pct(values, 50)))} {fmt_ms(ms(pct(values, 99)))} "
            f"{fmt_ms(ms(max(values)))}  {len(values)}")
    overhead = [b - a for a, b in zip(*timings.values(), strict=True)]
    say(f"   MCP overhead per call (memory_context - prompt.assemble): p50 "
        f"{ms(pct(overhead, 50)):.2f} ms, p99 {ms(pct(overhead, 99)):.2f} ms")


def fresh_retrievals(client: Client, vocab: bench_data.Vocabulary,
                     args: argparse.Namespace) -> None:
    """memory.retrieve for tasks never asked before: nothing about them is cached yet (document
    frequencies of their rare words, FTS5 hit lists, term counts and rows of their records),
    unlike the cycled tasks above, which repeat every 20 calls."""
    count = max(20, args.retrieval_samples // 2)
    fresh = bench_data.tasks(vocab, args.seed + 1000, count)
    values: list[int] = []
    deadline = time.monotonic() + args.retrieval_budget_s
    for task, project, agent in fresh:
        if time.monotonic() > deadline and len(values) >= 10:
            break
        t0 = time.perf_counter_ns()
        client.call("memory.retrieve", {"task": task, "project": project, "agent": agent})
        values.append(time.perf_counter_ns() - t0)
    say(f"   memory.retrieve, {len(values)} tasks each asked once (cold caches): "
        f"p50 {ms(pct(values, 50)):.2f} ms, p99 {ms(pct(values, 99)):.2f} ms, "
        f"max {ms(max(values)):.2f} ms")


def wait_for_index(daemon: Daemon, budget_s: float = 120.0) -> None:
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
    checkpoints = sorted({n for n in RETRIEVAL_SIZES if n < total} | {total}) \
        if want_retrieval else [total]
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
    describe_dataset(daemon, total)
    if args.only in (None, "search"):
        bench_search(daemon, bench.vocab, args, total)
    memory = daemon.memory()
    say(f"\n== 3. daemon memory after {total:,} records: peak RSS (VmHWM) {memory['VmHWM']}, "
        f"current RSS (VmRSS) {memory['VmRSS']}")
    daemon.stop()


# --- 4. consolidation -------------------------------------------------------------------------

def stage_and_land(bench: Bench, home: Path, name: str, text: str) -> float:
    """Write the note outside the inbox, then rename it in atomically; returns the time
    (perf_counter) right after the rename."""
    staging = bench.root / "staging"
    staging.mkdir(exist_ok=True)
    temp = staging / name
    temp.write_text(text, encoding="utf-8")
    os.rename(temp, home / "notes" / "inbox" / name)
    return time.perf_counter()


def run_consolidation_throughput(bench: Bench) -> None:
    args = bench.args
    count = args.notes
    agents = {a: {"name": a.title()} for a in bench_data.AGENTS[:5]}
    daemon = bench.new_daemon("c", {
        "engine": {"auto_consolidate_memory": False, "consolidation_max_batch": 50,
                   "inbox_settle_ms": 0},
        "agents": agents,
    })
    day = datetime.now(UTC)
    sizes = []
    for index in range(count):
        name, text = bench_data.inbox_note(bench.vocab, args.seed, index, day)
        sizes.append(len(text.encode()))
        stage_and_land(bench, daemon.home, name, text)
    say(f"\n== 4a. consolidation throughput, regex path (no API key): {count:,} inbox notes "
        f"({statistics.fmean(sizes) / 1024:.1f} KB mean, {min(sizes)}-{max(sizes)} B), "
        "consolidation.run {force: true} until mode is 'nothing'")
    say("   config: auto_consolidate_memory=false, consolidation_max_batch=50, "
        f"inbox_settle_ms=0, {len(agents)} configured agents")
    batch_ms: list[float] = []
    modes: dict[str, int] = {}
    archived = upserted = 0
    with daemon.client(timeout=600) as client:
        status = client.call("status")
        say(f"   inbox before: {status['inbox']}")
        began = time.perf_counter()
        cpu_before = daemon.cpu_seconds()
        while True:
            t0 = time.perf_counter()
            result = client.call("consolidation.run", {"force": True})
            elapsed = time.perf_counter() - t0
            modes[result["mode"]] = modes.get(result["mode"], 0) + 1
            if result["mode"] == "nothing":
                break
            batch_ms.append(elapsed * 1000)
            archived += result["notes"]
            upserted += result["records_upserted"]
            progress(f"  consolidated {archived}/{count}")
        total_s = time.perf_counter() - began
        cpu = daemon.cpu_seconds() - cpu_before
        end_progress()
        status = client.call("status")
    home = daemon.home
    in_archive = sum(1 for p in (home / "notes" / "archive").glob("*.md")
                     if p.name != "notes-history.md")
    quarantined = sum(1 for p in (home / "notes" / "quarantine").glob("*")
                      if not p.name.endswith(".reason.txt")) \
        if (home / "notes" / "quarantine").is_dir() else 0
    kb = sum(1 for _ in (home / "knowledge").rglob("*.md"))
    say(f"   {archived:,} notes in {len(batch_ms)} batches, {total_s:.1f} s = "
        f"{archived / total_s:,.1f} notes/s; batch p50 {pct(batch_ms, 50):.0f} ms, "
        f"max {max(batch_ms, default=0):.0f} ms; modes {modes}")
    say(f"   daemon CPU {cpu:.1f} s = {cpu / max(1, archived) * 1000:.0f} ms/note "
        f"({cpu / total_s:.0%} of one core); load average {os.getloadavg()[0]:.2f}")
    say(f"   after: archive files {in_archive}, quarantined {quarantined}, knowledge files {kb}, "
        f"records upserted {upserted}, status.records {status['records']}, "
        f"inbox {status['inbox']}")
    first, last = batch_ms[:5], batch_ms[-5:]
    if first and last:
        say(f"   first 5 batches mean {statistics.fmean(first):.0f} ms, last 5 "
            f"{statistics.fmean(last):.0f} ms (inbox shrinking, notes.md/archive growing)")
    memory = daemon.memory()
    say(f"   daemon peak RSS (VmHWM) {memory['VmHWM']}")
    daemon.stop()


def wait_batch(daemon: Daemon, client: Client, name: str, token: str, t_land: float,
               timeout: float) -> tuple[float | None, float | None]:
    """Poll until `name` is archived and `token` is searchable; seconds after t_land each."""
    archive = daemon.home / "notes" / "archive"
    archived_at = searchable_at = None
    deadline = t_land + timeout
    while time.perf_counter() < deadline and (archived_at is None or searchable_at is None):
        now = time.perf_counter()
        if archived_at is None and archive.is_dir() and any(
                entry.name.endswith(name) for entry in os.scandir(archive)):
            archived_at = now - t_land
        if searchable_at is None and \
                client.call("memory.search", {"query": token, "limit": 1})["total"] > 0:
            searchable_at = now - t_land
        time.sleep(0.005)
    return archived_at, searchable_at


def run_watch_latency(bench: Bench) -> None:
    args = bench.args
    agents = {a: {"name": a.title()} for a in bench_data.AGENTS[:5]}
    daemon = bench.new_daemon("w", {"engine": {"inbox_consolidate_threshold": 5},
                                    "agents": agents})
    with daemon.client() as client:
        cfg = {key: client.call("config.get", {"key": key})["value"] for key in (
            "engine.auto_consolidate_memory", "engine.inbox_consolidate_threshold",
            "engine.inbox_settle_ms", "engine.rescan_interval_s")}
    settle_s = cfg["engine.inbox_settle_ms"] / 1000
    say("\n== 4b. watch latency: the 5th note lands (atomic rename) -> archived (file in "
        "notes/archive/) and searchable (memory.search for a unique token)")
    say("   config: " + ", ".join(f"{k.split('.', 1)[1]}={v}" for k, v in cfg.items()))
    day = datetime.now(UTC)
    index = 50_000
    scenarios = (
        ("settled", args.watch_rounds, settle_s + 0.6,
         "4 notes, wait settle+0.6 s, then the 5th"),
        ("burst", args.burst_rounds, 0.1, "5 notes 100 ms apart (5th lands while the first "
         "poke's settle sleep is running)"),
    )
    for label, rounds, gap, description in scenarios:
        if rounds <= 0:
            continue
        say(f"   [{label}] {description}; {rounds} rounds")
        archived_s: list[float] = []
        searchable_s: list[float] = []
        missed = 0
        done_early = False
        with daemon.client() as client:
            for round_no in range(rounds):
                if done_early:
                    break
                token = f"watchprobe{label}{round_no}q{args.seed}"
                names = []
                t_land = 0.0
                for k in range(5):
                    extra = f"Probe token: {token}." if k == 4 else ""
                    name, text = bench_data.inbox_note(bench.vocab, args.seed, index, day,
                                                       extra_line=extra)
                    index += 1
                    names.append(name)
                    if k == 4:
                        time.sleep(gap if label == "settled" else 0)
                    t_land = stage_and_land(bench, daemon.home, name, text)
                    if label == "burst" and k < 4:
                        time.sleep(gap)
                timeout = cfg["engine.rescan_interval_s"] + 15
                archived, searchable = wait_batch(daemon, client, names[-1], token, t_land,
                                                  timeout)
                if archived is None or searchable is None:
                    missed += 1
                    say(f"     round {round_no + 1}: not archived+searchable within "
                        f"{timeout:.0f} s (archived={archived}, searchable={searchable})")
                else:
                    archived_s.append(archived)
                    searchable_s.append(max(archived, searchable))
                    if label == "burst":
                        say(f"     round {round_no + 1}: archived {archived:.2f} s, "
                            f"searchable {searchable:.2f} s")
                        if archived > 5:
                            say("     (stopping the burst scenario: one slow round is the "
                                "evidence; each costs up to rescan_interval_s)")
                            done_early = True
                # Let the inbox drain before the next round.
                drain_deadline = time.monotonic() + timeout
                while client.call("status")["inbox"]["pending"] and \
                        time.monotonic() < drain_deadline:
                    time.sleep(0.05)
                time.sleep(0.3)
        for what, values in (("archived", archived_s), ("archived & searchable", searchable_s)):
            if values:
                say(f"     {what:21} p50 {pct(values, 50) * 1000:7.0f} ms   max "
                    f"{max(values) * 1000:7.0f} ms   min {min(values) * 1000:7.0f} ms "
                    f"(n={len(values)}, missed {missed})")
        if values and label == "settled":
            floor = settle_s + 0.05
            say(f"     of which the settle wait (inbox_settle_ms + 50 ms sleep before the "
                f"check) is {floor * 1000:.0f} ms; the rest is scan + batch")
    daemon.stop()


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
    parser.add_argument("--only", choices=("search", "consolidation", "retrieval"))
    parser.add_argument("--quick", action="store_true",
                        help="10,000 records, 300 queries, fewer samples")
    parser.add_argument("--trials", type=int, default=1,
                        help="repeat the search timing (same process) and report the median")
    parser.add_argument("--retrieval-samples", type=int, default=200)
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
    args = parser.parse_args(argv)
    if args.quick:
        args.records = min(args.records, 10_000)
        args.queries = min(args.queries, 300)
        args.retrieval_samples = min(args.retrieval_samples, 60)
        args.notes = min(args.notes, 300)
        args.watch_rounds = min(args.watch_rounds, 4)
        args.burst_rounds = min(args.burst_rounds, 1)
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
        if args.only in (None, "search", "retrieval"):
            run_records(bench)
        if args.only in (None, "consolidation"):
            run_consolidation_throughput(bench)
            run_watch_latency(bench)
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
