"""memory.purge and `minionsctl purge` end to end: a consolidated note with a secret, purged."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from minionsd.client import RpcError
from tests.conftest import REPO

SECRET = "ghp_" + "Zq7xK2mV9pL4sT8wR1nB6cY3dF5gH0jQeUaI"  # shaped like a GitHub token
TAIL = SECRET[4:].lower()  # the word FTS5 indexes (it splits at "_")
SENTENCE = "The staging deploy reads its registry login from ops/staging-deploy.sh today."
TITLE = "Staging deploy credentials"
TASK = {"id": "W-77", "title": "Fix the staging deploy registry login",
        "description": "ops/staging-deploy.sh fails to log in to the registry."}


def _ctl(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MINIONS_", "ANTHROPIC_"))}
    return subprocess.run([sys.executable, "-m", "minionsd.cli", "--home", str(home), *args],
                          env=env, cwd=REPO, capture_output=True, text=True, timeout=60)


def _db_text(home: Path) -> dict[str, object]:
    """What a SELECT can reach in state.db, opened read-only beside the daemon."""
    conn = sqlite3.connect(f"file:{home / 'engine' / 'state.db'}?mode=ro", uri=True)
    try:
        blobs = [bytes(r[0] or b"") for r in conn.execute("SELECT block FROM memory_fts_data")]
        idx = [str(r[0]) for r in conn.execute("SELECT term FROM memory_fts_idx")]
        return {
            "rows": conn.execute("SELECT count(*) FROM memory_records WHERE body LIKE ?",
                                 (f"%{SECRET}%",)).fetchone()[0],
            "fts_data": any(TAIL.encode() in b or TAIL[:12].encode() in b for b in blobs),
            "fts_idx": any(TAIL[:8] in term for term in idx),
            "vocab": conn.execute("SELECT count(*) FROM memory_vocab WHERE term = ?",
                                  (TAIL,)).fetchone()[0],
            "journal": conn.execute("SELECT count(*) FROM batch_notes WHERE content LIKE ?",
                                    (f"%{SECRET}%",)).fetchone()[0],
            "digests": conn.execute("SELECT count(*) FROM batches WHERE digest LIKE ?",
                                    (f"%{SECRET}%",)).fetchone()[0],
            "audit": conn.execute("SELECT id, reason, purged_at, source FROM purged_records"
                                  ).fetchall(),
        }
    finally:
        conn.close()


@pytest.fixture
def leaked(make_daemon, short_home):
    """A daemon whose memory holds a consolidated note by a configured agent with a secret."""
    short_home.mkdir(parents=True, exist_ok=True)
    (short_home / "config.toml").write_text('[agents.dallas]\nname = "Dallas"\n')
    d = make_daemon()
    d.call("inbox.submit", author="dallas", title=TITLE, project="atlas",
           body=f"{SENTENCE}\n\nUse `docker login -u bot -p {SECRET}` until the vault works.\n")
    d.call("inbox.submit", author="ripley", title="Registry mirror",
           body="The staging registry login goes through the mirror at ops/mirror.conf.")
    result = d.call("consolidation.run", force=True)
    assert result["notes"] == 2, result
    hits = d.call("memory.search", query="staging deploy registry login")["records"]
    d.leak_id = next(r["id"] for r in hits if "ops/staging-deploy.sh" in r["body"])
    d.other_id = next(r["id"] for r in hits if r["id"] != d.leak_id)
    return d


def _assert_gone(d, leak_id: str) -> None:
    with pytest.raises(RpcError) as err:
        d.call("memory.get", id=leak_id)
    assert err.value.code == -32001 and "leaked registry token" in err.value.detail
    for query in ("staging deploy registry login", TAIL, "vault docker"):
        found = d.call("memory.search", query=query,
                       status=["active", "superseded", "retracted", "expired"])
        assert leak_id not in [r["id"] for r in found["records"]], query
    retrieved = d.call("memory.retrieve", task=TASK, project="atlas", agent="dallas")
    assert leak_id not in [s["id"] for s in retrieved["selected"]]
    assert d.other_id in [s["id"] for s in retrieved["selected"]]
    assert SECRET not in retrieved["text"] and "staging-deploy.sh" not in retrieved["text"]
    prompt = d.call("prompt.assemble", task=TASK, project="atlas", agent="dallas")
    assert prompt["memory_mode"] == "relevant"
    assert SECRET not in prompt["text"] and leak_id not in prompt["text"]


def test_purge_deletes_for_good_and_names_the_files(leaked):
    d = leaked
    before = d.call("memory.retrieve", task=TASK, project="atlas", agent="dallas")
    assert d.leak_id in [s["id"] for s in before["selected"]]  # recalled (and cached) before
    for params, name in (({"id": d.leak_id}, "reason"), ({"id": d.leak_id, "reason": " "},
                                                          "reason"), ({"reason": "x"}, "id")):
        with pytest.raises(RpcError) as err:
            d.call("memory.purge", **params)
        assert err.value.code == -32602 and name in err.value.detail
    source = d.call("memory.get", id=d.leak_id)["source"]

    out = _ctl(d.home, "purge", d.leak_id, "--reason", "leaked registry token")
    assert out.returncode == 0, out.stderr
    files = [line.strip() for line in out.stdout.splitlines()[1:]]
    assert source in files and source.startswith("notes/archive/")
    assert any(f.startswith("knowledge/") and "/agents/" not in f for f in files), files
    assert "knowledge/agents/dallas.md" in files and "notes.md" in files
    for rel in files:
        text = (d.home / rel).read_text()
        assert SENTENCE[:40] in " ".join(text.split()) or TITLE in text, rel
    assert SECRET in (d.home / source).read_text()  # the archived original, as written
    for rel in ("knowledge/agents/ripley.md", "pinned.md", "notes/archive/notes-history.md"):
        assert rel not in files

    _assert_gone(d, d.leak_id)
    with pytest.raises(RpcError) as err:
        d.call("memory.purge", id=d.leak_id, reason="again")
    assert err.value.code == -32001 and "leaked registry token" in err.value.detail
    again = _ctl(d.home, "purge", d.leak_id, "--reason", "again")
    assert again.returncode == 1 and "leaked registry token" in again.stderr
    assert d.call("memory.get", id=d.other_id)["id"] == d.other_id  # nothing else went

    state = _db_text(d.home)
    assert state["rows"] == 0 and state["journal"] == 0 and state["digests"] == 0
    assert not state["fts_data"] and not state["fts_idx"] and state["vocab"] == 0
    assert [(*tuple(r[:2]), r[3]) for r in state["audit"]] == [
        (d.leak_id, "leaked registry token", source)]

    # Still gone after a restart and a KB sweep (the KB file is still there, unedited).
    assert d.stop() == 0
    d.start()
    d.call("maintenance.run", job="kb_sweep")
    _assert_gone(d, d.leak_id)
    hits = d.call("memory.search", query="ops/staging-deploy.sh vault")["records"]
    assert all(SECRET not in r["body"] for r in hits)


def test_purge_of_an_unknown_id_is_not_found(daemon):
    with pytest.raises(RpcError) as err:
        daemon.call("memory.purge", id="M-nope", reason="tidy")
    assert err.value.code == -32001 and "M-nope" in err.value.detail
    out = _ctl(daemon.home, "purge", "M-nope", "--reason", "tidy")
    assert out.returncode == 1 and "M-nope" in out.stderr
    usage = _ctl(daemon.home, "purge", "M-nope")
    assert usage.returncode == 2 and "--reason" in usage.stderr
