"""scripts/bench.py section 7: the web view's pages at N records, through a real gateway
(`minionsctl serve`) in front of the daemon, as a signed-in browser would ask for them (a
session cookie, one keep-alive HTTP connection). Each page: a warm-up, then `--web-samples`
requests; the median and p95 of the whole request (daemon calls, template, transfer).
"""

from __future__ import annotations

import http.client
import os
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

from bench_common import START_TIMEOUT_S, Bench, BenchDaemon, fmt_ms, ms, pct, progress, say
from bench_records import load_records, wait_for_index

from minionsd.rpc.client import RpcError
from tests.web_harness import GatewayProcess

TARGET_MS = 100.0


def _seed_extras(daemon: Any, records: list[dict[str, Any]]) -> None:
    """What the pages show beyond records: retrievals, a retraction, a supersession."""
    with daemon.client() as client:
        for i in range(30):
            client.call("memory.retrieve", {"task": {"id": f"B-{i}", "title": "retry cache "
                                                     "timeout in the build"},
                                            "agent": "dallas"})
        for method, params in (("memory.retract", {"id": records[3]["id"], "reason": "bench"}),
                               ("memory.supersede", {"id": records[4]["id"],
                                                     "by": records[5]["id"]})):
            try:
                client.call(method, params)
            except RpcError:
                pass  # a kept home (--web-home) had it done by its first run
        client.call("knowledge.create", {"category": "conventions", "title": "Bench entry",
                                         "body": "Small commits.", "author": "ops"})


def bench_web(bench: Bench, total: int, daemon: Any) -> None:
    args = bench.args
    with daemon.client() as client:
        newest = client.call("memory.browse", {"limit": 10, "status": "all"})["records"]
    _seed_extras(daemon, newest)
    with daemon.client() as client:
        link = client.call("web.link_create", {})
        session = client.call("web.link_redeem", {"code": link["code"], "hours": 1})["session"]
        chosen = client.call("agents.get", {"id": "dallas"})["retrievals"][0]["selected_ids"]
    gateway = GatewayProcess(daemon.home).start()
    try:
        record = chosen[0] if chosen else newest[0]["id"]
        pages = ["/", "/inbox", "/records", "/records?status=all", "/records?trust=human",
                 "/records?q=retry+timeout", "/records?q=cache&type=semantic",
                 f"/records/{record}", f"/records/{newest[4]['id']}", "/records.json",
                 "/knowledge", "/digest", "/agents", "/agents/dallas",
                 "/try?task=" + quote("flaky retry timeout in the build cache") +
                 "&agent=dallas", "/pinned"]
        say(f"\n== 7. web view at {total:,} records: {args.web_samples} requests per page "
            f"through minionsctl serve, one keep-alive connection, signed in; target median "
            f"< {TARGET_MS:.0f} ms")
        say(f"   {'page':<46} {'median':>9} {'p95':>9} {'bytes':>8}")
        conn = http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=60)
        headers = {"Cookie": f"minions_session={session}"}
        worst = 0.0
        try:
            for path in pages:
                times: list[int] = []
                size = 0
                for i in range(args.web_samples + 3):
                    progress(f"   {path} {i}")
                    started = time.perf_counter_ns()
                    conn.request("GET", path, headers=headers)
                    answer = conn.getresponse()
                    body = answer.read()
                    elapsed = time.perf_counter_ns() - started
                    if answer.status != 200:
                        raise RuntimeError(f"{path}: HTTP {answer.status}: {body[:300]!r}")
                    if i >= 3:
                        times.append(elapsed)
                    size = len(body)
                median = ms(pct(times, 50))
                worst = max(worst, median)
                shown = path if len(path) <= 46 else path[:43] + "..."
                say(f"   {shown:<46} {fmt_ms(median):>9} {fmt_ms(ms(pct(times, 95))):>9} "
                    f"{size:>8,}")
        finally:
            conn.close()
        say(f"   slowest median {fmt_ms(worst)} ms: "
            f"{'within' if worst < TARGET_MS else 'OVER'} the {TARGET_MS:.0f} ms target; "
            f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    finally:
        gateway.stop()


def run_web(bench: Bench) -> None:
    args = bench.args
    if args.web_home:
        # A home an earlier run kept (--keep): its records are loaded already.
        daemon = BenchDaemon(Path(args.web_home), 1 if args.pin else None)
        bench.daemons.append(daemon)
        daemon.start(START_TIMEOUT_S)
        with daemon.client() as client:
            total = sum(client.call("status")["records"].values())
        say(f"\n== 7. web view: the kept home {args.web_home} ({total:,} records)")
        bench_web(bench, total, daemon)
        daemon.stop()
        return
    daemon = bench.new_daemon("w", {"engine": {"auto_consolidate_memory": False},
                                    "agents": {"dallas": {"name": "Dallas"}}})
    say(f"\n== 7. web view: loading {args.records:,} records")
    elapsed, errors, _messages, _batches = load_records(
        daemon, bench.vocab, args.seed, 0, args.records, bench.base_time)
    say(f"   loaded in {elapsed:.1f} s (errors {errors})")
    wait_for_index(daemon)
    bench_web(bench, args.records, daemon)
    daemon.stop()
