"""memory.retrieve end to end: a task that names a date or a person ranks the records written
then, or by them, first among equals."""

from __future__ import annotations

from pathlib import Path

from tests.integration.test_recall import add, configure


def test_a_named_day_and_a_named_author_lift_their_records(make_daemon,
                                                           short_home: Path) -> None:
    configure(short_home, "[engine]\nmemory_retrieval_min_score_ratio = 0")
    d = make_daemon()
    body = "The cache eviction job dropped the session keys."
    ids = {when: add(d, body + f" ({n})", author="bob", created_at=when)
           for n, when in enumerate(("2026-01-10T09:00:00Z", "2026-03-02T09:00:00Z",
                                     "2026-05-20T09:00:00Z"))}
    alice = add(d, body + " (3)", author="alice", created_at="2026-01-10T09:00:00Z")

    def first(title: str) -> str:
        task = {"id": "W-1", "title": title}
        return d.call("memory.retrieve", task=task)["selected"][0]["id"]

    assert first("Why did the cache eviction job drop the session keys?") == ids[
        "2026-05-20T09:00:00Z"]  # the newest, by recency alone
    assert first("Why did the cache eviction job drop the session keys on 2 March 2026?") == \
        ids["2026-03-02T09:00:00Z"]
    assert first("What did Alice find about the cache eviction job and the session keys?") == \
        alice
