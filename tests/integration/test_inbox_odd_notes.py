"""Notes a newcomer wrote that the inbox got wrong, against a real daemon: templated notes
taken for a duplicate storm, front matter with no body, a file time ahead of the clock, a
directory or FIFO named *.md, a title with a line break, and the same text for another
project taken for a duplicate (SPEC §2, §3.1)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from minionsd.client import RpcError
from tests.conftest import wait_for
from tests.integration.test_cli import clean_env, run_ctl
from tests.integration.test_consolidation import drop, home_with

QUIET = "auto_consolidate_memory = false\n"


def records_with(daemon, word: str) -> list[dict]:
    return daemon.call("memory.search", query=word)["records"]


def test_templated_notes_of_one_length_are_not_a_storm(make_daemon, short_home):
    """Five CI reports share a 240-character preamble and their length, and differ after it:
    five different contents, so five records (the old fingerprint, the first 200 characters
    plus the length, archived them all as a storm, never to be recalled)."""
    home = home_with(short_home, QUIET)
    daemon = make_daemon()
    preamble = ("Nightly build report for the payments service. All steps ran on the shared "
                "runner pool; see the attached logs for timing. ") * 2
    for i in range(1, 6):
        drop(home / "notes" / "inbox", f"cibot-report-{i}.md",
             f"---\nauthor: cibot\n---\n{preamble}\nDistinct finding number {i}: "
             f"stormtail{i} uses port 80{i}{i}\n", age_s=30 - i)
    result = daemon.call("consolidation.run", force=True)
    assert result["mode"] != "circuit_breaker" and result["notes"] == 5
    assert result["records_upserted"] == 5
    assert daemon.call("status")["consolidation"]["circuit_breaks"] == 0
    for i in range(1, 6):
        assert len(records_with(daemon, f"stormtail{i}")) == 1, i
    # Identical copies still are a storm.
    for i in range(4):
        drop(home / "notes" / "inbox", f"copy-{i}.md", "one text, copied\n", age_s=10 - i)
    assert daemon.call("consolidation.run", force=True)["mode"] == "circuit_breaker"


def test_front_matter_with_no_body_is_quarantined_never_recorded(make_daemon, short_home):
    home = home_with(short_home, QUIET)
    daemon = make_daemon()
    inbox = home / "notes" / "inbox"
    drop(inbox, "fm-only.md", "---\ntitle: only front matter fmonlytoken\n---\n", age_s=5)
    drop(inbox, "fm-blank.md", "---\ntitle: blank body\nsecret_note: internal\n---\n\n \n",
         age_s=5)
    drop(inbox, "real.md", "---\ntitle: real one\n---\nA body fmrealtoken.\n", age_s=5)
    result = daemon.call("consolidation.run", force=True)
    assert result["notes"] == 1 and result["archived"][0].endswith("real.md")
    assert records_with(daemon, "fmonlytoken") == [] and records_with(daemon, "internal") == []
    listed = {q["name"]: q["reason"] for q in
              daemon.call("inbox.list", quarantined=True)["quarantined"]}
    assert set(listed) == {"fm-only.md", "fm-blank.md"}
    assert all("front matter but no body" in reason for reason in listed.values())


def test_a_kb_file_with_only_front_matter_is_skipped_with_a_warning(make_daemon, short_home):
    home = home_with(short_home, QUIET)
    daemon = make_daemon()
    kb = home / "knowledge" / "conventions"
    kb.mkdir(parents=True, exist_ok=True)
    (kb / "handmade-fmonly.md").write_text(
        "---\ntitle: Hand made fmonlykb\nauthor: root\nsecret_note: internal only\n---\n")
    (kb / "handmade-ok.md").write_text("---\ntitle: Hand made okkb\n---\nThe okkb body.\n")
    report = daemon.call("maintenance.run", job="kb_sweep")
    assert "knowledge/conventions/handmade-fmonly.md" in str(report)
    wait_for(lambda: records_with(daemon, "okkb"), what="the good file's record")
    assert records_with(daemon, "fmonlykb") == [] and records_with(daemon, "secret_note") == []
    warnings = daemon.call("status")["warnings"]
    assert any(w["file"] == "knowledge/conventions/handmade-fmonly.md"
               and "front matter but no body" in w["reason"] for w in warnings), warnings


def test_a_note_dated_in_the_future_is_taken_and_named_in_status(make_daemon, short_home):
    home = home_with(short_home, QUIET)
    daemon = make_daemon()
    path = drop(home / "notes" / "inbox", "root-futuremtime.md",
                "future mtime note futuremtimetoken\n")
    ahead = time.time() + 3 * 365 * 86400
    os.utime(path, (ahead, ahead))

    def listed() -> dict:
        return daemon.call("inbox.list")["notes"][0]

    wait_for(lambda: listed()["eligible"], what="the future-dated note to settle")
    assert listed()["author"] == "root"
    warnings = daemon.call("status")["warnings"]
    mine = [w for w in warnings if w["file"] == "notes/inbox/root-futuremtime.md"]
    assert len(mine) == 1 and "ahead of the clock" in mine[0]["reason"], warnings
    result = daemon.call("consolidation.run", force=True)
    assert result["notes"] == 1
    assert len(records_with(daemon, "futuremtimetoken")) == 1
    wait_for(lambda: not any(w["file"].startswith("notes/inbox/")
                             for w in daemon.call("status")["warnings"]),
             what="the warning to go with the file")


def test_a_lone_note_dated_in_the_future_is_consolidated_by_the_wait_bound(make_daemon,
                                                                           short_home):
    """No --force: the wait bound (inbox_max_wait_s) counts from when the daemon first saw
    the note, not from its mtime years ahead."""
    home = home_with(short_home, "inbox_max_wait_s = 1\n")
    daemon = make_daemon()
    path = drop(home / "notes" / "inbox", "root-future-alone.md",
                "a lone future note futurealonetoken\n")
    ahead = time.time() + 86400
    os.utime(path, (ahead, ahead))
    wait_for(lambda: records_with(daemon, "futurealonetoken"), timeout=30,
             what="the future-dated note to be consolidated by the wait bound")


@pytest.mark.parametrize("kind", ["directory", "FIFO"])
def test_a_directory_or_fifo_named_md_is_named_once(make_daemon, short_home, kind):
    home = home_with(short_home, QUIET)
    daemon = make_daemon()
    odd = home / "notes" / "inbox" / "adir.md"
    odd.mkdir() if kind == "directory" else os.mkfifo(odd)

    def warned() -> list[dict]:
        return [w for w in daemon.call("status")["warnings"] if w["file"] ==
                "notes/inbox/adir.md"]

    wait_for(warned, what="a warning naming the odd file")
    assert f"is a {kind}, not a note file" in warned()[0]["reason"]
    assert daemon.call("inbox.list")["notes"] == []
    assert daemon.call("inbox.list", quarantined=True)["quarantined"] == []
    for _ in range(3):  # named once, however often the inbox is looked at
        daemon.call("inbox.list")
    assert daemon.log_path.read_text().count("inbox.file_warning") == 1
    odd.rmdir() if kind == "directory" else odd.unlink()
    wait_for(lambda: not warned(), what="the warning to go with the file")


@pytest.mark.parametrize("title", ["two\nlines", "cr\rbreak", "sep\u2028arated"])
def test_a_title_with_a_line_break_is_refused_naming_title(make_daemon, short_home, title):
    home_with(short_home, QUIET)
    daemon = make_daemon()
    for method, params in (("inbox.submit", {"body": "x", "author": "dallas"}),
                           ("knowledge.create", {"category": "conventions", "body": "x",
                                                 "author": "dallas"})):
        with pytest.raises(RpcError) as refused:
            daemon.call(method, title=title, **params)
        assert refused.value.code == -32602 and refused.value.data["param"] == "title"
        assert "one line" in str(refused.value)
    assert list((daemon.home / "notes" / "inbox").glob("*.md")) == []
    env = clean_env(MINIONS_HOME=str(daemon.home))
    for args in (("note", "x", "--title", title),
                 ("kb", "add", "--category", "conventions", "--title", title)):
        result = run_ctl(*args, env=env, stdin="x\n")
        assert result.returncode != 0 and "title" in result.stderr and "one line" in \
            result.stderr, (args, result.stderr)
    # A trailing line break is no second line.
    assert daemon.call("inbox.submit", body="x", author="dallas",
                       title="fine\n")["duplicate"] is False


def test_the_same_text_for_another_project_is_another_note(make_daemon, short_home):
    home_with(short_home, QUIET)
    daemon = make_daemon()
    params = {"body": "Deploys need the VPN on", "title": "VPN for deploys", "author": "root"}
    first = daemon.call("inbox.submit", **params)
    scoped = daemon.call("inbox.submit", project="atlas", **params)
    assert scoped["duplicate"] is False and scoped["name"] != first["name"]
    assert daemon.call("inbox.submit", project="atlas", **params) == scoped | {
        "duplicate": True}
    daemon.call("consolidation.run", force=True)
    scopes = sorted(r["scope"] for r in records_with(daemon, "VPN"))
    assert scopes == ["global", "project:atlas"]
    # Once archived, a duplicate names the archived copy: a path that exists.
    again = daemon.call("inbox.submit", **params)
    assert again["duplicate"] is True and again["name"] == first["name"]
    assert again["path"].startswith("notes/archive/")
    assert (daemon.home / again["path"]).is_file()
    env = clean_env(MINIONS_HOME=str(daemon.home))
    out = run_ctl("note", params["body"], "--title", params["title"], env=env)
    assert out.returncode == 0, out.stderr
    shown = out.stdout.strip().removeprefix("duplicate, not written: ")
    assert shown != out.stdout.strip() and (Path(daemon.home) / shown).is_file()


def test_front_matter_that_cannot_name_an_author_or_kind_is_passed_over(make_daemon,
                                                                        short_home):
    """A dropped file's `agent: ../../etc`, an HTML tag as `author` and `kind: nonsense` are
    not taken as they are (inbox.submit refuses all three): the file name names the author,
    the kind is `note`, and notes.md's heading never shows the tag or the path."""
    home = home_with(short_home, QUIET)
    daemon = make_daemon()
    inbox = home / "notes" / "inbox"
    drop(inbox, "dana-odd-identity.md",
         "---\nagent: ../../etc\nauthor: <img src=x onerror=alert(1)>\nkind: nonsense\n---\n"
         "Oddidentitytoken: the cache key includes the tenant id.\n", age_s=5)
    assert daemon.call("consolidation.run", force=True)["notes"] == 1
    [found] = records_with(daemon, "oddidentitytoken")
    record = daemon.call("memory.get", id=found["id"])
    assert record["author"] == "dana"
    assert record["meta"]["kind"] == "note"
    notes = (home / "notes.md").read_text()
    assert "../../etc" not in notes and "<img" not in notes
