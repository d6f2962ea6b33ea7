"""One file, one record (SPEC §3.7 v3; issue 20 items 4 to 7), through a running daemon.

A copied entry is a record of its own; an empty or partial `entry_id` binds nothing; a path
that comes back after its record was retracted gets a new active record; jobs running beside a
consolidation batch never make second records of its entries; the watcher never follows a
symlink; an edit of a purged record's entry reaches SQL.
"""

from __future__ import annotations

import os
import re
import threading

import pytest
from filelock import FileLock

from minionsd.client import RpcError
from tests.conftest import wait_for
from tests.integration.test_consolidation import home_with


def _records(daemon, query: str) -> list[dict]:
    return daemon.call("memory.search", query=query,
                       status=["active", "retracted", "superseded", "expired"],
                       limit=100)["records"]


def _sweep(daemon) -> dict:
    return daemon.call("maintenance.run", job="kb_sweep")["report"]


def test_a_copied_entry_is_a_new_record_not_a_takeover(make_daemon, short_home):
    home = home_with(short_home, "auto_consolidate_memory = false\n")
    daemon = make_daemon()
    daemon.call("inbox.submit", author="ripley", title="Quince cache warmup",
                body="The quince cache warms on start-up from ops/warm.sh.")
    daemon.call("consolidation.run", force=True)
    (original,) = _records(daemon, "quince cache")
    entry = next((home / "knowledge" / "project-notes").glob("*.md"))
    assert re.search(r"^entry_id: [0-9a-f]{16}$", entry.read_text(), re.M)
    # A copy used as a template: same entry_id, new text.
    copy = entry.with_name("2026-12-01-ripley-damson-template.md")
    copy.write_text(entry.read_text().replace("quince cache warms on start-up",
                                              "quince template for damson notes"))
    _sweep(daemon)
    found = {r["id"]: r for r in _records(daemon, "quince")}
    assert len(found) == 2
    assert found[original["id"]]["body"] == original["body"]
    (new_id,) = set(found) - {original["id"]}
    assert found[new_id]["source"] == str(copy.relative_to(home))
    assert "damson" in found[new_id]["body"] and found[new_id]["status"] == "active"


def test_an_empty_or_partial_entry_id_binds_nothing(make_daemon, short_home):
    home = home_with(short_home, "auto_consolidate_memory = false\n")
    daemon = make_daemon()
    daemon.call("inbox.submit", author="ripley", title="Plum queue",
                body="The plum queue drains nightly.")
    daemon.call("consolidation.run", force=True)
    (original,) = _records(daemon, "plum queue")
    entry_id = re.search(r"^entry_id: ([0-9a-f]{16})$",
                         next((home / "knowledge" / "project-notes").glob("*.md")).read_text(),
                         re.M).group(1)
    directory = home / "knowledge" / "conventions"
    for n, value in enumerate(('""', entry_id[:8], "'%'")):
        (directory / f"hand-{n}.md").write_text(
            f"---\nentry_id: {value}\n---\n\n# Plum rule {n}\n\nThe plum rule number {n}.\n")
    _sweep(daemon)
    found = _records(daemon, "plum")
    assert len(found) == 4
    assert next(r for r in found if r["id"] == original["id"])["body"] == original["body"]


def test_a_path_that_comes_back_gets_a_new_active_record(daemon):
    made = daemon.call("knowledge.create", category="conventions", author="ripley",
                       title="Damson naming", body="Damson services are named after rivers.")
    path = daemon.home / made["path"]
    path.unlink()
    wait_for(lambda: daemon.call("memory.get", id=made["record_id"])["status"] == "retracted",
             what="the watcher retracting the deleted entry's record")
    again = daemon.call("knowledge.create", category="conventions", author="ripley",
                        title="Damson naming", body="Damson services are named after lakes.")
    assert again["path"] == made["path"] and again["record_id"] != made["record_id"]
    record = daemon.call("memory.get", id=again["record_id"])
    assert record["status"] == "active" and "lakes" in record["body"]
    # Restored from git: the old text is back at the same path, as a live record again.
    path.unlink()
    wait_for(lambda: daemon.call("memory.get", id=again["record_id"])["status"] == "retracted",
             what="the second record retracted")
    path.write_text("# Damson naming\n\nDamson services are named after rivers.\n")
    wait_for(lambda: any(r["status"] == "active" and "rivers" in r["body"]
                         for r in _records(daemon, "damson naming")),
             what="the restored file's active record")


def test_concurrent_creates_with_one_title_each_get_their_own_path(daemon):
    """Rounds on one day: each round's files are deleted before the next reuses the names."""
    for round_ in range(3):
        results: dict[int, dict] = {}

        def create(n: int, round_: int = round_, results: dict = results) -> None:
            results[n] = daemon.call("knowledge.create", category="conventions",
                                     author="ripley", title="Shared title",
                                     body=f"Body of call {n} in round {round_}, zucchini.")

        threads = [threading.Thread(target=create, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len({r["path"] for r in results.values()}) == 4
        for n, result in results.items():
            body = f"Body of call {n} in round {round_}, zucchini."
            assert body in (daemon.home / result["path"]).read_text()
            record = daemon.call("memory.get", id=result["record_id"])
            assert body in record["body"] and record["source"] == result["path"]
            assert record["status"] == "active"
        for result in results.values():
            (daemon.home / result["path"]).unlink()
        ids = [r["record_id"] for r in results.values()]
        wait_for(lambda ids=ids: all(daemon.call("memory.get", id=i)["status"] == "retracted"
                                     for i in ids),
                 what="the deleted entries' records retracted")


def test_jobs_beside_a_batch_make_no_second_records(make_daemon, short_home):
    home = home_with(short_home, "auto_consolidate_memory = false\n")
    daemon = make_daemon()
    for n in range(6):
        daemon.call("inbox.submit", author="dallas", title=f"Medlar finding {n}",
                    body=f"Medlar service {n} restarts after config changes.")
    # The batch stops at dallas's notebook (after writing its KB entries, before its records)
    # while this process holds the notebook's lock.
    notebook_lock = FileLock(str(home / "knowledge" / "agents" / ".dallas.md.lock"))
    outcome: list[object] = []

    def consolidate() -> None:
        try:
            outcome.append(daemon.call("consolidation.run", force=True))
        except RpcError as exc:  # the lock wait timed out (a slow machine): the batch stays open
            outcome.append(exc)

    with notebook_lock:
        worker = threading.Thread(target=consolidate)
        worker.start()
        entries = home / "knowledge" / "project-notes"
        wait_for(lambda: entries.is_dir() and len(list(entries.glob("*.md"))) == 6,
                 what="the batch's KB entries")
        # Edited by hand while its batch is still open: the watcher leaves it to the batch,
        # then looks again, so the edit reaches SQL once the batch is done.
        edited = sorted(entries.glob("*.md"))[0]
        edited.write_text(edited.read_text() + "\nEdited by hand: quokka gates.\n")
        wait_for(lambda: "kb_watch.deferred" in daemon.log() and edited.name in daemon.log(),
                 what="the watcher leaving the edited entry to the batch")
        sweep = _sweep(daemon)
        reindex = daemon.call("maintenance.run", job="reindex")["report"]
        assert sweep["imported"] == 0 and reindex["kb_imported"] == 0
        assert daemon.call("status")["records"]["active"] == 0
    worker.join(60)
    assert outcome
    if isinstance(outcome[0], RpcError):
        daemon.call("consolidation.run", force=True)  # the redo finishes the open batch
    else:
        assert outcome[0]["records_upserted"] == 6
    wait_for(lambda: daemon.call("memory.search", query="quokka gates")["total"] == 1,
             what="the hand edit made during the batch in SQL")
    assert _sweep(daemon)["imported"] == 0
    assert len(_records(daemon, "medlar")) == 6
    assert daemon.call("status")["records"]["active"] == 6


def test_the_watcher_never_follows_a_symlink_out_of_the_home(daemon, tmp_path):
    outside = tmp_path / "outside.md"
    outside.write_text("# Secret plan\n\nThe kumquat launch date is in here.\n")
    directory = daemon.home / "knowledge" / "conventions"
    os.symlink(outside, directory / "linked.md")
    (directory / "real.md").write_text("# Real\n\nA real kumquat convention.\n")
    wait_for(lambda: _records(daemon, "real kumquat convention"), what="the real file")
    assert daemon.call("maintenance.run", job="kb_sweep")["report"]["imported"] == 0
    assert not _records(daemon, "launch date")


def test_an_edit_of_a_purged_records_entry_reaches_sql(make_daemon, short_home):
    home = home_with(short_home, "auto_consolidate_memory = false\n")
    daemon = make_daemon()
    daemon.call("inbox.submit", author="ripley", title="Loquat token",
                body="The loquat deploy used a leaked token once.")
    daemon.call("consolidation.run", force=True)
    (record,) = _records(daemon, "loquat")
    daemon.call("memory.purge", id=record["id"], reason="leaked token")
    entry = next((home / "knowledge" / "project-notes").glob("*.md"))
    entry.write_text(entry.read_text().replace("used a leaked token once",
                                               "reads its token from the vault"))
    wait_for(lambda: any("vault" in r["body"] for r in _records(daemon, "loquat")),
             what="the edited entry's new record")


def test_knowledge_get_and_list_never_follow_a_symlink(daemon, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "plan.md").write_text("# Plan\n\nThe kumquat launch date.\n")
    os.symlink(outside / "plan.md", daemon.home / "knowledge" / "reviews" / "plan.md")
    (daemon.home / "knowledge" / "architecture").rmdir()
    os.symlink(outside, daemon.home / "knowledge" / "architecture")
    for path in ("knowledge/reviews/plan.md", "knowledge/architecture/plan.md"):
        with pytest.raises(RpcError) as err:
            daemon.call("knowledge.get", path=path)
        assert err.value.code == -32602
        assert "symlink" in err.value.detail or "escapes the home" in err.value.detail
    assert daemon.call("knowledge.list")["entries"] == []
    assert daemon.call("maintenance.run", job="kb_sweep")["report"]["imported"] == 0
