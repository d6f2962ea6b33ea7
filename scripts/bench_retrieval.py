"""scripts/bench.py section 5: `memory.retrieve` / `prompt.assemble` over the socket vs the
bare FTS5 naive-OR candidate query for the same terms (cycled tasks, then tasks never asked
before), and with --mcp `memory_context` through `minionsctl mcp` beside `prompt.assemble`."""

from __future__ import annotations

import argparse
import contextlib
import inspect
import os
import statistics
import sys
import time
from typing import Any

import bench_data
from bench_common import (
    WARMUP_BUDGET_S,
    BenchDaemon,
    end_progress,
    fmt_ms,
    ms,
    pct,
    progress,
    readonly_connection,
    say,
)

from minionsd.rpc.client import Client, RpcError
from minionsd.storage import fts
from minionsd.text import ftsquery
from tests.harness import REPO

METHOD_NOT_FOUND = -32601


def terms_for(task: dict[str, Any]) -> tuple[list[str], str]:
    """The task's query terms: minionsd.retrieval.query.task_terms if present, else the same
    word rules memory.search uses (ftsquery.search_terms), capped at 32."""
    try:
        from minionsd.memory.retrieval.query import task_terms  # type: ignore[import-not-found]
    except ImportError:
        task_terms = None
    if task_terms is not None:
        with contextlib.suppress(Exception):
            params = inspect.signature(task_terms).parameters
            terms = task_terms(task) if len(params) >= 1 else task_terms()
            if isinstance(terms, list | tuple) and all(isinstance(t, str) for t in terms):
                return list(terms), "minionsd.memory.retrieval.query.task_terms"
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


def bench_retrieval(daemon: BenchDaemon, vocab: bench_data.Vocabulary, args: argparse.Namespace,
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
    if getattr(args, "gateway", False) and "prompt.assemble" in methods:
        from bench_gateway import bench_gateway

        bench_gateway(daemon, prepared, args)


def bench_mcp(daemon: BenchDaemon, prepared: list[tuple[Any, ...]], args: argparse.Namespace
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
