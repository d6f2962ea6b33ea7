"""No ordinary path drops or hides a note: duplicate names, stdin bodies, quarantine, loose
front matter, concurrent knowledge authoring and the pruning of consolidation leftovers,
all through the real daemon, its socket, its files and the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from minionsd.client import Client, RpcError
from minionsd.text.markdown import parse_note
from tests.conftest import REPO, wait_for

T0 = "2030-01-01T00:00:00.000Z"


def _quiet_config(home: Path, extra: str = "") -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        "[engine]\ninbox_settle_ms = 0\nauto_consolidate_memory = false\n" + extra)


@pytest.fixture
def quiet(make_daemon, short_home):
    _quiet_config(short_home)
    return make_daemon()


@pytest.fixture
def clocked(make_daemon, short_home):
    _quiet_config(short_home)
    clock = short_home.parent / "clock.txt"
    clock.write_text(T0)
    daemon = make_daemon(env={"MINIONS_TEST_CLOCK_FILE": str(clock)})
    daemon.clock = clock
    return daemon


def ctl(home: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "minionsd.cli", "--home", str(home), *args],
                          input=stdin, capture_output=True, text=True, cwd=REPO, timeout=60)


# --- 9. concurrent knowledge.create ------------------------------------------------------------

def test_concurrent_knowledge_create_with_one_title_keeps_every_body(quiet):
    d = quiet
    rounds, width = 6, 6
    results: dict[int, dict] = {}
    errors: list[BaseException] = []

    def create(n: int, barrier: threading.Barrier) -> None:
        try:
            with Client(d.socket, timeout=60) as client:
                barrier.wait()
                results[n] = client.call("knowledge.create", {
                    "category": "conventions", "title": "Shared title",
                    "body": f"Body number {n} with its own words.", "author": "ripley"})
        except BaseException as exc:  # reported below with the call number
            errors.append(exc)

    for r in range(rounds):
        barrier = threading.Barrier(width)
        threads = [threading.Thread(target=create, args=(r * width + i, barrier))
                   for i in range(width)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == []
    assert len(results) == rounds * width
    paths = [r["path"] for r in results.values()]
    assert len(set(paths)) == len(paths)
    for n, result in results.items():
        text = (d.home / result["path"]).read_text()
        assert f"Body number {n} with" in text
        assert text.count("Body number") == 1
        record = d.call("memory.get", id=result["record_id"])
        assert f"Body number {n} with" in record["body"]
    leftovers = [p.name for p in (d.home / "knowledge" / "conventions").iterdir()
                 if ".new." in p.name or ".tmp." in p.name]
    assert leftovers == []


# --- 5. same name, different body -----------------------------------------------------------

def test_same_title_same_day_different_body_is_written_under_the_next_name(clocked):
    d = clocked
    bodies = ["Build failed in module m1.", "Build failed in module m2.",
              "Build failed in module m3."]
    made = [d.call("inbox.submit", body=b, author="dallas", title="Build failure")
            for b in bodies]
    assert [m["duplicate"] for m in made] == [False, False, False]
    stem = made[0]["name"].removesuffix(".md")
    assert stem.startswith("dallas-") and stem.endswith("-2030-01-01")
    assert [m["name"] for m in made] == [stem + ".md", stem + "-2.md", stem + "-3.md"]
    for m, body in zip(made, bodies, strict=True):
        assert body in (d.home / m["path"]).read_text()
    # An identical resubmission (a retry) of any of them is the duplicate, nothing written.
    again = d.call("inbox.submit", body=bodies[1], author="dallas", title="Build failure")
    assert again == made[1] | {"duplicate": True}
    untitled = [d.call("inbox.submit", body=f"Session summary: step {i} done", author="dallas")
                for i in (1, 2)]
    assert untitled[0]["name"] != untitled[1]["name"]
    assert len(list((d.home / "notes" / "inbox").glob("*.md"))) == 5
    # Consolidated names stay taken: a new body never reuses them, a retried one is still
    # known as a duplicate.
    d.call("consolidation.run", force=True)
    assert list((d.home / "notes" / "inbox").glob("*.md")) == []
    fourth = d.call("inbox.submit", body="Build failed in module m4.", author="dallas",
                    title="Build failure")
    assert fourth["name"] == made[0]["name"].removesuffix(".md") + "-4.md"
    retry = d.call("inbox.submit", body=bodies[0], author="dallas", title="Build failure")
    assert retry["duplicate"] is True and retry["name"] == made[0]["name"]
    # ... naming where the note is now: its archived copy
    assert retry["path"].startswith("notes/archive/") and (d.home / retry["path"]).is_file()
    assert len(d.call("memory.search", query="module")["records"]) == 3


def test_cli_note_with_a_reused_title_writes_every_note(quiet):
    home = quiet.home
    first = ctl(home, "note", "first summary", "--author", "dallas", "--title", "Summary")
    second = ctl(home, "note", "second summary", "--author", "dallas", "--title", "Summary")
    assert first.returncode == 0 and second.returncode == 0, second.stderr
    assert first.stdout.startswith("written: ") and second.stdout.startswith("written: ")
    assert first.stdout != second.stdout
    texts = sorted(p.read_text() for p in (home / "notes" / "inbox").glob("*.md"))
    assert [("first summary" in t, "second summary" in t) for t in texts] == [
        (True, False), (False, True)]


def test_storm_alert_written_once_when_a_crash_redoes_the_batch(make_daemon, short_home):
    _quiet_config(short_home)
    inbox = short_home / "notes" / "inbox"
    inbox.mkdir(parents=True)
    for i in range(4):
        (inbox / f"copy-{i}.md").write_text("The same storm text, copied again and again.\n")
    crashing = make_daemon(env={"MINIONS_TEST_CRASH_AT": "archive:2"})
    with pytest.raises((RpcError, ConnectionError, OSError)):
        crashing.call("consolidation.run", force=True)
    wait_for(lambda: crashing.proc.poll() is not None, what="the injected crash")
    alerts = sorted(p.name for p in inbox.glob("engine-*.md"))
    assert len(alerts) == 1  # written before the crash
    restarted = make_daemon()
    wait_for(lambda: not list(inbox.glob("copy-*.md")), what="the redo to archive the storm")
    assert restarted.call("status")["consolidation"]["circuit_breaks"] == 1
    assert sorted(p.name for p in inbox.glob("engine-*.md")) == alerts


# --- 6. note - reads stdin ------------------------------------------------------------------

def test_cli_note_dash_reads_the_body_from_stdin(quiet):
    home = quiet.home
    out = ctl(home, "--json", "note", "-", "--author", "dallas",
              stdin="text from a pipe\nsecond line\n")
    assert out.returncode == 0, out.stderr
    path = home / json.loads(out.stdout)["path"]
    meta, body = parse_note(path.read_text())
    assert body == "text from a pipe\nsecond line\n" and meta["author"] == "dallas"
    empty = ctl(home, "note", "-", "--author", "dallas", stdin="  \n")
    assert empty.returncode == 2
    assert "standard input" in empty.stderr and "note -" in empty.stderr
    assert len(list((home / "notes" / "inbox").glob("*.md"))) == 1


# --- 8. loose front matter ------------------------------------------------------------------

def test_unquoted_colon_title_is_consolidated_not_quarantined(quiet):
    d = quiet
    inbox = d.home / "notes" / "inbox"
    (inbox / "dallas-gotcha.md").write_text(
        "---\nagent: dallas\ntitle: Gotcha 3: module m7 needs setup\nimportance: high\n---\n\n"
        "Run the m7 setup script before the first build, or the build hangs.\n")
    (inbox / "bad-block.md").write_text("---\ntitle: a: b\nnot a key line\n---\n\nbody\n")
    result = d.call("consolidation.run", force=True)
    assert result["archived"] == ["notes/archive/" + result["archived"][0].rsplit("/", 1)[1]]
    assert "dallas-gotcha.md" in result["archived"][0]
    quarantine = d.home / "notes" / "quarantine"
    assert sorted(p.name for p in quarantine.iterdir()) == ["bad-block.md",
                                                             "bad-block.md.reason.txt"]
    found = d.call("memory.search", query="m7 setup script")["records"]
    assert [r["title"] for r in found] == ["Gotcha 3: module m7 needs setup"]
    assert found[0]["importance"] == 0.5 and found[0]["author"] == "dallas"
    kb = d.home / result["kb_entries"][0]
    meta, _ = parse_note(kb.read_text())
    assert meta["title"] == "Gotcha 3: module m7 needs setup" and "importance" not in meta
    log = d.log()
    assert "line by line" in log and "'importance' ignored" in log


# --- 7. quarantine is visible and reversible -------------------------------------------------

def test_quarantine_is_counted_listed_and_requeued(quiet):
    d = quiet
    inbox, quarantine = d.home / "notes" / "inbox", d.home / "notes" / "quarantine"
    assert d.call("status")["inbox"]["quarantined"] == 0
    (inbox / "broken.md").write_bytes(b"# Broken\n\xff\xfe not utf-8\n")
    (inbox / "taken.md").write_bytes(b"---\ntitle: [x\n- y\n---\nbad block\n")
    d.call("maintenance.run", job="rescan")
    assert d.call("status")["inbox"]["quarantined"] == 2
    listed = d.call("inbox.list", quarantined=True)["quarantined"]
    assert sorted(q["name"] for q in listed) == ["broken.md", "taken.md"]
    by_name = {q["name"]: q for q in listed}
    assert "UTF-8" in by_name["broken.md"]["reason"]
    assert by_name["taken.md"]["reason"].startswith("front matter cannot be parsed")
    assert all(q["at"].startswith("20") and q["at"].endswith("Z") for q in listed)
    assert "notes" in d.call("inbox.list") and "quarantined" not in d.call("inbox.list")
    shown = ctl(d.home, "inbox", "--quarantined")
    assert shown.returncode == 0 and "broken.md" in shown.stdout and "UTF-8" in shown.stdout
    # One line per file, even for a reason (a YAML error) that spans several lines.
    rows = shown.stdout.split("\n\n", 1)[1].splitlines()[1:]  # under the table's header
    assert sorted(line.split()[0] for line in rows) == \
        ["broken.md", "taken.md"]

    # Fixed in place, then requeued through the CLI.
    (quarantine / "broken.md").write_text("# Broken\n\nnow valid text\n")
    out = ctl(d.home, "inbox", "requeue", "broken.md")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "requeued: notes/inbox/broken.md"
    assert (inbox / "broken.md").read_text() == "# Broken\n\nnow valid text\n"
    assert not (quarantine / "broken.md").exists()
    assert not (quarantine / "broken.md.reason.txt").exists()
    assert d.call("status")["inbox"]["quarantined"] == 1

    # A name already taken in the inbox gets a free one; the inbox file is left alone.
    (inbox / "taken.md").write_text("# Someone else's note\n\nkept\n")
    (quarantine / "taken.md").write_text("# Taken\n\nfixed\n")
    moved = d.call("inbox.requeue", name="taken.md")
    assert moved == {"name": "taken-2.md", "path": "notes/inbox/taken-2.md"}
    assert (inbox / "taken.md").read_text() == "# Someone else's note\n\nkept\n"
    assert (inbox / "taken-2.md").read_text() == "# Taken\n\nfixed\n"
    assert d.call("status")["inbox"]["quarantined"] == 0
    assert ctl(d.home, "inbox", "--quarantined").stdout.strip() == "quarantine is empty"
    names = {n["name"] for n in d.call("inbox.list")["notes"]}
    assert names == {"broken.md", "taken.md", "taken-2.md"}


def test_requeue_refuses_missing_and_escaping_names(quiet):
    d = quiet
    quarantine = d.home / "notes" / "quarantine"
    quarantine.mkdir(parents=True, exist_ok=True)
    (d.home / "outside.md").write_text("not in quarantine")
    (quarantine / "x.md").write_text("x")
    (quarantine / "x.md.reason.txt").write_text("x.md: why\n")
    with pytest.raises(RpcError) as err:
        d.call("inbox.requeue", name="missing.md")
    assert err.value.code == -32001 and "missing.md" in err.value.detail
    for bad in ("../../outside.md", "/etc/passwd", ".hidden.md", "", "x.md.reason.txt", 7):
        with pytest.raises(RpcError) as err:
            d.call("inbox.requeue", name=bad)
        assert err.value.code == -32602, bad
    assert (d.home / "outside.md").exists() and (quarantine / "x.md").exists()
    missing = ctl(d.home, "inbox", "requeue", "missing.md")
    assert missing.returncode == 1 and "missing.md" in missing.stderr
    with pytest.raises(RpcError) as err:
        d.call("inbox.list", quarantined="yes")
    assert err.value.code == -32602 and "quarantined" in err.value.detail


# --- 15. retention prunes finished batches and old submissions ------------------------------

def _rows(home: Path, sql: str) -> list[tuple]:
    import sqlite3

    conn = sqlite3.connect(f"file:{home / 'engine' / 'state.db'}?mode=ro", uri=True)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def test_retention_prunes_finished_batches_and_submissions_by_age(clocked):
    d = clocked
    inbox = d.home / "notes" / "inbox"
    d.call("inbox.submit", body="The cache key must include the locale.", author="dallas")
    found = d.call("inbox.submit", body="Pin the compiler version.", author="dallas",
                   kind="finding", task="W-1", outcome="success")
    assert d.call("consolidation.run", force=True)["mode"] == "regex"
    for i in range(4):
        (inbox / f"storm-{i}.md").write_text("One storm text, copied again and again.\n")
    assert d.call("consolidation.run", force=True)["mode"] == "circuit_breaker"
    assert _rows(d.home, "SELECT count(*) FROM batches WHERE state = 'done'") == [(2,)]
    assert _rows(d.home, "SELECT count(*) FROM batch_notes") == [(6,)]
    submitted = _rows(d.home, "SELECT count(*) FROM inbox_submissions")[0][0]
    assert submitted == 3  # two notes and the storm alert

    report = d.call("maintenance.run", job="retention")["report"]
    assert (report["batches_pruned"], report["batch_notes_pruned"],
            report["submissions_pruned"]) == (0, 0, 0)

    d.clock.write_text("2030-01-09T00:00:00.000Z")  # past the 7 days kept
    fresh = d.call("inbox.submit", body="A note of the new day.", author="dallas")
    report = d.call("maintenance.run", job="retention")["report"]
    assert (report["batches_pruned"], report["batch_notes_pruned"],
            report["submissions_pruned"]) == (2, 6, 3)
    assert _rows(d.home, "SELECT count(*) FROM batch_notes") == [(0,)]
    assert _rows(d.home, "SELECT name FROM inbox_submissions") == [(fresh["name"],)]
    # The one-finding-per-task rule outlives the pruning.
    with pytest.raises(RpcError) as err:
        d.call("inbox.submit", body="Another finding.", author="ripley", kind="finding",
               task="W-1", outcome="success")
    assert err.value.code == -32002 and found["name"] in err.value.detail
    assert d.call("status")["consolidation"]["batches"] == 2
    # The records and files the batches produced are untouched.
    assert d.call("memory.search", query="compiler version")["total"] == 1
    fresh_again = d.call("inbox.submit", body="A note of the new day.", author="dallas")
    assert fresh_again == fresh | {"duplicate": True}


def test_cli_note_dash_refuses_stdin_that_is_not_utf8(quiet):
    """A Latin-1 body is refused with the byte named, whatever the locale: never a
    traceback (strict locales) and never a note silently rewritten with U+FFFD (C.UTF-8)."""
    home = quiet.home
    for io_encoding in ("utf-8:strict", "utf-8:surrogateescape"):
        out = subprocess.run(
            [sys.executable, "-m", "minionsd.cli", "--home", str(home), "note", "-",
             "--author", "dallas"], input="caf\xe9 au lait\n".encode("latin-1"),
            capture_output=True, cwd=REPO, timeout=60,
            env={**os.environ, "PYTHONIOENCODING": io_encoding})
        stderr = out.stderr.decode()
        assert out.returncode == 2, stderr
        assert "not valid UTF-8" in stderr and "byte 3" in stderr
        assert "Traceback" not in stderr
    assert list((home / "notes" / "inbox").glob("*.md")) == []
    bom = ctl(home, "--json", "note", "-", "--author", "dallas", stdin="\ufeffwith a BOM\n")
    assert bom.returncode == 0, bom.stderr
    assert parse_note((home / json.loads(bom.stdout)["path"]).read_text())[1] == "with a BOM\n"


def test_unquoted_colon_beside_empty_values_tabs_and_comments_is_consolidated(quiet):
    """An agent's block with an unquoted colon and an empty `project:`, a tab after a colon
    and a comment line is read, not quarantined; the empty key is ignored with a warning."""
    d = quiet
    (d.home / "notes" / "inbox" / "dallas-storm.md").write_text(
        "---\r\n# written by the build agent\r\nagent:\tdallas\r\ntitle: Fix: retry storm\r\n"
        "project:\r\ntags:\r\n---\r\n\r\nBack off exponentially when the queue answers 429.\r\n")
    result = d.call("consolidation.run", force=True)
    assert len(result["archived"]) == 1 and result["archived"][0].endswith("dallas-storm.md")
    assert not (d.home / "notes" / "quarantine").exists() or \
        list((d.home / "notes" / "quarantine").iterdir()) == []
    found = d.call("memory.search", query="back off exponentially")["records"]
    assert [(r["title"], r["author"]) for r in found] == [("Fix: retry storm", "dallas")]
    assert "'project' ignored" in d.log()


def test_bad_files_with_long_names_are_quarantined_and_can_be_requeued(quiet):
    """A bad file with a name near the 255-byte limit is quarantined with its reason (under a
    name short enough for `.reason.txt` beside it) without failing the scan, and any name a
    file can have comes back with inbox.requeue, under a free name that still fits."""
    d = quiet
    inbox, quarantine = d.home / "notes" / "inbox", d.home / "notes" / "quarantine"
    long_name = "dallas-" + "b" * 240 + ".md"  # 250 bytes
    (inbox / long_name).write_bytes(b"caf\xe9 latin-1\n")
    d.call("maintenance.run", job="rescan")
    [listed] = d.call("inbox.list", quarantined=True)["quarantined"]
    assert listed["name"].startswith("dallas-bbbb") and listed["name"].endswith(".md")
    assert "not valid UTF-8" in listed["reason"]
    reason = quarantine / (listed["name"] + ".reason.txt")
    assert reason.read_text().startswith(long_name + ": ")
    assert d.call("status")["inbox"]["quarantined"] == 1

    by_hand = "carol-" + "c" * 241 + ".md"  # 250 bytes, put there by a person
    (quarantine / by_hand).write_text("moved here by hand\n")
    (inbox / by_hand).write_text("---\nhold: true\n---\nanother note under that name\n")
    moved = d.call("inbox.requeue", name=by_hand)
    assert moved["name"] != by_hand and len(moved["name"].encode()) <= 255
    assert (inbox / moved["name"]).read_text() == "moved here by hand\n"
    assert (inbox / by_hand).read_text().endswith("another note under that name\n")
    (quarantine / listed["name"]).write_text("caf\u00e9 fixed\n")
    assert ctl(d.home, "inbox", "requeue", listed["name"]).returncode == 0
    assert d.call("inbox.list", quarantined=True)["quarantined"] == []
    too_long = ctl(d.home, "inbox", "requeue", "c" * 256 + ".md")
    assert too_long.returncode == 1 and "255 bytes" in too_long.stderr


def test_a_note_with_a_255_byte_name_is_consolidated_and_start_up_survives(quiet):
    """The archive name adds the date to the inbox name; for a name near the file system's
    255-byte limit that must still fit, or every consolidation run fails and the open batch
    in the journal stops the daemon from starting again."""
    d = quiet
    inbox = d.home / "notes" / "inbox"
    names = ["dallas-" + "v" * 245 + ".md", "dallas-" + "é" * 122 + ".md"]  # 255, 254 bytes
    for n, name in enumerate(names):
        (inbox / name).write_text(f"Zebra crossing note {n} with a very long file name.\n")
    result = d.call("consolidation.run", force=True)
    assert result["notes"] == 2 and list(inbox.glob("*.md")) == []
    for rel in result["archived"]:
        assert (d.home / rel).is_file() and len(rel.rsplit("/", 1)[1].encode()) <= 255
    (inbox / names[0]).write_text("A second note under the same long name.\n")
    again = d.call("consolidation.run", force=True)
    assert again["notes"] == 1 and again["archived"][0] not in result["archived"]
    assert d.stop() == 0
    d.start()
    assert d.call("status")["inbox"]["pending"] == 0


def test_a_file_name_that_is_not_utf8_is_quarantined_under_a_readable_name(quiet):
    """A file name that is not UTF-8 cannot be journalled (SQLite text is UTF-8): it used to
    fail every consolidation run. It is quarantined under a UTF-8 name, with a reason naming
    the original bytes, and can be requeued by that name; other notes go on."""
    d = quiet
    inbox, quarantine = d.home / "notes" / "inbox", d.home / "notes" / "quarantine"
    raw = os.path.join(os.fsencode(inbox), b"dallas-caf\xe9-notes.md")
    with open(raw, "wb") as handle:
        handle.write(b"Giraffes need tall fences.\n")
    (inbox / "dallas-fine.md").write_text("Zebras need wide gates.\n")
    result = d.call("consolidation.run", force=True)
    assert [p.rsplit("/", 1)[1] for p in result["archived"]] == \
        [result["archived"][0].rsplit("/", 1)[1]] and "dallas-fine" in result["archived"][0]
    [listed] = d.call("inbox.list", quarantined=True)["quarantined"]
    assert listed["name"] == "dallas-caf\ufffd-notes.md"
    assert "file name is not valid UTF-8" in listed["reason"] and "\\xe9" in listed["reason"]
    assert d.call("status")["inbox"]["quarantined"] == 1
    assert ctl(d.home, "inbox", "requeue", listed["name"]).returncode == 0
    again = d.call("consolidation.run", force=True)
    assert again["notes"] == 1 and list(quarantine.iterdir()) == []
    assert d.call("memory.search", query="giraffes tall fences")["total"] == 1


def test_submit_refuses_a_note_over_the_inbox_size_limit_instead_of_quarantining_it(
        make_daemon, short_home):
    """inbox.submit used to answer `written` for a note its own inbox then quarantined as too
    large; the caller is told instead, with the limit, and nothing is written."""
    _quiet_config(short_home)
    (short_home / "config.toml").write_text(
        (short_home / "config.toml").read_text() + "inbox_max_note_bytes = 2000\n")
    d = make_daemon()
    with pytest.raises(RpcError) as err:
        d.call("inbox.submit", body="word " * 500, author="dallas", title="Too big")
    assert err.value.code == -32602 and "inbox_max_note_bytes (2000)" in err.value.detail
    out = ctl(d.home, "note", "-", "--author", "dallas", stdin="word " * 500)
    assert out.returncode == 1 and "inbox_max_note_bytes" in out.stderr
    assert list((d.home / "notes" / "inbox").iterdir()) == []
    assert d.call("inbox.submit", body="small enough", author="dallas")["duplicate"] is False


def test_concurrent_requeues_of_one_file_move_it_once(quiet):
    """Two requeues of the same file used to both link it into the inbox (the note then
    existed twice) and one of them failed with -32603; now one moves it, the others are
    -32001."""
    d = quiet
    inbox, quarantine = d.home / "notes" / "inbox", d.home / "notes" / "quarantine"
    quarantine.mkdir(parents=True, exist_ok=True)
    width, rounds = 8, 60
    for r in range(rounds):
        name = f"race-{r}.md"
        (quarantine / name).write_text(f"---\nhold: true\n---\nrace {r}\n")
        codes: list[object] = []
        barrier = threading.Barrier(width)

        def requeue(name: str = name, barrier: threading.Barrier = barrier,
                    codes: list[object] = codes) -> None:
            with Client(d.socket, timeout=60) as client:
                barrier.wait()
                try:
                    client.call("inbox.requeue", name=name)
                    codes.append("moved")
                except RpcError as exc:
                    codes.append(exc.code)

        threads = [threading.Thread(target=requeue) for _ in range(width)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        copies = sorted(p.name for p in inbox.glob(f"race-{r}*.md"))
        assert copies == [name] and sorted(codes, key=str) == \
            [-32001] * (width - 1) + ["moved"], (r, copies, codes)
