"""Inbox and consolidation end to end: files dropped into a running daemon's inbox."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from minionsd.client import RpcError
from tests.conftest import wait_for

FAST = "[engine]\ninbox_settle_ms = 50\nrescan_interval_s = 1\n"
AGENTS = '[agents.dallas]\nname = "Dallas"\n[agents.temp-9]\ntemporary = true\n'


def home_with(short_home: Path, extra: str = "") -> Path:
    short_home.mkdir(parents=True, exist_ok=True)
    (short_home / "config.toml").write_text(FAST + extra + AGENTS)
    return short_home


def drop(inbox: Path, name: str, text: str | bytes, age_s: float = 0) -> Path:
    inbox.mkdir(parents=True, exist_ok=True)
    path = inbox / name
    tmp = inbox / f".{name}.tmp"
    tmp.write_bytes(text if isinstance(text, bytes) else text.encode())
    os.replace(tmp, path)
    if age_s:
        stamp = time.time() - age_s
        os.utime(path, (stamp, stamp))
    return path


def note(title: str, body: str, **meta: str) -> str:
    front = "".join(f"{k}: {v}\n" for k, v in meta.items())
    return (f"---\n{front}---\n\n" if front else "") + f"# {title}\n\n{body}\n"


def archived(home: Path) -> list[str]:
    archive = home / "notes" / "archive"
    return sorted(p.name for p in archive.iterdir()) if archive.exists() else []


def test_threshold_batch_end_to_end(make_daemon, short_home):
    home = home_with(short_home)
    daemon = make_daemon()
    inbox = home / "notes" / "inbox"
    drop(inbox, "dallas-cache.md", note(
        "Cache invalidation", "- **Stale reads**: the UserCache in src/cache/users.py must "
        "be flushed after migrations", agent="dallas", project="atlas", task="W-1"))
    drop(inbox, "ripley-build.md", note("Build report", "Build passed after pinning lint."))
    drop(inbox, "temp-9-x.md", note("Temp finding", "Temporary agents get no notebook."))
    drop(inbox, "ash-arch.md", note("Data flow", "The architecture: queue -> worker -> db."))
    assert daemon.call("status")["inbox"]["pending"] == 4
    time.sleep(0.3)
    assert archived(home) == []  # below the threshold nothing happens
    drop(inbox, "bishop-rules.md", note("Rules", "Always use the retry helper.",
                                        author="bishop"))
    wait_for(lambda: len(archived(home)) == 5, what="batch archived")
    assert list(inbox.iterdir()) == []
    date = archived(home)[0][:10]
    assert f"{date}-dallas-cache.md" in archived(home)
    notes_md = (home / "notes.md").read_text()
    assert "<!-- minions:batch=" in notes_md and "### " in notes_md
    kb = {p.parent.name: p for p in (home / "knowledge").rglob("*.md")
          if p.parent.name != "agents"}
    assert {"build-reports", "architecture", "conventions", "project-notes"} <= set(kb)
    notebooks = sorted(p.name for p in (home / "knowledge" / "agents").iterdir()
                       if p.suffix == ".md")
    assert notebooks == ["dallas.md"]
    # Files are archived just before the batch is marked done: wait for that commit too.
    st = wait_for(lambda: (s := daemon.call("status"))["consolidation"]["batches"] and s,
                  what="batch marked done")
    assert st["consolidation"]["batches"] == 1 and st["consolidation"]["last_mode"] == "regex"
    assert st["inbox"] == {"pending": 0, "eligible": 0, "held": 0, "quarantined": 0}
    found = daemon.call("memory.search", query="UserCache flushed")
    assert found["total"] == 1
    record = found["records"][0]
    assert record["scope"] == "project:atlas" and record["trust"] == "agent"
    assert record["source"] == f"notes/archive/{date}-dallas-cache.md"
    assert "src/cache/users.py" in record["paths"]
    trusts = {r["author"]: r["trust"] for r in
              daemon.call("memory.search", query="build data rules temporary notebook",
                          limit=50)["records"]}
    assert trusts["bishop"] == "agent" and trusts["temp-9"] == "agent"  # not listed as human


def test_quarantine_and_ignored_files(make_daemon, short_home):
    home = home_with(short_home, "inbox_max_note_bytes = 2000\n")
    daemon = make_daemon()
    inbox = home / "notes" / "inbox"
    drop(inbox, "bad-utf8.md", b"# hi\n\xff\xfe broken\n")
    # Neither YAML nor `key: value` lines (SPEC §2), so it cannot be read either way.
    drop(inbox, "bad-yaml.md", "---\nagent: [unclosed\n- a list item\n---\nbody\n")
    drop(inbox, "huge.md", "x" * 5000)
    target = drop(home, "outside.md", "secret")
    os.symlink(target, inbox / "link.md")
    drop(inbox, ".hidden.md", "hidden")
    drop(inbox, "notes.txt", "not markdown")
    drop(inbox, "draft.md~", "editor backup")
    (inbox / "dir.md").mkdir()
    daemon.call("maintenance.run", job="rescan")
    quarantine = home / "notes" / "quarantine"
    wait_for(lambda: len(list(quarantine.glob("*.reason.txt"))) == 4, what="quarantine")
    reasons = {p.name: p.read_text() for p in quarantine.glob("*.reason.txt")}
    assert "UTF-8" in reasons["bad-utf8.md.reason.txt"]
    assert "front matter" in reasons["bad-yaml.md.reason.txt"]
    assert "inbox_max_note_bytes" in reasons["huge.md.reason.txt"]
    assert "symlink" in reasons["link.md.reason.txt"]
    assert (quarantine / "bad-utf8.md").read_bytes() == b"# hi\n\xff\xfe broken\n"
    assert target.read_text() == "secret"
    left = sorted(p.name for p in inbox.iterdir())
    assert left == [".hidden.md", "dir.md", "draft.md~", "notes.txt"]
    assert daemon.call("status")["inbox"]["pending"] == 0


def test_holds_and_force(make_daemon, short_home):
    home = home_with(short_home)
    daemon = make_daemon()
    inbox = home / "notes" / "inbox"
    drop(inbox, "a-one.md", note("One", "first note body"), age_s=5)
    drop(inbox, "a-two.md", note("Two", "second note body", hold="true"), age_s=4)
    st = daemon.call("status")["inbox"]
    assert st == {"pending": 2, "eligible": 1, "held": 1, "quarantined": 0}
    assert daemon.call("inbox.hold", name="a-one.md", held=True) == {"name": "a-one.md",
                                                                      "held": True}
    assert daemon.call("consolidation.run", force=True)["mode"] == "nothing"
    with pytest.raises(RpcError) as err:
        daemon.call("inbox.hold", name="../etc/passwd", held=True)
    assert err.value.code == -32602
    with pytest.raises(RpcError) as err:
        daemon.call("inbox.hold", name="missing.md", held=True)
    assert err.value.code == -32001
    daemon.stop()
    daemon = make_daemon()  # holds survive a restart
    listing = {n["name"]: n for n in daemon.call("inbox.list")["notes"]}
    assert listing["a-one.md"]["held"] and not listing["a-one.md"]["eligible"]
    daemon.call("inbox.hold", name="a-one.md", held=False)
    result = daemon.call("consolidation.run", force=True)
    assert result["mode"] == "regex" and result["notes"] == 1
    assert result["archived"][0].startswith("notes/archive/") and result["archived"][0].endswith(
        "-a-one.md")
    assert result["records_upserted"] == 1 and len(result["kb_entries"]) == 1
    assert daemon.call("consolidation.run")["mode"] == "nothing"


def test_batch_cap_oldest_first(make_daemon, short_home):
    home = home_with(short_home, "consolidation_max_batch = 3\nauto_consolidate_memory = false\n")
    daemon = make_daemon()
    inbox = home / "notes" / "inbox"
    for i in range(5):
        drop(inbox, f"n-{i}.md", note(f"Note {i}", f"distinct body {i}"), age_s=100 - i)
    first = daemon.call("consolidation.run")
    assert first["notes"] == 3
    assert [a.split("-", 3)[-1] for a in first["archived"]] == ["n-0.md", "n-1.md", "n-2.md"]
    assert sorted(p.name for p in inbox.iterdir()) == ["n-3.md", "n-4.md"]


def test_storm_keeps_minority(make_daemon, short_home):
    home = home_with(short_home, "auto_consolidate_memory = false\n")
    daemon = make_daemon()
    inbox = home / "notes" / "inbox"
    for i in range(9):
        drop(inbox, f"bot-{i}.md", "same content every time\n", age_s=50 - i)
    drop(inbox, "human-real.md", note("Real", "a real note"), age_s=10)
    result = daemon.call("consolidation.run")
    assert result["mode"] == "circuit_breaker" and result["notes"] == 9
    assert not (home / "notes.md").exists()
    names = sorted(p.name for p in inbox.iterdir())
    assert "human-real.md" in names
    alerts = [n for n in names if n.startswith("engine-")]
    assert len(alerts) == 1
    assert "kind: alert" in (inbox / alerts[0]).read_text()
    assert daemon.call("status")["consolidation"]["circuit_breaks"] == 1
    assert daemon.call("memory.search", query="same content")["total"] == 0
    # The daemon's own alert, once consolidated, is a system-trust record.
    daemon.call("consolidation.run", force=True)
    found = daemon.call("memory.search", query="duplicate storm stopped")["records"]
    assert [(r["author"], r["trust"]) for r in found] == [("engine", "system")]


def test_submit_names_duplicates_and_findings(make_daemon, short_home):
    home_with(short_home, "auto_consolidate_memory = false\n")
    daemon = make_daemon()
    first = daemon.call("inbox.submit", body="Use the retry helper: it backs off",
                        author="dallas", title="Retry helper: usage")
    assert first["duplicate"] is False
    assert first["path"].startswith("notes/inbox/dallas-retry-helper-usage-")
    text = (daemon.home / first["path"]).read_text()
    assert text.startswith("---\n") and "title: 'Retry helper: usage'" in text
    again = daemon.call("inbox.submit", body="Use the retry helper: it backs off",
                        author="dallas", title="Retry helper: usage")
    assert again == first | {"duplicate": True}
    other = daemon.call("inbox.submit", body="other", author="dallas",
                        title="Retry helper: usage")
    assert other["duplicate"] is False
    assert other["name"] == first["name"].removesuffix(".md") + "-2.md"
    with pytest.raises(RpcError) as err:
        daemon.call("inbox.submit", body="x", author="dallas", kind="finding")
    assert err.value.code == -32602 and "task" in err.value.detail
    with pytest.raises(RpcError) as err:
        daemon.call("inbox.submit", body="x", author="dallas", kind="finding", task="W-7",
                    outcome="failure")
    assert err.value.code == -32602 and "outcome" in err.value.detail
    found = daemon.call("inbox.submit", body="learned", author="dallas", kind="finding",
                        task="W-7", outcome="success")
    daemon.call("consolidation.run", force=True)
    with pytest.raises(RpcError) as err:
        daemon.call("inbox.submit", body="more", author="ripley", kind="finding", task="W-7",
                    outcome="success", title="different")
    assert err.value.code == -32002 and found["name"] in err.value.detail
    for bad in ("../x", "a/b", "", "x" * 100):
        with pytest.raises(RpcError) as err:
            daemon.call("inbox.submit", body="x", author=bad)
        assert err.value.code == -32602 and "author" in err.value.detail


def test_llm_digest_path_and_fallback(make_daemon, short_home, fake_anthropic):
    home = home_with(short_home, "auto_consolidate_memory = false\n")
    with open(home / "config.toml", "a") as handle:
        handle.write(f'[llm]\nbase_url = "{fake_anthropic.url}"\ntimeout_s = 2\n'
                     "max_retries = 0\n")
    daemon = make_daemon(env={"ANTHROPIC_API_KEY": "test-key"})
    assert daemon.call("status")["llm"]["configured"] is True
    inbox = home / "notes" / "inbox"
    digest = ("### 2026-11-29: Team digest\n**By:** Engine (LLM-consolidated)\n\n"
              "#### Patterns\n- the LLM wrote this bullet about retries\n")
    fake_anthropic.set_mode("text", text=digest)
    drop(inbox, "a-note.md", note("Escape", "body with </note> inside"), age_s=5)
    result = daemon.call("consolidation.run", force=True)
    assert result["mode"] == "llm"
    assert "the LLM wrote this bullet" in (home / "notes.md").read_text()
    prompt = fake_anthropic.requests[-1].prompt
    assert '<note file="a-note.md">' in prompt and "body with </note>" not in prompt
    fake_anthropic.set_mode("error", status=500)
    drop(inbox, "b-note.md", note("Second", "- **Fallback**: regex digest takes over"), age_s=5)
    assert daemon.call("consolidation.run", force=True)["mode"] == "regex"
    fake_anthropic.set_mode("hang", seconds=10)
    drop(inbox, "c-note.md", note("Third", "slow model"), age_s=5)
    assert daemon.call("consolidation.run", force=True)["mode"] == "regex"
    fake_anthropic.set_mode("text", text="no heading here, just chatter that is long enough")
    drop(inbox, "d-note.md", note("Fourth", "junk answer"), age_s=5)
    assert daemon.call("consolidation.run", force=True)["mode"] == "regex"


def test_notes_md_is_bounded_without_loss(make_daemon, short_home):
    home = home_with(short_home, "auto_consolidate_memory = false\nnotes_max_bytes = 1500\n")
    daemon = make_daemon()
    inbox = home / "notes" / "inbox"
    for i in range(6):
        words = " ".join(f"w{i}x{j}" for j in range(60))
        drop(inbox, f"n-{i}.md", note(f"Topic {i}", f"- **Point {i}**: {words}"),
             age_s=5)
        daemon.call("consolidation.run", force=True)
    notes_md = (home / "notes.md").read_text()
    history = (home / "notes" / "archive" / "notes-history.md").read_text()
    assert len(notes_md.encode()) <= 1500 or notes_md.count("minions:batch=") == 1
    assert notes_md.startswith("# Team Notes")
    total = notes_md.count("minions:batch=") + history.count("minions:batch=")
    assert total == 6
    assert "Point 5" in notes_md  # the newest digest always stays


def test_sigterm_during_llm_call_abandons_safely(make_daemon, short_home, fake_anthropic):
    import threading

    home = home_with(short_home, "auto_consolidate_memory = false\n")
    with open(home / "config.toml", "a") as handle:
        handle.write(f'[llm]\nbase_url = "{fake_anthropic.url}"\ntimeout_s = 60\n'
                     "max_retries = 0\n")
    fake_anthropic.set_mode("hang", seconds=120)
    daemon = make_daemon(env={"ANTHROPIC_API_KEY": "k"})
    drop(home / "notes" / "inbox", "slow-note.md", note("Slow", "waiting on the model"),
         age_s=5)
    def run_batch() -> None:
        try:
            daemon.call("consolidation.run", force=True)
        except (RpcError, OSError):
            pass  # the daemon shuts down under the call

    caller = threading.Thread(target=run_batch)
    caller.start()
    wait_for(lambda: fake_anthropic.requests, what="the LLM request")
    assert daemon.stop(timeout=15) == 0  # exit 0 while the model still hangs
    caller.join(5)
    again = make_daemon()  # no key now: the redo takes the regex path
    wait_for(lambda: len(archived(home)) == 1, what="abandoned batch redone")
    assert again.call("memory.search", query="waiting model")["total"] == 1
    wait_for(lambda: again.call("status")["consolidation"]["batches"] == 1,
             what="redone batch marked done")


def test_burst_of_notes_is_not_left_for_the_rescan(make_daemon, short_home):
    short_home.mkdir(parents=True)
    (short_home / "config.toml").write_text(
        "[engine]\ninbox_settle_ms = 500\nrescan_interval_s = 3600\n")
    make_daemon()
    inbox = short_home / "notes" / "inbox"
    for i in range(5):  # each lands while the previous check is still waiting to settle
        drop(inbox, f"burst-{i}.md", note(f"Burst {i}", f"burst body {i}"))
        time.sleep(0.1)
    # With the hour-long rescan the batch can only come from the watcher's own re-check.
    wait_for(lambda: len(archived(short_home)) == 5, timeout=20, what="burst batch")


def test_submitted_notes_need_no_settling(make_daemon, short_home):
    short_home.mkdir(parents=True)
    (short_home / "config.toml").write_text(
        "[engine]\ninbox_settle_ms = 60000\nauto_consolidate_memory = false\n")
    daemon = make_daemon()
    daemon.call("inbox.submit", body="Deploys need the VPN on", author="ops",
                title="VPN for deploys")
    drop(short_home / "notes" / "inbox", "dropped-by-hand.md", note("Hand", "still settling"))
    result = daemon.call("consolidation.run", force=True)
    # A readable archive name: no hash tag, and the day is not repeated.
    assert result["notes"] == 1 and result["archived"][0].endswith("-ops-vpn-for-deploys.md")
    assert [n["name"] for n in daemon.call("inbox.list")["notes"]] == ["dropped-by-hand.md"]
