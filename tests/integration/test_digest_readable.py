"""A realistic batch through the regex path (no API key), read the way an agent reads it:
notes.md line by line, its links, the names of what was written, and the prompt it feeds."""

from __future__ import annotations

import os
import re
import time
from datetime import UTC, datetime
from pathlib import Path

# A dropped note named for the day it is archived: its archive name must not repeat that day.
TODAY = datetime.now(UTC).strftime("%Y-%m-%d")

NOTES = {
    "alice-release-freeze.md": (
        "---\ntitle: Release freeze\nauthor: alice\nimportance: 0.8\n---\n\n"
        "No merges to main from Thursday 18:00 UTC until v2.4.0 is tagged. Only fixes approved "
        "by the release manager go in.\n"),
    "bob-staging-db.md": (
        "---\ntitle: Staging DB weekly reset\nagent: bob\n---\n\nThe staging database is reset "
        "every Monday at 06:00 UTC; don't debug data issues there on Monday mornings.\n"),
    "dallas-token-refresh.md": (
        "---\nagent: dallas\n---\n# Token refresh retries need jitter\n\nAfter an outage all "
        "clients retry the token refresh in the same second and knock the auth service over "
        "again.\n\n- **Backoff**: use `retry_with_jitter()` from src/auth/retry.py, capped at "
        "30 s\n"),
    "ci-shard-13.md": (
        "---\ntitle: Shard order for test-m13\nagent: ci\n---\n\n- **test-m13**: must run "
        "after setup_8 in shard 3\n"),
    "ci-shard-2.md": (
        "---\ntitle: Shard order for test-m2\nagent: ci\n---\n\n- **test-m2**: must run after "
        "setup_0 in shard 3\n"),
    f"dallas-npm-ci-in-web-fails-with-eresolve-4477d56a-{TODAY}.md": (
        "---\nagent: dallas\n---\nnpm ci in web/ fails with ERESOLVE since react 19. Run it "
        "with --legacy-peer-deps until the lockfile is regenerated.\n"),
}


def test_regex_digest_reads_as_a_team_digest(make_daemon, short_home):
    short_home.mkdir(parents=True)
    (short_home / "config.toml").write_text(
        "[engine]\ninbox_settle_ms = 0\nauto_consolidate_memory = false\n"
        '[agents.dallas]\nname = "Dallas"\n')
    inbox = short_home / "notes" / "inbox"
    inbox.mkdir(parents=True)
    for i, (name, text) in enumerate(NOTES.items()):
        (inbox / name).write_text(text)
        stamp = time.time() - 60 + i
        os.utime(inbox / name, (stamp, stamp))
    daemon = make_daemon()
    result = daemon.call("consolidation.run", force=True)
    assert result["mode"] == "regex" and result["notes"] == 6
    notes_md = (short_home / "notes.md").read_text()
    section = notes_md[notes_md.index("\n### "):notes_md.index("<!-- minions:batch=")].strip()
    lines = section.splitlines()
    date = lines[0][4:14]
    kb = {Path(p).name: p for p in result["kb_entries"]}
    assert set(kb) == {f"{date}-alice-release-freeze.md", f"{date}-bob-staging-db-weekly-reset.md",
                       f"{date}-dallas-token-refresh-retries-need-jitter.md",
                       f"{date}-ci-shard-order-for-test-m13.md",
                       f"{date}-ci-shard-order-for-test-m2.md",
                       f"{date}-dallas-npm-ci-in-web-fails-with-eresolve-since-react-19.md"}

    def link(name: str) -> str:
        return f" \u2192 [KB entry]({kb[f'{date}-{name}.md']})"

    assert lines == [
        f"### {date}: Alice, Bob, Dallas, Ci: process & schedule, bug findings, learnings "
        "(7 insights from 6 notes)",
        "**By:** Engine (regex fallback)",
        "",
        "#### Process & Schedule (2)",
        "- **Release freeze**: No merges to main from Thursday 18:00 UTC until v2.4.0 is tagged. "
        "_(alice)_" + link("alice-release-freeze"),
        "- **Staging DB weekly reset**: The staging database is reset every Monday at 06:00 UTC; "
        "don't debug data issues there on Monday mornings. _(bob)_"
        + link("bob-staging-db-weekly-reset"),
        "",
        "#### Bugs & Gotchas (3)",
        "- **Token refresh retries need jitter**: After an outage all clients retry the token "
        "refresh in the same second and knock the auth service over again. _(dallas)_"
        + link("dallas-token-refresh-retries-need-jitter"),
        "  - **Backoff**: use `retry_with_jitter()` from src/auth/retry.py, capped at 30 s",
        "- **npm ci in web/ fails with ERESOLVE since react 19**: Run it with --legacy-peer-deps "
        "until the lockfile is regenerated. _(dallas)_"
        + link("dallas-npm-ci-in-web-fails-with-eresolve-since-react-19"),
        "",
        "#### Patterns & Conventions (2)",
        "- **Shard order for test-m13**: test-m13: must run after setup_8 in shard 3 _(ci)_"
        + link("ci-shard-order-for-test-m13"),
        "- **Shard order for test-m2**: test-m2: must run after setup_0 in shard 3 _(ci)_"
        + link("ci-shard-order-for-test-m2"),
    ]
    # Every link resolves from notes.md's directory; no front matter leaked into the digest.
    for target in re.findall(r"\]\(([^)]+)\)", section):
        assert (short_home / target).is_file(), target
    assert "title:" not in section and "agent:" not in section
    # Archive names do not repeat the day; the notebook heading is the note's first sentence.
    assert f"{date}-dallas-npm-ci-in-web-fails-with-eresolve-4477d56a.md" in {
        Path(p).name for p in result["archived"]}
    notebook = (short_home / "knowledge" / "agents" / "dallas.md").read_text()
    assert f"### {date}: npm ci in web/ fails with ERESOLVE since react 19\n" in notebook
    # The Team Notes section an agent gets: the digest without the batch marker.
    prompt = daemon.call("prompt.assemble", task={"id": "W-1"}, agent="dallas")
    assert prompt["memory_mode"] == "legacy"
    assert "- **Release freeze**: No merges" in prompt["text"]
    assert "<!-- minions:" not in prompt["text"]
