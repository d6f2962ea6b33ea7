"""Hand-managed files that are not regular files (SPEC §2 v3), through a running daemon.

A directory, a FIFO or a symlink loop in place of pinned.md, notes.md or an agent's notebook
never fails or blocks a prompt: the prompt is assembled without that section and
`status.warnings` names the file and what it is. A FIFO as notes-history.md fails the batch
that must append to it with a clear error (no hang, nothing lost), and a config.toml that is
not a regular file is refused at SIGHUP and at start-up like an invalid one.

Every call goes through a client with a bounded timeout: on a daemon that blocks on a FIFO the
test fails instead of hanging.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

import pytest

from minionsd.client import Client, RpcError
from tests.conftest import wait_for
from tests.integration.test_consolidation import home_with
from tests.integration.test_hooks import hook, start_payload

TIMEOUT_S = 20  # generous for a loaded machine; a daemon blocked on a FIFO never answers
TASK = {"id": "W-1", "title": "quince tests"}
FILES = {
    "pinned.md": ("# Pinned Context\n\nAlways run the quince pinned tests.\n", "Pinned Context"),
    "notes.md": ("# Team Notes\n\n---\n\n### 2026-12-01\n\n- the quince team digest\n",
                 "Team Notes"),
    "knowledge/agents/dallas.md": ("# Dallas\n\n### 2026-12-01: quince\n\nquince notebook\n",
                                   "Personal Memory"),
}
WORDS = {"pinned.md": "quince pinned tests", "notes.md": "quince team digest",
         "knowledge/agents/dallas.md": "quince notebook"}


def call(daemon, method: str, **params):
    with Client(daemon.socket, timeout=TIMEOUT_S) as client:
        return client.call(method, params)


def make_odd(path, kind: str) -> str:
    """Put a `kind` where `path` was; what status should call it."""
    path.unlink()
    if kind == "directory":
        path.mkdir()
        return "is a directory, not a regular file"
    if kind == "fifo":
        os.mkfifo(path)
        return "is a FIFO, not a regular file"
    os.symlink(path.name, path)  # a link to itself: "too many levels of symbolic links"
    return "cannot be read ("


def remove_odd(path) -> None:
    if path.is_dir() and not path.is_symlink():
        path.rmdir()
    else:
        path.unlink()


@pytest.mark.parametrize("rel", list(FILES))
def test_an_odd_file_leaves_its_section_out_and_fails_no_prompt(make_daemon, short_home, rel):
    home = home_with(short_home, "auto_consolidate_memory = false\n")
    for name, (text, _) in FILES.items():
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        (home / name).write_text(text)
    daemon = make_daemon()
    path = home / rel
    for kind in ("fifo", "directory", "loop"):
        said = make_odd(path, kind)
        answer = call(daemon, "prompt.assemble", task=TASK, agent="dallas")
        text = answer["text"]
        assert WORDS[rel] not in text, kind
        for other in set(FILES) - {rel}:
            assert WORDS[other] in text, (kind, other, text)
        status = call(daemon, "status")
        warned = {w["file"]: w["reason"] for w in status["warnings"]}
        assert said in warned.get(rel, ""), (kind, warned)
        # Nothing was held: search answers, and pinned.get reads a FIFO or directory as empty.
        call(daemon, "memory.search", query="quince")
        if kind != "loop":
            assert call(daemon, "pinned.get")["text"] == ("" if rel == "pinned.md"
                                                         else FILES["pinned.md"][0])
        remove_odd(path)
        path.write_text(FILES[rel][0])
        assert WORDS[rel] in call(daemon, "prompt.assemble", task=TASK, agent="dallas")["text"]
        assert rel not in {w["file"] for w in call(daemon, "status")["warnings"]}


def test_the_session_start_hook_answers_with_a_fifo_as_pinned(make_daemon, short_home):
    home = home_with(short_home)
    daemon = make_daemon()
    os.mkfifo(home / "pinned.md")
    started = hook("claude-code", "session-start", stdin=start_payload(), home=home)
    assert started.returncode == 0 and started.stderr == "", started.stderr
    assert "minionsd memory is connected" in started.stdout
    assert call(daemon, "status")["warnings"][0]["file"] == "pinned.md"


BOUND = "auto_consolidate_memory = false\nnotes_max_bytes = 1024\n"


def _submit(daemon, n: int) -> None:
    call(daemon, "inbox.submit", author="ripley", title=f"Plum report {n}",
         body=f"Plum build {n} passed after the lint fix number {n}. " * 5)


def test_a_fifo_as_notes_history_fails_the_batch_clearly_and_loses_nothing(
        make_daemon, short_home):
    home = home_with(short_home, BOUND)
    daemon = make_daemon()
    history = home / "notes" / "archive" / "notes-history.md"
    history.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(history)
    failed = []
    for n in range(4):
        _submit(daemon, n)
        try:
            call(daemon, "consolidation.run", force=True)
        except RpcError as exc:
            failed.append(str(exc))
    assert failed, "no batch had to move a section to the history"
    assert all("is a FIFO, not a regular file" in f and "notes-history.md" in f
               for f in failed), failed
    status = call(daemon, "status")
    assert any("notes-history.md" in w["reason"] or w["file"].endswith("notes-history.md")
               for w in status["warnings"]), status["warnings"]
    assert (home / "notes" / "inbox").exists() and any((home / "notes" / "inbox").iterdir())
    history.unlink()
    while call(daemon, "inbox.list")["notes"]:
        call(daemon, "consolidation.run", force=True)
    moved = history.read_text() + (home / "notes.md").read_text()
    markers = re.findall(r"<!-- minions:batch=[^ ]+ -->", moved)
    assert len(markers) == len(set(markers))
    for n in range(4):
        assert f"Plum report {n}" in moved or f"lint fix number {n}" in moved, n
        found = call(daemon, "memory.search", query=f"Plum report {n}")["records"]
        assert len([r for r in found if r["title"] == f"Plum report {n}"]) == 1


def test_a_fifo_as_config_is_refused_at_sighup_and_at_start(make_daemon, short_home):
    home = home_with(short_home)
    daemon = make_daemon()
    config = home / "config.toml"
    good = config.read_text()
    config.unlink()
    os.mkfifo(config)
    daemon.proc.send_signal(signal.SIGHUP)
    failure = wait_for(lambda: call(daemon, "status")["config"]["last_reload_failure"],
                       what="the refused reload in status")
    assert "config.toml" in failure["reason"] and "is a FIFO" in failure["reason"]
    assert call(daemon, "pinned.get") is not None
    # config.set writes onto the file on disk: it reads it first, and refuses a FIFO.
    with pytest.raises(RpcError, match="is a FIFO, not a regular file"):
        call(daemon, "config.set", key="engine.memory_retrieval_top_k", value=6)
    daemon.stop()
    start = subprocess.run(
        [sys.executable, "-m", "minionsd.daemon", "--home", str(home)],
        capture_output=True, text=True, timeout=60,
        env={k: v for k, v in os.environ.items() if not k.startswith("MINIONS_")})
    assert start.returncode == 2, start.stderr
    assert "config.toml: cannot read: is a FIFO, not a regular file" in start.stderr
    config.unlink()
    config.write_text(good)


def test_a_batch_replaces_a_fifo_notes_file_and_notebook(make_daemon, short_home):
    """A FIFO holds no text: the batch that appends to notes.md and the author's notebook
    writes them as regular files, and their warnings go."""
    home = home_with(short_home, "auto_consolidate_memory = false\n")
    daemon = make_daemon()
    notebook = home / "knowledge" / "agents" / "dallas.md"
    notebook.parent.mkdir(parents=True, exist_ok=True)
    notebook.unlink(missing_ok=True)
    (home / "notes.md").unlink(missing_ok=True)
    os.mkfifo(home / "notes.md")
    os.mkfifo(notebook)
    call(daemon, "prompt.assemble", task=TASK, agent="dallas")
    assert {"notes.md", "knowledge/agents/dallas.md"} <= {
        w["file"] for w in call(daemon, "status")["warnings"]}
    call(daemon, "inbox.submit", author="dallas", title="Quince cache",
         body="The quince cache must be warmed before the deploy.")
    assert call(daemon, "consolidation.run", force=True)["notes"] == 1
    assert (home / "notes.md").is_file() and notebook.is_file()
    assert "quince" in (home / "notes.md").read_text().lower()
    assert "Quince cache" in notebook.read_text()
    # The next read of each (a prompt with no matching record shows both) clears its warning.
    unmatched = {"id": "W-2", "title": "zz"}
    shown = call(daemon, "prompt.assemble", task=unmatched, agent="dallas")["text"]
    assert "Quince cache" in shown
    assert call(daemon, "status")["warnings"] == []
