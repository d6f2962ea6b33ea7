"""Findings dropped into the inbox as files obey the finding rules of inbox.submit (SPEC §3.6:
"A finding needs an agent and a task; exactly one per task is kept, and only for successful
tasks"): one that breaks them is quarantined with a reason naming the rule, its text intact,
and a dropped finding that is kept claims its task. Real daemon, real files, the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import REPO


def _ctl(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MINIONS_", "ANTHROPIC_"))}
    return subprocess.run([sys.executable, "-m", "minionsd.cli", "--home", str(home), *args],
                          env=env, cwd=REPO, capture_output=True, text=True, timeout=60)


def _drop(home: Path, name: str, text: str, age: float = 60) -> None:
    inbox = home / "notes" / "inbox"
    temp = inbox / f".{name}.tmp"
    temp.write_text(text)
    stamp = time.time() - age
    os.utime(temp, (stamp, stamp))
    temp.rename(inbox / name)


def _finding(body: str, **meta: str) -> str:
    front = "".join(f"{key}: {value}\n" for key, value in {"kind": "finding", **meta}.items())
    return f"---\n{front}---\n{body}\n"


def _home(make_daemon, short_home: Path):
    short_home.mkdir(parents=True)
    (short_home / "config.toml").write_text(
        "[engine]\ninbox_settle_ms = 0\nauto_consolidate_memory = false\n")
    return make_daemon()


def _kinds(daemon, word: str) -> dict[str, str]:
    found = daemon.call("memory.search", query=word)["records"]
    return {r["title"]: r["meta"].get("kind") for r in found}


def _quarantine(home: Path) -> dict[str, str]:
    done = _ctl(home, "--json", "inbox", "--quarantined")
    assert done.returncode == 0, done.stderr
    return {q["name"]: q["reason"] for q in json.loads(done.stdout)["quarantined"]}


def test_dropped_findings_that_break_the_rules_are_quarantined(make_daemon, short_home):
    daemon = _home(make_daemon, short_home)
    first = _ctl(short_home, "note", "first finding for W-7 zqfirst", "--kind", "finding",
                 "--task", "W-7", "--outcome", "success", "--author", "ripley")
    assert first.returncode == 0, first.stderr
    texts = {
        "dallas-second.md": _finding("second finding for W-7 zqsecond", task="W-7",
                                     outcome="success", author="dallas",
                                     title="second W-7 finding"),
        "ripley-notask.md": _finding("finding with no task zqnotask", author="ripley",
                                     title="finding without task"),
        "ripley-failed.md": _finding("finding of a failed task zqfailed", task="W-8",
                                     outcome="failure", title="failed task finding"),
        "finding.md": _finding("finding with no agent zqnoagent", task="W-9",
                               outcome="success", title="finding without agent"),
    }
    for name, text in texts.items():
        _drop(short_home, name, text)
    done = _ctl(short_home, "consolidate", "--force")
    assert done.returncode == 0, done.stderr

    kinds = _kinds(daemon, "zqfirst OR zqsecond OR zqnotask OR zqfailed OR zqnoagent")
    assert list(kinds.values()) == ["finding"], kinds  # the submitted W-7 finding alone
    reasons = _quarantine(short_home)
    assert set(reasons) == set(texts)
    assert "task 'W-7' already has a finding: ripley-W-7-" in reasons["dallas-second.md"]
    assert "needs `task`" in reasons["ripley-notask.md"]
    assert "`outcome` must be \"success\", got 'failure'" in reasons["ripley-failed.md"]
    assert "needs an agent" in reasons["finding.md"]
    assert all("kind: note" in reason for reason in reasons.values())
    for name, text in texts.items():  # nothing lost: each file as it was written
        assert (short_home / "notes" / "quarantine" / name).read_text() == text
    assert not list((short_home / "notes" / "archive").glob("*second*"))


def test_a_dropped_finding_claims_its_task_and_a_fixed_one_comes_back_as_a_note(
        make_daemon, short_home):
    daemon = _home(make_daemon, short_home)
    _drop(short_home, "ripley-w10-a.md",
          _finding("first dropped finding zqone", task="W-10", outcome="success",
                   title="first W-10 finding"), age=90)
    _drop(short_home, "dallas-w10-b.md",
          _finding("second dropped finding zqtwo", task="W-10", outcome="success",
                   title="second W-10 finding"), age=60)
    done = _ctl(short_home, "consolidate", "--force")
    assert done.returncode == 0, done.stderr
    assert _kinds(daemon, "zqone OR zqtwo") == {"first W-10 finding": "finding"}
    reasons = _quarantine(short_home)
    assert list(reasons) == ["dallas-w10-b.md"]
    assert "already has a finding: ripley-w10-a.md by ripley" in reasons["dallas-w10-b.md"]

    late = _ctl(short_home, "note", "a finding submitted later zqthree", "--kind", "finding",
                "--task", "W-10", "--outcome", "success", "--author", "parker")
    assert late.returncode == 1
    assert "task 'W-10' already has a finding: ripley-w10-a.md by ripley" in late.stderr

    held = short_home / "notes" / "quarantine" / "dallas-w10-b.md"
    held.write_text(held.read_text().replace("kind: finding", "kind: note"))
    back = _ctl(short_home, "inbox", "requeue", "dallas-w10-b.md")
    assert back.returncode == 0, back.stderr
    done = _ctl(short_home, "consolidate", "--force")
    assert done.returncode == 0, done.stderr
    assert _kinds(daemon, "zqone OR zqtwo") == {"first W-10 finding": "finding",
                                                 "second W-10 finding": "note"}
    assert _quarantine(short_home) == {}
