"""Knowledge authoring, pinned context and the maintenance jobs through the socket, with an
injected clock where time matters."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from minionsd.client import RpcError

T0 = "2030-01-01T00:00:00.000Z"


@pytest.fixture
def clocked(make_daemon, short_home):
    short_home.mkdir(parents=True)
    clock = short_home.parent / "clock.txt"
    clock.write_text(T0)
    (short_home / "config.toml").write_text(
        "[engine]\ninbox_settle_ms = 0\nauto_consolidate_memory = false\n"
        "agent_memory_max_entries = 2\narchive_max_files = 3\n"
        "[agents.dallas]\nname = \"Dallas\"\n")
    daemon = make_daemon(env={"MINIONS_TEST_CLOCK_FILE": str(clock)})
    daemon.clock = clock
    return daemon


def test_knowledge_create_list_get(clocked):
    d = clocked
    made = d.call("knowledge.create", category="conventions", title="Retry policy",
                  body="Always use the retry helper with jitter.", author="ripley",
                  project="atlas", tags=["retries"])
    assert made["path"] == "knowledge/conventions/2030-01-01-ripley-retry-policy.md"
    text = (d.home / made["path"]).read_text()
    assert text.startswith("---\n") and text.count("\n---\n") == 1
    assert "# Retry policy" in text
    again = d.call("knowledge.create", category="conventions", title="Retry policy",
                   body="A second, different entry.", author="ripley")
    assert again["path"].endswith("retry-policy-2.md")
    assert (d.home / made["path"]).read_text() == text  # never overwritten
    record = d.call("memory.get", id=made["record_id"])
    assert record["trust"] == "human" and record["scope"] == "project:atlas"  # SPEC 3.6
    assert record["source"] == made["path"]
    listed = d.call("knowledge.list", category="conventions")["entries"]
    assert {e["path"] for e in listed} == {made["path"], again["path"]}
    assert listed[0]["title"] in ("Retry policy",)
    got = d.call("knowledge.get", path=made["path"])
    assert got["category"] == "conventions" and "jitter" in got["body"]
    for bad in ("../config.toml", "/etc/passwd", "knowledge/../config.toml",
                "knowledge/conventions/x\0.md", "notes.md"):
        with pytest.raises(RpcError) as err:
            d.call("knowledge.get", path=bad)
        assert err.value.code == -32602
    # Each refusal names what is wrong with the path.
    for bad, said in (("knowledge/../config.toml", "'knowledge/../config.toml' has a '..' "
                                                   "component"),
                      ("knowledge/conventions/x\0.md", "must not contain a NUL character"),
                      ("knowledge//x.md", "has an empty component"),
                      ("knowledge/.hidden.md", "component '.hidden.md' starts with '.'")):
        with pytest.raises(RpcError) as err:
            d.call("knowledge.get", path=bad)
        assert said in err.value.detail, err.value.detail
    with pytest.raises(RpcError) as err:
        d.call("knowledge.get", path="knowledge/reviews/missing.md")
    assert err.value.code == -32001
    with pytest.raises(RpcError) as err:
        d.call("knowledge.create", category="general", title="x", body="y", author="a")
    assert err.value.code == -32602 and "category" in err.value.detail


def test_pinned_set_append_get(clocked):
    d = clocked
    assert d.call("pinned.get") == {"text": "", "code_units": 0}
    assert d.call("pinned.set", text="🔴 freeze deploys") == {"code_units": 17}
    d.call("pinned.append", text="Staging is down\nUse prod-canary until Friday.")
    got = d.call("pinned.get")
    assert got["text"].startswith("🔴 freeze deploys")
    assert "### Staging is down\n\nUse prod-canary until Friday.\n\n" \
           "*Pinned by human on 2030-01-01*" in got["text"]
    d.call("pinned.set", text="")
    d.call("pinned.append", text="only line")
    assert d.call("pinned.get")["text"].startswith("# Pinned Context")
    with pytest.raises(RpcError):
        d.call("pinned.append", text="   ")


def test_expiry_job_with_clock(clocked):
    d = clocked
    rid = d.call("memory.add", body="feature flag X is on until the migration lands",
                 type="semantic", scope="global", trust="system", source="test",
                 expires_at="2030-01-01T01:00:00Z")["id"]
    assert d.call("memory.get", id=rid)["status"] == "active"
    d.clock.write_text("2030-01-01T02:00:00.000Z")
    assert d.call("memory.get", id=rid)["status"] == "expired"  # before the job runs
    assert d.call("memory.search", query="migration")["total"] == 0
    report = d.call("maintenance.run", job="expiry")
    assert report["report"] == {"expired": 1}
    assert d.call("maintenance.run", job="expiry")["report"] == {"expired": 0}
    jobs = {j["id"]: j for j in d.call("status")["jobs"]}
    assert set(jobs) == {"kb_sweep", "retention", "expiry", "rescan", "reindex"}
    assert jobs["expiry"]["last_result"]["ok"] is True
    assert jobs["rescan"]["next_run_at"] is not None


def test_kb_sweep_imports_edits_and_dedupes(clocked):
    d = clocked
    # Swept files are pruned by file age against "now", so keep the clock near real time.
    d.clock.write_text(time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()))
    folder = d.home / "knowledge" / "conventions"
    (folder / "hand-written.md").write_text("# Logging\n\nUse structlog key-value events.\n")
    report = d.call("maintenance.run", job="kb_sweep")["report"]
    assert report["imported"] == 1
    assert d.call("memory.search", query="structlog")["total"] == 1
    (folder / "hand-written.md").write_text("# Logging\n\nUse structlog, never f-strings.\n"
                                            "See LogEmitter.\n")
    edited = (folder / "hand-written.md").read_text()
    report = d.call("maintenance.run", job="kb_sweep")["report"]
    assert report["updated"] == 1 and report["imported"] == 0
    assert d.call("memory.search", query="emitter")["total"] == 1  # aux parts follow edits
    assert d.call("memory.search", query="f-strings")["total"] == 1
    assert d.call("memory.search", query="structlog")["total"] == 1
    dup = folder / "copy.md"
    dup.write_text(edited)
    old = time.time() - 1000
    os.utime(dup, (old, old))
    pinned = folder / "pinned-copy.md"
    pinned.write_text("---\npinned: true\n---\n" + edited)
    os.utime(pinned, (old - 10, old - 10))
    report = d.call("maintenance.run", job="kb_sweep")["report"]
    assert [s["path"] for s in report["duplicates_swept"]] == ["knowledge/conventions/copy.md"]
    swept = d.home / "knowledge" / "_swept" / "copy.md"
    assert swept.read_text().startswith("<!-- swept: ") and "hash-duplicate of" in \
        swept.read_text()
    assert pinned.exists() and not dup.exists()
    (folder / "hand-written.md").unlink()
    report = d.call("maintenance.run", job="kb_sweep")["report"]
    assert "knowledge/conventions/hand-written.md" in report["missing_files"]


def test_kb_sweep_keeps_the_same_text_written_for_two_scopes(clocked):
    """An entry for everyone and an entry for one project with the same body are two entries:
    sweeping the global one would hide it from every other project's sessions."""
    d = clocked
    d.clock.write_text(time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()))
    body = "Deploys need the VPN on."
    everyone = d.call("knowledge.create", category="conventions", title="VPN for deploys",
                      body=body, author="ripley")
    atlas = d.call("knowledge.create", category="conventions", title="VPN for deploys",
                   body=body, author="ripley", project="atlas")
    copy = d.home / "knowledge" / "conventions" / "older-copy.md"
    copy.write_text((d.home / everyone["path"]).read_text())
    old = time.time() - 1000
    os.utime(copy, (old, old))
    report = d.call("maintenance.run", job="kb_sweep")["report"]
    # Only the older copy of the global entry goes; each scope keeps its own.
    assert [s["path"] for s in report["duplicates_swept"]] == \
        ["knowledge/conventions/older-copy.md"]
    assert (d.home / everyone["path"]).exists() and (d.home / atlas["path"]).exists()
    listed = {e["path"] for e in d.call("knowledge.list", project="web")["entries"]}
    assert everyone["path"] in listed and atlas["path"] not in listed
    assert d.call("memory.get", id=everyone["record_id"])["status"] == "active"


def test_retention_and_archive_bounds(clocked):
    d = clocked
    inbox = d.home / "notes" / "inbox"
    for i in range(4):
        path = inbox / f"dallas-n{i}.md"
        path.write_text(f"---\nagent: dallas\n---\n# Entry {i}\n\nunique{i} finding body\n")
        stamp = time.time() - 100 + i
        os.utime(path, (stamp, stamp))
        d.call("consolidation.run", force=True)
    notebook = d.home / "knowledge" / "agents" / "dallas.md"
    assert notebook.read_text().count("<!-- minions:entry=") == 4
    report = d.call("maintenance.run", job="retention")["report"]
    assert report["notebooks_trimmed"] == {"dallas": 2}
    text = notebook.read_text()
    assert "unique3" in text and "unique2" in text and "unique0" not in text
    assert report["archive_deleted"] == 1
    archived = [p for p in (d.home / "notes" / "archive").iterdir()
                if p.name != "notes-history.md"]
    assert len(archived) == 3 and not any("dallas-n0" in p.name for p in archived)


def test_reindex_rebuilds_and_imports(clocked):
    d = clocked
    d.call("memory.add", body="vector clock skew", type="semantic", scope="global",
           trust="human", source="t")
    Path(d.home / "knowledge" / "reviews" / "r.md").write_text("# Review\n\nclock skew again\n")
    import sqlite3

    with sqlite3.connect(d.home / "engine" / "state.db") as conn:  # a row from before 0005
        conn.execute("UPDATE memory_records SET term_counts = NULL")
    report = d.call("maintenance.run", job="reindex")["report"]
    assert report["records_indexed"] == 1 and report["integrity_ok"] is True
    assert report["aux_refreshed"] == 1
    assert report["kb_imported"] == 1
    assert d.call("memory.search", query="skew")["total"] == 2
    with pytest.raises(RpcError) as err:
        d.call("maintenance.run", job="defrag")
    assert err.value.code == -32602


def _notebook_with_old_entries(home: Path, count: int) -> Path:
    from minionsd.memory.consolidate import notebooks

    text = None
    for i in range(count):
        entry = notebooks.render_entry(entry_id=f"e{i}", date=f"2029-0{1 + i % 9}-10",
                                       title=f"Old {i}", body=f"old fact number {i}",
                                       source=f"notes/archive/x{i}.md")
        text = notebooks.append_entry(text, "dallas", entry)
    path = home / "knowledge" / "agents" / "dallas.md"
    path.write_text(text)
    return path


def test_notebook_summary_is_conservative(make_daemon, short_home, fake_anthropic):
    short_home.mkdir(parents=True)
    clock = short_home.parent / "clock.txt"
    clock.write_text(T0)
    (short_home / "config.toml").write_text(
        "[engine]\nagent_memory_summary_enabled = true\nagent_memory_summary_threshold = 3\n"
        "agent_memory_summary_days = 30\n"
        f'[llm]\nbase_url = "{fake_anthropic.url}"\ntimeout_s = 2\nmax_retries = 0\n'
        "[agents.dallas]\nname = \"Dallas\"\n")
    d = make_daemon(env={"MINIONS_TEST_CLOCK_FILE": str(clock), "ANTHROPIC_API_KEY": "k"})
    path = _notebook_with_old_entries(d.home, 5)
    fake_anthropic.set_mode("error", status=500)
    report = d.call("maintenance.run", job="retention")["report"]
    assert report["summaries"]["dallas"].startswith("kept originals")
    assert path.read_text().count("<!-- minions:entry=") == 5
    fake_anthropic.set_mode("text", text="- old facts 0 to 4, condensed")
    report = d.call("maintenance.run", job="retention")["report"]
    assert report["summaries"] == {"dallas": 5}
    text = path.read_text()
    assert text.count("<!-- minions:entry=") == 1 and "old facts 0 to 4, condensed" in text
    assert "<entry>" in fake_anthropic.requests[-1].prompt


def test_kb_sweep_llm_plan(make_daemon, short_home, fake_anthropic):
    import json

    short_home.mkdir(parents=True)
    (short_home / "config.toml").write_text(
        "[engine]\nkb_sweep_llm = true\n"
        f'[llm]\nbase_url = "{fake_anthropic.url}"\ntimeout_s = 2\nmax_retries = 0\n')
    d = make_daemon(env={"ANTHROPIC_API_KEY": "k"})
    kb = d.home / "knowledge"
    (kb / "project-notes" / "a.md").write_text("# Queue design\n\nThe architecture of queues.\n")
    (kb / "project-notes" / "b.md").write_text("# Nothing\n\nNo changes needed.\n")
    (kb / "project-notes" / "c.md").write_text("---\npinned: true\n---\n# Keep\n\nPinned.\n")
    paths = sorted(p.name for p in (kb / "project-notes").iterdir())
    assert paths == ["a.md", "b.md", "c.md"]
    plan = {"duplicates": [], "remove": [{"index": i, "reason": "boilerplate"} for i in range(3)
                                          if i != 0],
            "reclassify": [{"index": 0, "to": "architecture", "reason": "design"}]}
    fake_anthropic.set_mode("text", text=json.dumps(plan))
    report = d.call("maintenance.run", job="kb_sweep")["report"]
    assert report["llm"]["batches"] == 1
    moved = {r["from"]: r["to"] for r in report["llm"]["reclassified"]}
    removed = {r["path"] for r in report["llm"]["removed"]}
    assert moved == {"knowledge/project-notes/a.md": "knowledge/architecture/a.md"}
    assert (kb / "project-notes" / "c.md").exists()  # pinned entries are never touched
    assert len(removed) == 1 and removed <= {"knowledge/project-notes/b.md"}
    record = d.call("memory.search", query="queues")["records"][0]
    assert record["source"] == "knowledge/architecture/a.md"


def test_a_knowledge_file_whose_name_is_not_utf8_does_not_stop_the_sweep(daemon):
    """SQLite text is UTF-8, so such a file cannot be indexed: it is reported (by a readable
    name) and skipped, and every other hand-written entry still reaches SQL, by the sweep
    and by a reindex."""
    d = daemon
    folder = d.home / "knowledge" / "reviews"
    folder.mkdir(parents=True, exist_ok=True)
    with open(os.path.join(os.fsencode(folder), b"okapi-caf\xe9.md"), "wb") as handle:
        handle.write(b"# Okapis\n\nOkapis are shy.\n")
    (folder / "zebra.md").write_text("# Zebras\n\nZebras cross at the striped gate.\n")
    for job in ("kb_sweep", "reindex"):
        report = d.call("maintenance.run", job=job)["report"]
        assert d.call("memory.search", query="striped gate")["total"] == 1, job
    sweep = d.call("maintenance.run", job="kb_sweep")["report"]
    assert sweep["unreadable"] == ["knowledge/reviews/okapi-caf\\xe9.md"], report
    assert "file name is not valid UTF-8" in d.log()
