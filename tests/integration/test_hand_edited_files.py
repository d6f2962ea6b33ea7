"""Hand-edited files (SPEC §2 v3; issue 20 item 9), through a running daemon.

Bytes that are not UTF-8 in pinned.md, notes.md, a notebook or a knowledge entry are read as
U+FFFD with a warning naming the file (log and `status.warnings`); no prompt, batch, purge,
job or start-up fails. config.set and pinned.set write through a symlink, never replace it.
"""

from __future__ import annotations

import json
import os

from tests.integration.test_consolidation import home_with
from tests.integration.test_hooks import hook, start_payload

BAD = b"caf\xe9 \xff\xfe bytes from a latin-1 editor\n"
FILES = {
    "pinned.md": b"# Pinned Context\n\nAlways run the quince tests. ",
    "notes.md": b"# Team Notes\n\n---\n\n### 2026-12-01\n\n- the quince digest ",
    "knowledge/agents/dallas.md": b"# Dallas\n\n### 2026-12-01: quince\n\nquince notebook ",
    "knowledge/conventions/quince.md": b"# Quince rule\n\nThe quince rule holds. ",
}


def test_bytes_that_are_not_utf8_fail_nothing_and_are_reported(make_daemon, short_home):
    home = home_with(short_home, "auto_consolidate_memory = false\n")
    for rel, head in FILES.items():
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_bytes(head + BAD)
    daemon = make_daemon()  # start-up reads them too
    assert daemon.call("pinned.get")["text"].startswith("# Pinned Context")
    prompt = daemon.call("prompt.assemble", task={"id": "W-1", "title": "quince tests"},
                         agent="dallas")["text"]
    assert "Always run the quince tests. caf\ufffd" in prompt
    # The session-start hook (a real `minionsctl hook`) still prints the pinned context.
    started = hook("claude-code", "session-start", stdin=start_payload(), home=home)
    assert started.returncode == 0 and "Always run the quince tests." in started.stdout
    daemon.call("inbox.submit", author="dallas", title="Quince batch",
                body="The quince batch still runs.")
    assert daemon.call("consolidation.run", force=True)["notes"] == 1
    assert "quince batch" in (home / "notes.md").read_text(encoding="utf-8").lower()
    entry = daemon.call("knowledge.get", path="knowledge/conventions/quince.md")
    assert "caf\ufffd" in entry["body"]
    assert "knowledge/conventions/quince.md" in {
        e["path"] for e in daemon.call("knowledge.list")["entries"]}
    sweep = daemon.call("maintenance.run", job="kb_sweep")["report"]
    assert sweep["unreadable"] == [] and sweep["imported"] == 1
    daemon.call("maintenance.run", job="retention")
    found = daemon.call("memory.search", query="quince")["records"]
    assert len(found) == 2
    for record in found:
        daemon.call("memory.purge", id=record["id"], reason="test purge")
    warned = {w["file"]: w for w in daemon.call("status")["warnings"]}
    assert set(FILES) <= set(warned), warned
    assert all("UTF-8" in w["reason"] and w["at"] for w in warned.values())
    log = [json.loads(line) for line in daemon.log_path.read_text().splitlines()
           if line.startswith("{")]
    logged = {e.get("file") for e in log if e.get("event") == "file.read_with_warning"}
    assert set(FILES) <= logged


def test_a_file_that_reads_clean_again_loses_its_warning(make_daemon, short_home):
    home = home_with(short_home)
    (home / "pinned.md").write_bytes(b"# Pinned\n\n" + BAD)
    daemon = make_daemon()
    daemon.call("pinned.get")
    assert [w["file"] for w in daemon.call("status")["warnings"]] == ["pinned.md"]
    daemon.call("pinned.set", text="# Pinned\n\nclean now\n")
    daemon.call("pinned.get")
    assert daemon.call("status")["warnings"] == []


def test_config_set_and_pinned_set_write_through_a_symlink(make_daemon, short_home, tmp_path):
    home = home_with(short_home)
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    os.replace(home / "config.toml", dotfiles / "minions.toml")
    os.symlink(dotfiles / "minions.toml", home / "config.toml")
    (dotfiles / "pinned.md").write_text("# Pinned\n\nshared\n")
    os.chmod(dotfiles / "pinned.md", 0o644)
    os.symlink(dotfiles / "pinned.md", home / "pinned.md")
    daemon = make_daemon()
    daemon.call("config.set", key="engine.memory_retrieval_top_k", value=5)
    daemon.call("pinned.set", text="# Pinned\n\nchanged through the link\n")
    daemon.call("pinned.append", text="Appended\nthrough the link too")
    assert (home / "config.toml").is_symlink() and (home / "pinned.md").is_symlink()
    assert "memory_retrieval_top_k = 5" in (dotfiles / "minions.toml").read_text()
    pinned = (dotfiles / "pinned.md").read_text()
    assert "changed through the link" in pinned and "through the link too" in pinned
    assert os.stat(dotfiles / "pinned.md").st_mode & 0o777 == 0o644
    assert daemon.call("config.get", key="engine.memory_retrieval_top_k")["value"] == 5
