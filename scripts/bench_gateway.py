"""Section 5, with --gateway: the HTTP gateway (`minionsctl serve`, tests/gateway_harness.py's
GatewayProcess) in front of the section's daemon. `memory.retrieve` and `prompt.assemble` on
the raw socket, through POST /rpc (one kept-alive HTTP connection, minionsd's own HttpClient,
as `minionsctl --url` uses it) and `memory_context` through POST /mcp (the mcp SDK's Streamable
HTTP client, one session), interleaved call by call with the same params; then the gateway's
RSS. SPEC §5.2's bound: through the gateway at most 3 ms more than the socket at the median.
"""

from __future__ import annotations

import argparse
import itertools
import time
from typing import Any

from bench_common import BenchDaemon, fmt_ms, ms, pct, proc_status, say

from minionsd.rpc.http_client import HttpClient
from tests.gateway_harness import gateway_with, make_token


def bench_gateway(daemon: BenchDaemon, prepared: list[tuple[Any, ...]],
                  args: argparse.Namespace) -> None:
    import anyio
    import httpx2
    from mcp import Client as McpClient
    from mcp.client.streamable_http import streamable_http_client

    _task, project, agent, *_ = prepared[0]
    # No project on the token: each call's own project passes through, as on the socket.
    token = make_token(daemon, f"bench-{time.monotonic_ns()}", agent, "read")
    # The bench calls as fast as it can: far over an agent's rate limit, which is lifted here.
    gateway = gateway_with(daemon, **{"gateway.rate_per_s": 100000,
                                      "gateway.rate_burst": 100000})
    samples = min(args.retrieval_samples, 200)
    warmup = min(10, samples)
    labels = ("memory.retrieve (socket)", "memory.retrieve (/rpc)",
              "prompt.assemble (socket)", "prompt.assemble (/rpc)",
              "memory_context (/mcp)")
    timings: dict[str, list[int]] = {label: [] for label in labels}

    async def run() -> str:
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx2.AsyncClient(headers=headers, timeout=120) as http, McpClient(
                streamable_http_client(gateway.url + "/mcp", http_client=http),
                mode="legacy", read_timeout_seconds=120) as mcp:
            with daemon.client() as raw, HttpClient(gateway.url, token, timeout=120) as rpc:
                deadline = time.monotonic() + args.retrieval_budget_s
                for i in range(warmup + samples):
                    if time.monotonic() > deadline and i > warmup + 10:
                        say(f"   ! time budget reached after {i - warmup} samples")
                        break
                    task = prepared[i % len(prepared)][0]
                    params = {"task": task, "project": project, "agent": agent}
                    marks = [time.perf_counter_ns()]
                    for method in ("memory.retrieve", "prompt.assemble"):
                        raw.call(method, params)
                        marks.append(time.perf_counter_ns())
                        rpc.call(method, params)
                        marks.append(time.perf_counter_ns())
                    result = await mcp.call_tool("memory_context", {"task": task})
                    marks.append(time.perf_counter_ns())
                    if result.is_error:
                        raise RuntimeError(result.content[0].text)
                    if i >= warmup:
                        for label, (a, b) in zip(labels, itertools.pairwise(marks),
                                                 strict=True):
                            timings[label].append(b - a)
            return mcp.protocol_version

    try:
        version = anyio.run(run)
        memory = proc_status(gateway.proc.pid) if gateway.proc else {}
    finally:
        gateway.stop()
    say(f"   gateway: {gateway.url}, MCP protocol {version}, agent {agent}, project {project}, "
        f"{warmup} warm-up rounds")
    say(f"   {'':34} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}  samples")
    for label, values in timings.items():
        say(f"   {label:34} {fmt_ms(ms(pct(values, 50)))} {fmt_ms(ms(pct(values, 99)))} "
            f"{fmt_ms(ms(max(values)))}  {len(values)}")
    for method in ("memory.retrieve", "prompt.assemble"):
        extra = [b - a for a, b in zip(timings[f"{method} (socket)"],
                                       timings[f"{method} (/rpc)"], strict=True)]
        say(f"   {method} through /rpc minus the socket: p50 {ms(pct(extra, 50)):.2f} ms, "
            f"p99 {ms(pct(extra, 99)):.2f} ms (SPEC bound: +3 ms at the median)")
    say(f"   gateway RSS: VmHWM {memory.get('VmHWM', '?')}, VmRSS {memory.get('VmRSS', '?')}")
