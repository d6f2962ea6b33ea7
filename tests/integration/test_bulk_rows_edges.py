"""A batch of memory.add (one INSERT … SELECT over SQLite's JSON functions) stores what the same
requests store one at a time, for the values where SQLite's JSON and Python's json could part:
lone surrogates sent as escapes, non-BMP text, integers past 2**53 and 2**64 in meta, -0.0 and
subnormal numbers, timestamps with offsets and fractions, the same content twice, and requests
that fail beside them.
No request here holds a NUL, so the batch takes the one-statement path."""

from __future__ import annotations

from tests.integration.test_bulk_commits import send_batch

BASE = {"type": "semantic", "scope": "global", "trust": "agent", "source": "edge test"}
EDGES = [
    {"body": "lone \ud800 surrogate \udfff here", "title": "pair 😀 \U0001f600",
     "tags": ["\ud800", "été", "😀", "été"], "author": "\udc00x"},
    {"body": "big numbers in meta", "meta": {
        "past_2_53": 9007199254740993, "past_2_64": 123456789012345678901234567890,
        "below_int64": -9223372036854775809, "neg_zero": -0.0, "huge": 1e308,
        "subnormal": 5e-324, "one": 1.0, "nested": [1, 2.5, {"x": None, "y": [True, False]}]}},
    {"body": "unit edges", "importance": -0.0, "confidence": 1e-320},
    {"body": "unit integers", "importance": 1, "confidence": 0, "pr": 2 ** 70},
    {"body": "stamps", "created_at": "2026-01-02T03:04:05.123456+05:30",
     "expires_at": "2099-12-31T23:59:59Z"},
    {"body": "control \x01\x1f\x7f\x85\u2028 characters \\u0000 spelled out",
     "title": "tab\there", "paths": ["src/ä/ö.py", "C:\\\\path"]},
    {"body": "the same content twice", "tags": ["dup"]},
    {"body": "the same content twice", "tags": ["dup"]},
    {"body": "unknown param fails alone", "bogus": 1},
    {"body": "   "},
    {"body": "pr of the wrong type", "pr": 1.5},
]


def comparable(record: dict) -> dict:
    return {k: v for k, v in record.items() if k not in ("id", "updated_at")
            and not (k == "created_at" and v == record["updated_at"])}


def test_a_batch_stores_the_json_edge_values_as_single_adds_do(daemon):
    params = [BASE | edge for edge in EDGES]
    single = []
    for i, p in enumerate(params):
        single += send_batch(daemon, [{"jsonrpc": "2.0", "id": i, "method": "memory.add",
                                       "params": p}])
    batch = send_batch(daemon, [{"jsonrpc": "2.0", "id": i, "method": "memory.add",
                                 "params": p} for i, p in enumerate(params)])
    assert [r["id"] for r in batch] == list(range(len(params)))
    for one, many in zip(single, batch, strict=True):
        if "error" in one:
            assert many.get("error") == one["error"]
            continue
        got_one = daemon.call("memory.get", id=one["result"]["id"])
        got_many = daemon.call("memory.get", id=many["result"]["id"])
        assert repr(comparable(got_many)) == repr(comparable(got_one))
    meta = daemon.call("memory.get", id=batch[1]["result"]["id"])["meta"]
    assert meta["past_2_53"] == 9007199254740993
    assert meta["past_2_64"] == 123456789012345678901234567890
    # memory.add keeps no content hash: the same content twice is two records, as singly.
    assert batch[6]["result"]["id"] != batch[7]["result"]["id"]
    assert [e["error"]["data"]["param"] for e in batch[8:]] == ["bogus", "body", "pr"]
    assert daemon.call("memory.search", query="surrogate")["total"] == 2
