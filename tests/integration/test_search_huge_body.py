"""A record near the 1 MiB body limit that repeats a word hundreds of thousands of times,
through the real socket: memory.search and memory.browse for that word answer with a short
snippet of a matching passage (FTS5's snippet() over the whole body would cost the square of
its 200,000 hits, minutes of CPU per search); a word only the middle of the body holds is
shown there; several such searches at once leave prompt.assemble and status answering; and
the daemon then stops on SIGTERM."""

from __future__ import annotations

from minionsd.client import Client
from tests.harness import run_at_once

REPEATS = 199_000  # "word " each: 995,000 bytes with the rest, under the 1,048,576-byte limit
HUGE = "word " * (REPEATS // 2) + "a zebrafish was seen here. " + "word " * (REPEATS // 2)


def _add(daemon, body: str, title: str) -> str:
    with daemon.client(timeout=60) as client:
        return client.call("memory.add", {
            "body": body, "title": title, "type": "semantic", "scope": "global",
            "trust": "agent", "source": "test"})["id"]


def _search(daemon, query: str) -> dict:
    with daemon.client(timeout=30) as client:
        return client.call("memory.search", {"query": query, "limit": 5})


def test_a_search_of_a_word_a_huge_body_repeats_shows_a_short_passage_of_it(daemon):
    huge = _add(daemon, HUGE, "Pasted build output")
    small = _add(daemon, "the word of the day is backoff", "Short note")
    found = _search(daemon, "word")
    assert found["total"] == 2
    by_id = {r["id"]: r for r in found["records"]}
    assert set(by_id) == {huge, small}
    snippet = by_id[huge]["snippet"]
    assert "[word] [word]" in snippet and len(snippet) < 300
    assert by_id[small]["snippet"] == "the [word] of the day is backoff"
    middle = _search(daemon, "zebrafish")["records"]
    assert [r["id"] for r in middle] == [huge]
    assert "a [zebrafish] was seen here." in middle[0]["snippet"]
    # A title hit alone: the snippet is the body's start, and says the body goes on.
    titled = _search(daemon, "pasted")["records"][0]
    assert titled["snippet"].startswith("word word") and titled["snippet"].endswith("…")
    assert "[" not in titled["snippet"]
    browsed = daemon.call("memory.browse", query="zebrafish")
    assert [r["id"] for r in browsed["records"]] == [huge]
    assert "zebrafish was seen here" in browsed["records"][0]["excerpt"]


def test_searches_of_a_huge_body_leave_prompts_and_status_answering(daemon):
    huge = _add(daemon, HUGE, "Pasted build output")
    _add(daemon, "Use jittered backoff in the payment client", "Payment retries")

    def prompt() -> dict:
        with Client(daemon.socket, timeout=30) as client:
            return client.call("prompt.assemble", {"task": {"id": "W-2",
                                                            "title": "payment client retries"}})

    def status() -> dict:
        with Client(daemon.socket, timeout=30) as client:
            return client.call("status", {})

    calls = [lambda: _search(daemon, "word")] * 4 + [prompt, status]
    outcomes = run_at_once(calls)
    for outcome in outcomes[:4]:
        assert not isinstance(outcome, BaseException), outcome
        assert [r["id"] for r in outcome["records"]] == [huge]
        assert "[word]" in outcome["records"][0]["snippet"]
    assert not isinstance(outcomes[4], BaseException), outcomes[4]
    assert "jittered backoff" in outcomes[4]["text"]
    assert not isinstance(outcomes[5], BaseException), outcomes[5]
    assert daemon.stop() == 0
    assert "daemon.stopped" in daemon.log()
