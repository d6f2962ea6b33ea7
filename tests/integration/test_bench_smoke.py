"""scripts/bench.py --quick --mcp --gateway runs every section end to end at a tiny size and
prints each section's table. A smoke test: it checks what is printed, never how fast anything
was."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

from tests.conftest import REPO

RUN_TIMEOUT_S = 300


def run_quick_bench() -> tuple[int, str, str]:
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "scripts/bench.py", "--quick", "--mcp",
                             "--gateway"], cwd=REPO,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGTERM)  # the bench stops its daemons and removes its homes
        out, err = proc.communicate(timeout=60)
        raise AssertionError(f"bench --quick still running after {RUN_TIMEOUT_S} s:\n{out}\n{err}"
                             ) from None
    return proc.returncode, out, err


def test_bench_quick_prints_every_section():
    code, out, err = run_quick_bench()
    assert code == 0, f"{out}\n{err}"
    expected = [
        r"^== machine and run$",
        r"dataset: 200 records, seed 7, 20 search queries, 10 retrieval samples, 20 notes",
        # 1. load
        r"^== 1\. load: 200 records via memory\.add",
        r"records +0\.\. +200: .* records/s +\(\d+ batches, errors 0\)",
        r"index upkeep: ",
        r"load total: 200 records in ",
        r"status\.records: \{'active': 200,",
        # 5. retrieval, at the only checkpoint, with the MCP comparison
        r"^== 5\. retrieval at 200 records \(20 tasks",
        r"memory\.retrieve, \d+ tasks each asked once \(cold caches\): p50 ",
        r"p50 ms +p99 ms +max ms +vs naive-OR p50 / p99$",
        r"^   naive-OR floor \(in-process\) +[\d.]+ +[\d.]+ +[\d.]+$",
        r"^   memory\.retrieve \(socket\) +[\d.]+ +[\d.]+ +[\d.]+ +[\d.]+x / +[\d.]+x$",
        r"^   prompt\.assemble \(socket\) +[\d.]+ +[\d.]+ +[\d.]+ +[\d.]+x / +[\d.]+x$",
        r"^   MCP: one `minionsctl mcp` session \(protocol ",
        r"p50 ms +p99 ms +max ms +samples$",
        r"^   prompt\.assemble \(raw socket\) +[\d.]+ +[\d.]+ +[\d.]+ +10$",
        r"^   memory_context \(MCP stdio\) +[\d.]+ +[\d.]+ +[\d.]+ +10$",
        # ... and through the HTTP gateway
        r"^   gateway: http://127\.0\.0\.1:\d+, MCP protocol ",
        r"^   memory\.retrieve \(/rpc\) +[\d.]+ +[\d.]+ +[\d.]+ +10$",
        r"^   prompt\.assemble \(/rpc\) +[\d.]+ +[\d.]+ +[\d.]+ +10$",
        r"^   memory_context \(/mcp\) +[\d.]+ +[\d.]+ +[\d.]+ +10$",
        r"^   prompt\.assemble through /rpc minus the socket: p50 ",
        r"^   gateway RSS: VmHWM \d+ kB",
        # 2. search
        r"^== 2\. memory\.search: socket vs in-process records\.search\(\) \(20 queries",
        r"p50 ms +p90 ms +p99 ms +max ms +mean ms$",
        r"^   socket memory\.search( +[\d.]+){5}$",
        r"^   direct records\.search \(sqlite3\)( +[\d.]+){5}$",
        r"slowest queries",
        # 3. memory
        r"^== 3\. daemon memory after 200 records: peak RSS \(VmHWM\) \d+ kB",
        # 4. consolidation
        r"^== 4a\. consolidation throughput, regex path \(no API key\): 20 inbox notes",
        r"^   20 notes in \d+ batches, ",
        r"after: archive files 20, quarantined 0,",
        r"^== 4b\. watch latency: ",
        r"^   \[settled\] ",
        r"^   \[burst\] ",
        # 6. minionsctl mcp start-up
        r"^== 6\. minionsctl mcp: process start -> initialize answered \(3 starts",
        r"^   p50 \d+ ms, p90 \d+ ms, max \d+ ms",
        # 7. the web view's pages through minionsctl serve
        r"^== 7\. web view at 200 records: 3 requests per page through minionsctl serve",
        r"^   /records\?q=retry\+timeout +[\d.]+ +[\d.]+ +[\d,]+$",
        r"^   slowest median +[\d.]+ ms: ",
        r"^== done in \d+ s",
    ]
    missing = [pattern for pattern in expected if not re.search(pattern, out, re.MULTILINE)]
    assert not missing, f"missing {missing} in:\n{out}\n{err}"
    # Each watch scenario saw its probe note archived and searchable (no timing checked).
    assert len(re.findall(r"^     archived & searchable p50 .*missed 0\)$", out,
                          re.MULTILINE)) == 2, out
    # Every daemon the bench started (records, consolidation, watch, mcp-start, web) exited 0
    # on SIGTERM.
    assert len(re.findall(r"SIGTERM -> exit 0 in", out)) == 5, out
    assert "Traceback" not in err, err


def test_bench_history_prints_both_ways_of_moving_sections():
    done = subprocess.run([sys.executable, "scripts/bench.py", "--only", "history", "--quick"],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for how in ("append", "rewrite"):
        assert re.search(rf"^ +{how} +[\d.]+ ms wall +[\d.]+ ms CPU +[\d.]+ kB written",
                         done.stdout, re.MULTILINE), done.stdout
