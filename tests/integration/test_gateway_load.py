"""The gateway under load and across restarts (SPEC §5.2): 64 concurrent HTTP clients, each
with its own token, get answers with no error; a gateway restart loses nothing; a daemon
restarted behind a running gateway is served again without touching the gateway."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anyio
import httpx2
import pytest

from tests.conftest import DaemonProcess, wait_for
from tests.gateway_harness import GatewayProcess, call_rpc, daemon_and_gateway, make_token

CLIENTS = 64


@pytest.fixture
def pair() -> Iterator[tuple[DaemonProcess, GatewayProcess]]:
    with daemon_and_gateway("ml-") as (daemon, gateway):
        yield daemon, gateway


def test_64_concurrent_clients_get_answers_with_no_error(pair):
    daemon, gateway = pair
    for n in range(20):
        daemon.call("memory.add", body=f"Service {n} retries with backoff {n} times.",
                    type="semantic", scope="global", trust="agent", source="load")
    tokens = [make_token(daemon, f"agent-{i}", f"agent-{i}", "write") for i in range(CLIENTS)]
    failures: list[str] = []
    answered = 0

    async def one_client(index: int, token: str) -> None:
        nonlocal answered
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx2.AsyncClient(base_url=gateway.url, headers=headers,
                                      timeout=120) as http:
            for round_ in range(4):
                method = ("memory.retrieve", "prompt.assemble")[round_ % 2]
                body: Any = {"jsonrpc": "2.0", "id": round_, "method": method, "params": {
                    "task": {"id": f"L-{index}-{round_}",
                             "title": f"service {index % 20} retries"}}}
                if round_ == 3:  # a batch with a write in it
                    body = [body, {"jsonrpc": "2.0", "id": 99, "method": "inbox.submit",
                                   "params": {"body": f"load note {index}"}}]
                response = await http.post("/rpc", json=body)
                replies = response.json()
                replies = replies if isinstance(replies, list) else [replies]
                if response.status_code != 200 or any("error" in r for r in replies):
                    failures.append(f"{index}/{round_}: {response.status_code} {replies}")
                else:
                    answered += 1

    async def main() -> None:
        async with anyio.create_task_group() as group:
            for index, token in enumerate(tokens):
                group.start_soon(one_client, index, token)

    anyio.run(main)
    assert failures == []
    assert answered == CLIENTS * 4
    assert len(daemon.call("inbox.list")["notes"]) == CLIENTS


def test_a_gateway_restart_loses_nothing(pair):
    daemon, gateway = pair
    token = make_token(daemon, "writer", "writer-bot", "write")
    written = call_rpc(gateway, token, "inbox.submit", body="Before the restart.")["result"]
    assert gateway.stop() == 0
    again = GatewayProcess(daemon, port=gateway.port).start()
    try:
        notes = [n["name"] for n in call_rpc(again, token, "inbox.list")["result"]["notes"]]
        assert written["name"] in notes
        assert "result" in call_rpc(again, token, "inbox.submit", body="After the restart.")
    finally:
        again.stop()


def test_a_daemon_restart_behind_a_running_gateway(pair):
    daemon, gateway = pair
    token = make_token(daemon, "reader", "reader-bot", "read")
    assert "result" in call_rpc(gateway, token, "status")
    daemon.stop()
    status, _, body = gateway.rpc(token, {"jsonrpc": "2.0", "id": 1, "method": "status"})
    assert status == 503 and body["error"]["data"]["kind"] == "daemon_unreachable"
    with httpx2.Client(base_url=gateway.url, timeout=30) as http:
        # /healthz asks the daemon at most once a second
        wait_for(lambda: http.get("/healthz").status_code == 503, what="healthz to say 503")
        assert http.get("/healthz").json()["ok"] is False
    daemon.start()
    # the pooled connections to the old daemon are dropped, not reused
    for _ in range(3):
        assert call_rpc(gateway, token, "status")["result"]["pid"] == daemon.proc.pid
    wait_for(gateway.healthy, what="healthz after the daemon restart")
    assert json.loads(json.dumps(call_rpc(gateway, token, "pinned.get")))["result"] is not None
