"""A batch of memory.add is written in one statement: what memory.get reads back must be what
the same requests store one at a time, field for field, including values that cannot travel
in that statement (a NUL) and requests that fail beside good ones."""

from __future__ import annotations

from tests.integration.test_bulk_commits import send_batch

ODD = ["plain", "😀 emoji and é\u0301", "line\u2028sep", "back\\slash \"quoted\"",
       "nul\x00inside", "tab\tand\nnewline", "\\u0000 looks escaped", "password=hunter2hunter2"]


def params(i: int, text: str) -> dict:
    return {"body": f"{text} body {i}", "title": f"{text} title", "type": "procedural",
            "scope": "project:minions", "trust": "human", "source": f"test {text}",
            "author": text, "project": "minions", "agent": "agent-7", "task": "W-1",
            "pr": i if i % 2 else f"PR-{i}", "paths": [f"src/{i}.py", text],
            "tags": ["bulk", text, "bulk"], "importance": 0.1 * (i % 10), "confidence": 1,
            "expires_at": "2099-01-02T03:04:05+02:00", "created_at": "2026-01-02T03:04:05Z",
            "meta": {"n": i, "f": 0.3, "nested": [text, None, True, {"k": text}]}}


def comparable(record: dict) -> dict:
    return {k: v for k, v in record.items() if k not in ("id", "updated_at")}


def test_a_batch_stores_what_single_adds_store(daemon):
    singles = [daemon.call("memory.add", **params(i, text))["id"] for i, text in enumerate(ODD)]
    replies = send_batch(daemon, [{"jsonrpc": "2.0", "id": i, "method": "memory.add",
                                   "params": params(i, text)} for i, text in enumerate(ODD)])
    batched = [reply["result"]["id"] for reply in replies]
    for single, many in zip(singles, batched, strict=True):
        assert comparable(daemon.call("memory.get", id=many)) == \
            comparable(daemon.call("memory.get", id=single))
    got = daemon.call("memory.get", id=batched[ODD.index("nul\x00inside")])
    assert got["body"] == "nul\x00inside body 4"
    assert "hunter2" not in daemon.call("memory.get", id=batched[-1])["body"]
    # Searchable like the single ones: each word is found twice.
    assert daemon.call("memory.search", query="newline")["total"] == 2


def test_a_failing_request_beside_a_nul_body_fails_alone(daemon):
    requests = [{"jsonrpc": "2.0", "id": "nul", "method": "memory.add",
                 "params": params(1, "nul\x00again")},
                {"jsonrpc": "2.0", "id": "bad", "method": "memory.add",
                 "params": params(2, "bad") | {"importance": 7}},
                {"jsonrpc": "2.0", "id": "ok", "method": "memory.add",
                 "params": params(3, "fine")}]
    replies = {reply["id"]: reply for reply in send_batch(daemon, requests)}
    assert replies["bad"]["error"]["data"]["param"] == "importance"
    for key, body in (("nul", "nul\x00again body 1"), ("ok", "fine body 3")):
        assert daemon.call("memory.get", id=replies[key]["result"]["id"])["body"] == body


def test_a_batch_whose_first_or_last_half_all_fails_stores_the_rest(daemon):
    """The batch is prepared in parts; a part with nothing to store adds nothing to the rows."""
    for layout in ("bbgg", "ggbb", "bgbg"):
        requests = [{"jsonrpc": "2.0", "id": f"{kind}{i}", "method": "memory.add",
                     "params": params(i, f"{layout} {kind}") | ({"trust": "nobody"}
                                                                if kind == "b" else {})}
                    for i, kind in enumerate(layout)]
        replies = send_batch(daemon, requests)
        assert [r["id"] for r in replies] == [r["id"] for r in requests]
        for reply in replies:
            if reply["id"].startswith("b"):
                assert reply["error"]["data"]["param"] == "trust"
            else:
                got = daemon.call("memory.get", id=reply["result"]["id"])
                assert got["title"] == f"{layout} g title"
