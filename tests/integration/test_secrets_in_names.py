"""Secrets that used to slip past redaction (issue 20 item 3), end to end through a daemon.

A token in a note's title must not reach a file name, a record's source, KB front matter, a
notebook or a prompt, not even lower-cased by slugging; a secret in a YAML block scalar goes
whole and leaves front matter that still parses (the record keeps its scope); a token pasted
into a task is never stored in telemetry terms.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from tests.integration.test_consolidation import drop, home_with

AWS_KEY_ID = "AKIAQ7ZK4NDP2XWM8R5T"
AWS_SECRET = "Jx9vT2mQ/8kLp4RzW7nY+3bCdF6gH1sA0eUoIiKq"
GITHUB_TOKEN = "ghp_R8fKq2ZtLw91XbNc4VyH7eJm3UaP0sDgQ6iT"
# What each secret looks like once slugged or tokenised: lower case, split at `_` and `/`.
SHAPES = ("q7zk4ndp2xwm8r5t", "r8fkq2ztlw91xbnc4vyh7ejm3uap0sdgq6it", "kp4rzw7ny",
          "jx9vt2mq")


def _leaks(text: str) -> list[str]:
    lowered = text.lower()
    return [shape for shape in SHAPES if shape in lowered]


def _db_dump(home: Path) -> str:
    conn = sqlite3.connect(f"file:{home / 'engine' / 'state.db'}?mode=ro", uri=True)
    try:
        rows = [json.dumps(list(r), default=str) for table in
                ("memory_records", "kb_files", "retrieval_telemetry", "batch_notes")
                for r in conn.execute(f"SELECT * FROM {table}")]
    finally:
        conn.close()
    return "\n".join(rows)


def test_a_token_in_a_title_reaches_no_name_source_or_prompt(make_daemon, short_home):
    home = home_with(short_home, "auto_consolidate_memory = false\n")
    daemon = make_daemon()
    sent = daemon.call("inbox.submit", author="dallas", title=f"Rotated {AWS_KEY_ID} today",
                       body="The deploy key for ops/keys.sh was rotated on the kumquat runner.")
    assert not _leaks(sent["name"]), sent
    made = daemon.call("knowledge.create", category="conventions", author="ripley",
                       title=f"Use {GITHUB_TOKEN} only in CI", body="Kumquat runner CI only.")
    assert not _leaks(made["path"])
    assert daemon.call("consolidation.run", force=True)["notes"] == 1
    surfaces = {str(p.relative_to(home)): p.read_text(errors="replace")
                for p in home.rglob("*.md") if p.is_file() and "archive" not in p.parts}
    surfaces["file names"] = "\n".join(str(p.relative_to(home)) for p in home.rglob("*"))
    found = daemon.call("memory.search", query="kumquat runner")
    assert found["total"] == 2
    surfaces["records"] = json.dumps(found)
    pack = daemon.call("prompt.assemble", task={"id": "W-1", "title": "kumquat runner keys"},
                       agent="dallas")
    surfaces["prompt"] = json.dumps(pack)
    for surface, text in surfaces.items():
        assert not _leaks(text), f"{_leaks(text)} reached {surface}"
    assert "redacted-aws-access-key-id" in surfaces["file names"]


def test_a_yaml_block_secret_leaves_parseable_front_matter(make_daemon, short_home,
                                                           fake_anthropic):
    home = home_with(short_home, "auto_consolidate_memory = false\n")
    with open(home / "config.toml", "a") as handle:
        handle.write(f'[llm]\nbase_url = "{fake_anthropic.url}"\ntimeout_s = 2\n'
                     "max_retries = 0\n")
    daemon = make_daemon(env={"ANTHROPIC_API_KEY": "test-key"})
    text = (f"---\ntitle: Kumquat runner credentials\nauthor: dallas\nproject: kumquat\n"
            f"aws_secret_access_key: |\n  {AWS_SECRET}\n---\n"
            "The kumquat runner reads its AWS credentials from the vault at start-up.\n")
    drop(home / "notes" / "inbox", "dallas-creds.md", text, age_s=5)
    assert daemon.call("consolidation.run", force=True)["notes"] == 1
    prompts = "\n".join(r.prompt for r in fake_anthropic.requests)
    assert "kumquat runner" in prompts.lower() and not _leaks(prompts)
    (record,) = daemon.call("memory.search", query="kumquat runner vault")["records"]
    assert record["scope"] == "project:kumquat" and record["project"] == "kumquat"
    entry = (home / record["meta"]["kb_path"]).read_text() if "kb_path" in record["meta"] \
        else next((home / "knowledge" / "project-notes").glob("*.md")).read_text()
    assert "project: kumquat" in entry and not _leaks(entry)
    assert not _leaks(_db_dump(home).replace(json.dumps(text)[1:-1], ""))


def test_a_token_in_a_task_is_not_stored_as_a_term(daemon):
    daemon.call("memory.add", body="The kumquat deploy reads its token from the vault.",
                title="Kumquat deploy", type="semantic", scope="global", trust="human",
                source="test")
    task = {"id": "W-5", "title": "kumquat deploy fails",
            "description": f"It says GITHUB_TOKEN={GITHUB_TOKEN} is bad; key {AWS_KEY_ID}."}
    daemon.call("prompt.assemble", task=task, agent="dallas")
    daemon.call("memory.retrieve", task=task)
    rows = daemon.call("telemetry.retrievals", limit=10)["rows"]
    assert len(rows) == 2 and all("kumquat" in row["terms"] for row in rows)
    assert not _leaks(json.dumps(rows)) and not _leaks(_db_dump(daemon.home))
    assert not any("redacted" in row["terms"] for row in rows)


def test_a_token_between_dashes_in_a_dropped_files_name_is_redacted(make_daemon, short_home):
    home = home_with(short_home, "auto_consolidate_memory = false\n")
    daemon = make_daemon()
    drop(home / "notes" / "inbox", f"dallas-{AWS_KEY_ID}-keys.md",
         "The kumquat runner keys were rotated.\n", age_s=5)
    result = daemon.call("consolidation.run", force=True)
    assert result["notes"] == 1 and not _leaks(json.dumps(result))
    names = "\n".join(str(p.relative_to(home)) for p in home.rglob("*"))
    texts = {str(p.relative_to(home)): p.read_text() for p in home.rglob("*.md")
             if p.is_file()}
    assert not _leaks(names) and "redacted-aws_access_key_id-keys" in names
    for rel, text in texts.items():
        assert not _leaks(text), rel
    assert not _leaks(json.dumps(daemon.call("memory.search", query="kumquat runner")))
