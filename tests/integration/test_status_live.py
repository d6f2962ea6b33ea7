"""status answers its database figures from memory (read again after every commit): after a
mix of adds, lifecycle changes, a purge, the expiry job, a consolidation batch, inbox holds,
time passing and a restart, every figure equals a fresh count over the database file."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from minionsd.clock import iso
from tests.conftest import wait_for

CONFIG = "[engine]\ninbox_settle_ms = 50\nrescan_interval_s = 3600\n"


def fresh(home: Path, now: datetime) -> dict[str, Any]:
    """What status should say, counted straight from state.db and the inbox directory."""
    conn = sqlite3.connect(f"file:{home / 'engine' / 'state.db'}?mode=ro", uri=True)
    try:
        counts = dict.fromkeys(("active", "superseded", "retracted", "expired"), 0)
        for status, n in conn.execute(
                "SELECT CASE WHEN status = 'active' AND expires_at IS NOT NULL "
                "AND expires_at <= ? THEN 'expired' ELSE status END AS s, count(*) "
                "FROM memory_records GROUP BY s", (iso(now),)):
            counts[status] = n
        counters = dict(conn.execute("SELECT name, value FROM counters"))
        jobs = {job: {"at": at, "ok": bool(ok), "summary": summary}
                for job, at, ok, summary in conn.execute(
                    "SELECT job, last_at, ok, summary FROM job_runs")}
        held = {row[0] for row in conn.execute("SELECT name FROM inbox_holds")}
    finally:
        conn.close()
    notes = {p.name for p in (home / "notes" / "inbox").glob("*.md")}
    held |= {p.name for p in (home / "notes" / "inbox").glob("*.md")
             if "\nhold: true\n" in p.read_text()}  # held by its front matter
    return {"records": counts,
            "batches": int(counters.get("batches", 0)), "last_mode": counters.get("last_mode"),
            "last_at": counters.get("last_at"), "jobs": jobs,
            "pending": len(notes), "held": len(notes & held)}


def shown(status: dict[str, Any]) -> dict[str, Any]:
    return {"records": status["records"],
            "batches": status["consolidation"]["batches"],
            "last_mode": status["consolidation"]["last_mode"],
            "last_at": status["consolidation"]["last_at"],
            "jobs": {j["id"]: j["last_result"] for j in status["jobs"] if j["last_result"]},
            "pending": status["inbox"]["pending"], "held": status["inbox"]["held"]}


def add(daemon, n: int, expires_at: datetime | None = None) -> str:
    extra = {"expires_at": iso(expires_at)} if expires_at else {}
    return daemon.call("memory.add", body=f"status figure note {n}", type="semantic",
                       scope="global", trust="human", source=f"test:{n}", **extra)["id"]


def test_status_equals_a_fresh_count_after_every_kind_of_change(make_daemon, short_home):
    short_home.mkdir(parents=True, exist_ok=True)
    (short_home / "config.toml").write_text(CONFIG)
    clock = short_home.parent / "clock"
    now = datetime.now(UTC).replace(microsecond=0)
    clock.write_text(iso(now))
    env = {"MINIONS_TEST_CLOCK_FILE": str(clock)}
    daemon = make_daemon(env=env)

    def check() -> dict[str, Any]:
        status = daemon.call("status")
        assert shown(status) == fresh(short_home, now)
        return status

    check()
    ids = [add(daemon, n) for n in range(8)]
    add(daemon, 100, now - timedelta(hours=1))  # expired at read time already
    add(daemon, 101, now + timedelta(hours=1))
    add(daemon, 102, now + timedelta(hours=2))
    check()
    daemon.call("memory.retract", id=ids[0], reason="wrong")
    daemon.call("memory.supersede", id=ids[1], by=ids[2])
    daemon.call("memory.expire", id=ids[3])
    check()
    daemon.call("memory.pin", id=ids[3])
    daemon.call("memory.purge", id=ids[4], reason="test purge")
    assert check()["records"]["active"] == 7
    daemon.call("maintenance.run", job="expiry")  # stores the expired status; figures stay
    assert shown(check())["jobs"]["expiry"]["ok"] is True

    # Notes: one held by its front matter, one by inbox.hold, five that reach the threshold.
    daemon.call("inbox.submit", author="dallas", title="kept back", body="held note",
                hold=True)
    second = daemon.call("inbox.submit", author="dallas", title="held later",
                         body="held by a hold in state.db")["name"]
    daemon.call("inbox.hold", name=second, held=True)
    check()
    for n in range(5):
        daemon.call("inbox.submit", author="dallas", title=f"finding {n}",
                    body=f"The cache flush {n} must run after migrations.")
    wait_for(lambda: daemon.call("status")["consolidation"]["batches"] >= 1
             and daemon.call("status")["inbox"]["pending"] == 2, what="the batch consolidated")
    status = check()
    assert status["inbox"]["held"] == 2 and status["records"]["active"] > 7

    # Time passes with no write at all: a record's expiry comes due in status.
    before = status["records"]
    now += timedelta(minutes=90)
    clock.write_text(iso(now))
    after = check()["records"]
    assert after["expired"] == before["expired"] + 1 and after["active"] == before["active"] - 1

    daemon.stop()
    daemon = make_daemon(env=env)
    check()
    now += timedelta(hours=1)
    clock.write_text(iso(now))
    assert check()["records"]["expired"] == after["expired"] + 1


def fresh_inbox(home: Path) -> dict[str, int]:
    """The inbox figures counted straight from the directories and state.db, every note
    settled (the caller waited past inbox_settle_ms) and no batch open."""
    from minionsd.memory.inbox import is_candidate_name

    inbox, quarantine = home / "notes" / "inbox", home / "notes" / "quarantine"
    conn = sqlite3.connect(f"file:{home / 'engine' / 'state.db'}?mode=ro", uri=True)
    try:
        holds = {row[0] for row in conn.execute("SELECT name FROM inbox_holds")}
    finally:
        conn.close()
    notes = [p for p in inbox.iterdir()
             if is_candidate_name(p.name) and p.is_file() and not p.is_symlink()]
    held = [p for p in notes if p.name in holds
            or "\nhold: true\n" in p.read_bytes().decode("utf-8", "replace")]
    return {"pending": len(notes), "eligible": len(notes) - len(held), "held": len(held),
            "quarantined": sum(1 for p in quarantine.iterdir()
                               if not p.name.endswith(".reason.txt")
                               and not p.name.startswith("."))}


def test_inbox_figures_follow_files_other_processes_drop_edit_and_remove(make_daemon,
                                                                          short_home):
    """The inbox figures status keeps in memory follow every change another process makes
    while the daemon runs: notes written, rewritten in place, touched, renamed, removed,
    moved to quarantine, files the inbox ignores, a bad file it quarantines, holds."""
    import os
    import time

    short_home.mkdir(parents=True, exist_ok=True)
    (short_home / "config.toml").write_text(
        "[engine]\ninbox_settle_ms = 50\nrescan_interval_s = 3600\n"
        "auto_consolidate_memory = false\n")
    daemon = make_daemon()
    inbox, quarantine = short_home / "notes" / "inbox", short_home / "notes" / "quarantine"

    def note(name: str, text: str = "", hold: bool = False) -> Path:
        path = inbox / name
        front = "---\nauthor: dallas\nhold: true\n---\n" if hold else ""
        path.write_text(f"{front}# {name}\n\n{text or 'A note about the cache.'}\n")
        return path

    def check(settled: bool = True) -> dict[str, int]:
        if settled:
            time.sleep(0.15)  # past inbox_settle_ms: every note is settled
        got = daemon.call("status")["inbox"]
        want = fresh_inbox(short_home)
        if settled:
            assert got == want
        else:  # a note still settling is pending but not yet eligible
            assert got["pending"] == want["pending"]
        assert daemon.call("status")["inbox"] == got  # asked again, nothing moved
        return got

    assert check()["pending"] == 0
    note("a.md")
    check(settled=False)
    assert check()["eligible"] == 1
    for n in range(20):
        note(f"many-{n}.md")
    assert check()["pending"] == 21
    with open(inbox / "a.md", "r+", encoding="utf-8") as handle:  # the same file, in place
        handle.write("---\nhold: true\n---\n# a\n")
        handle.truncate()
    assert check()["held"] == 1
    os.utime(inbox / "many-0.md")  # touched: settling again, then eligible again
    check(settled=False)
    check()
    for n in range(1, 6):
        (inbox / f"many-{n}.md").unlink()
    assert check()["pending"] == 16
    os.rename(inbox / "many-6.md", inbox / "renamed.md")
    check()
    (inbox / "bad.md").write_bytes(b"# bad\n\n\xff\xfe not UTF-8\n")
    check(settled=False)
    assert check()["quarantined"] == 1  # quarantined by status's own look, as a scan does
    os.rename(inbox / "many-7.md", quarantine / "by-hand.md")
    assert check()["quarantined"] == 2
    (quarantine / "by-hand.md").unlink()
    assert check()["quarantined"] == 1
    (inbox / ".hidden.md").write_text("# hidden\n")
    (inbox / "draft.md.swp").write_text("# swap\n")
    (inbox / "folder.md").mkdir()
    note("later.md", hold=True)
    assert check()["held"] == 2
    daemon.call("inbox.hold", name="renamed.md", held=True)
    assert check()["held"] == 3
    daemon.call("inbox.hold", name="renamed.md", held=False)
    assert check()["held"] == 2
    daemon.call("inbox.submit", author="dallas", title="submitted", body="By the socket.")
    check(settled=False)
    assert check()["pending"] == 17
