"""Retrievals racing with writers always get a pack or an ordinary fallback, never "error".

Every record holds the query's words, so a record committed between reading the row count and
reading a document frequency once gave df > N and `math domain error` in the idf. The loops
are bounded by counts, not time."""

from __future__ import annotations

import threading

from minionsd.client import Client

WRITERS = 3
ADDS_EACH = 150
RETRIEVERS = 4
RETRIEVES_EACH = 200
TASK = {"id": "W-7", "title": "Flaky quokka deploy", "description": "quokka deploy flaky"}


def test_concurrent_writes_never_make_a_retrieval_fall_back_with_error(daemon):
    results: list[dict] = []
    failures: list[BaseException] = []
    lock = threading.Lock()

    def write(n: int) -> None:
        try:
            with Client(daemon.socket, timeout=60) as client:
                for i in range(ADDS_EACH):
                    client.call("memory.add", {
                        "body": f"quokka deploy flaky note {n}-{i}", "type": "semantic",
                        "scope": "global", "trust": "human", "source": f"test:{n}-{i}"})
        except BaseException as exc:
            failures.append(exc)

    def retrieve(n: int) -> None:
        try:
            with Client(daemon.socket, timeout=60) as client:
                for i in range(RETRIEVES_EACH):
                    method = "prompt.assemble" if i % 4 == 0 else "memory.retrieve"
                    reply = client.call(method, {"task": TASK})
                    with lock:
                        results.append(reply.get("retrieval", reply))
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(WRITERS)]
    threads += [threading.Thread(target=retrieve, args=(n,)) for n in range(RETRIEVERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert len(results) == RETRIEVERS * RETRIEVES_EACH
    reasons = [r["fallback_reason"] for r in results]
    assert "error" not in reasons, [r for r in results if r["fallback_reason"] == "error"][:1]
    errors = daemon.call("telemetry.retrievals", limit=1000)
    assert not [row for row in errors["rows"] if row["fallback_reason"] == "error"]
