"""Notes the index cannot hold whole (a 12,000-character CJK word is over FTS5's 32 KiB token
limit) are indexed in part: consolidation, memory.add and a restart with such a note in the
journal all work, and the record is found by its other words. A note whose record cannot be
written at all (a fault put into the database here with a real trigger) is set aside with a
reason; the rest of its batch goes on and the daemon starts."""

from __future__ import annotations

import itertools
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minionsd.text.fence import scrub_surrogates
from tests.conftest import wait_for
from tests.integration.test_consolidation import archived, drop, home_with, note
from tests.unit.test_awkward_unicode import AWKWARD, AWKWARD_SPACED

_NOTE_NUMBERS = itertools.count()
_DAEMONS: dict[Path, Any] = {}
# One word of 12,000 CJK characters: 36,000 UTF-8 bytes, cut by FTS5 mid-character.
CJK_WORD = "".join(chr(0x4E00 + (i * 7919) % 20000) for i in range(12_000))
MARKER = "zebrafinch"


def cjk_body() -> str:
    return f"The {MARKER} runbook holds a long quote.\n\n{CJK_WORD}\n\nEnd of quote.\n"


def add(daemon, body: str, **extra):
    params = {"body": body, "type": "semantic", "scope": "global", "trust": "human",
              "source": "test:unindexable"} | extra
    return daemon.call("memory.add", **params)


def _found_by_marker(daemon, marker: str = MARKER) -> list[dict]:
    return daemon.call("memory.search", query=marker)["records"]


def test_inbox_note_with_a_huge_cjk_word_consolidates_and_is_searchable(make_daemon,
                                                                         short_home):
    home = home_with(short_home, "auto_consolidate_memory = false\n")
    daemon = make_daemon()
    inbox = home / "notes" / "inbox"
    drop(inbox, "dallas-quote.md", note("Quote", cjk_body()), age_s=5)
    drop(inbox, "ripley-other.md", note("Other", "An ordinary note about lint."), age_s=5)
    result = daemon.call("consolidation.run", force=True)
    assert result["notes"] == 2
    assert len(archived(home)) == 2
    [record] = _found_by_marker(daemon)
    assert CJK_WORD in daemon.call("memory.get", id=record["id"])["body"]
    # Retrieval finds it (a 36 KB body is too big for the 8 KiB pack: it is packed cut).
    retrieved = daemon.call("memory.retrieve",
                            task={"id": "W-1", "title": f"Update the {MARKER} runbook"})
    assert retrieved["candidates"] == 1
    assert [s["id"] for s in retrieved["selected"]] == [record["id"]]
    assert f"memory_get {record['id']} shows the rest]" in retrieved["text"]
    # And the next batch is not held up.
    drop(inbox, "ash-next.md", note("Next", "A later note about caching."), age_s=5)
    assert daemon.call("consolidation.run", force=True)["notes"] == 1


def test_memory_add_of_a_huge_cjk_word(daemon):
    added = add(daemon, cjk_body(), title="Long quote")
    record = daemon.call("memory.get", id=added["id"])
    assert record["body"] == cjk_body()
    assert [r["id"] for r in _found_by_marker(daemon)] == [added["id"]]
    # The long word itself is indexed (cut where FTS5 cuts it), and searching it works.
    assert daemon.call("memory.search", query=CJK_WORD[:50])["total"] in (0, 1)
    retrieved = daemon.call("memory.retrieve", task={"id": "W-2", "title": f"{MARKER} quote"})
    assert retrieved["candidates"] == 1 and retrieved["bytes"] <= 8192
    assert [s["id"] for s in retrieved["selected"]] == [added["id"]]  # packed cut
    assert daemon.call("status")["records"]["active"] == 1


def test_daemon_restarted_with_a_journalled_cjk_note_starts(make_daemon, short_home):
    home = home_with(short_home, "auto_consolidate_memory = false\n")
    drop(home / "notes" / "inbox", "dallas-quote.md", note("Quote", cjk_body()), age_s=5)
    doomed = make_daemon(env={"MINIONS_TEST_CRASH_AT": "sql:1"})
    with pytest.raises(Exception):  # noqa: B017 - the daemon dies mid-call
        doomed.call("consolidation.run", force=True)
    doomed.proc.wait(10)
    assert doomed.proc.returncode == -9
    daemon = make_daemon()  # the journalled batch is redone at start-up
    wait_for(lambda: _found_by_marker(daemon), what="record of the resumed batch")
    assert daemon.call("consolidation.run", force=True)["mode"] == "nothing"
    assert archived(home) and not list((home / "notes" / "inbox").glob("*.md"))


def _poison(db: Path) -> None:
    """A real fault: SQLite refuses records whose body holds 'poisonpill'."""
    conn = sqlite3.connect(db)
    try:
        conn.execute("""CREATE TRIGGER test_poison BEFORE INSERT ON memory_records
                        WHEN new.body LIKE '%poisonpill%'
                        BEGIN SELECT RAISE(ABORT, 'poisonpill refused'); END""")
        conn.commit()
    finally:
        conn.close()


def _quarantined(home: Path) -> dict[str, str]:
    quarantine = home / "notes" / "quarantine"
    if not quarantine.is_dir():
        return {}
    return {p.name: (quarantine / f"{p.name}.reason.txt").read_text()
            for p in quarantine.iterdir() if not p.name.endswith(".reason.txt")}


def test_a_note_whose_record_cannot_be_written_is_set_aside(make_daemon, short_home):
    home = home_with(short_home, "auto_consolidate_memory = false\n")
    daemon = make_daemon()
    daemon.stop()
    _poison(home / "engine" / "state.db")
    daemon = make_daemon()
    inbox = home / "notes" / "inbox"
    drop(inbox, "dallas-bad.md", note("Bad", "This poisonpill note cannot be stored."), age_s=5)
    drop(inbox, "ripley-good.md", note("Good", f"The {MARKER} note is fine."), age_s=5)
    result = daemon.call("consolidation.run", force=True)
    assert result["notes"] == 2
    assert len(_found_by_marker(daemon)) == 1
    [(name, reason)] = _quarantined(home).items()
    assert "dallas-bad" in name and "poisonpill refused" in reason
    assert "poisonpill" in (home / "notes" / "quarantine" / name).read_text()
    assert daemon.call("consolidation.run", force=True)["mode"] == "nothing"


def test_start_up_sets_aside_a_journalled_note_it_cannot_store(make_daemon, short_home):
    home = home_with(short_home, "auto_consolidate_memory = false\n")
    inbox = home / "notes" / "inbox"
    drop(inbox, "dallas-bad.md", note("Bad", "This poisonpill note cannot be stored."), age_s=5)
    drop(inbox, "ripley-good.md", note("Good", f"The {MARKER} note is fine."), age_s=5)
    doomed = make_daemon(env={"MINIONS_TEST_CRASH_AT": "sql:1"})
    with pytest.raises(Exception):  # noqa: B017 - the daemon dies mid-call
        doomed.call("consolidation.run", force=True)
    doomed.proc.wait(10)
    _poison(home / "engine" / "state.db")
    daemon = make_daemon()  # resumes the batch: the good note is stored, the bad set aside
    wait_for(lambda: _found_by_marker(daemon), what="record of the resumed batch")
    wait_for(lambda: _quarantined(home), what="bad note set aside")
    assert daemon.call("consolidation.run", force=True)["mode"] == "nothing"
    assert sorted(n[11:] for n in archived(home)) == ["dallas-bad.md", "ripley-good.md"]


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(body=AWKWARD_SPACED, title=AWKWARD, n=st.integers(0, 10**9))
def test_memory_add_of_awkward_unicode_through_the_socket(daemon, body: str, title: str,
                                                          n: int) -> None:
    """Any text a JSON client can send (lone surrogates included) is stored, read back with
    U+FFFD for the surrogates, found by its other words, and never breaks retrieval."""
    marker = f"marker{n}qz"
    text = f"{body} {marker}"
    added = add(daemon, text, title=title[:500])
    record = daemon.call("memory.get", id=added["id"])
    assert record["body"] == scrub_surrogates(text)
    assert added["id"] in [r["id"] for r in _found_by_marker(daemon, marker)]
    retrieved = daemon.call("memory.retrieve", task={"id": "W-3", "title": marker})
    assert retrieved["fallback_reason"] != "error" and retrieved["candidates"] >= 1


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(body=AWKWARD_SPACED)
def test_no_inbox_note_blocks_consolidation(make_daemon, short_home, body: str) -> None:
    """Whatever a note holds, consolidation.run succeeds and the inbox drains: the note is
    archived and findable by its other words, or quarantined with a reason (a file that is
    not UTF-8, here from lone surrogates written as such)."""
    home = short_home
    daemon = _DAEMONS.get(home)  # the fixtures live for the whole test: one daemon for all
    if daemon is None:
        home_with(home, "auto_consolidate_memory = false\n")
        daemon = _DAEMONS[home] = make_daemon()
    n = next(_NOTE_NUMBERS)
    marker = f"marker{n}qz"
    name = f"ash-awkward-{n}.md"
    drop(home / "notes" / "inbox", name,
         f"# Awkward {n}\n\n{body}\n\n{marker}\n".encode("utf-8", "surrogatepass"), age_s=5)
    result = daemon.call("consolidation.run", force=True)
    assert not list((home / "notes" / "inbox").glob("*.md"))
    if name in _quarantined(home):
        assert result["notes"] == 0
    else:
        assert result["notes"] == 1
        assert _found_by_marker(daemon, marker)
