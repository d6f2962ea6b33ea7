"""Files read when someone asks (a hand-written knowledge entry, notes.md, an agent's notebook)
and memory.add's `source`: a secret in them never leaves the daemon (SPEC §3.1, "secrets never
reach a prompt"). The files keep what was written; what is served is redacted, as archive.get
already does."""

from __future__ import annotations

import anyio
from mcp import Client

from tests.integration.test_mcp import server_params

TOKEN = "ghp_" + "W9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
TITLE_TOKEN = "ghp_" + "T8y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
NAME_TOKEN = "AKIA" + "Q3VN7FJ2LD8XK4PW"
PASSWORD = "Hunter9" + "Secret!"
DB_PASSWORD = "Sup3r" + "S3cretPw"


def _write_entries(home):
    directory = home / "knowledge" / "conventions"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "2026-12-05-deploy-creds.md").write_text(
        f"---\ntitle: Deploy credentials\n---\n\nThe deploy bot logs in with {TOKEN} and "
        f"password={PASSWORD}\n")
    (directory / "2026-12-05-rotation.md").write_text(
        f'---\ntitle: "Token {TITLE_TOKEN} rotation"\n---\n\nrotation steps\n')
    (directory / f"keys-{NAME_TOKEN}.md").write_text("The keys rotate monthly.\n")
    return directory


def _secrets_in(text: str) -> list[str]:
    return [s for s in (TOKEN, TITLE_TOKEN, NAME_TOKEN, PASSWORD, DB_PASSWORD) if s in text]


def test_knowledge_list_and_get_redact_a_hand_written_entry(daemon):
    directory = _write_entries(daemon.home)
    entries = daemon.call("knowledge.list")["entries"]
    assert len(entries) == 3
    for entry in entries:
        assert not _secrets_in(entry["title"]), entry
    titles = sorted(e["title"] for e in entries)
    assert titles == ["Deploy credentials", "Token [REDACTED:github_token] rotation",
                      "keys-redacted-aws_access_key_id"]
    # A token in a hand-made file name is listed redacted, and that path reads the entry.
    keys = next(e for e in entries if e["title"].startswith("keys-"))
    assert keys["path"] == "knowledge/conventions/keys-redacted-aws_access_key_id.md"
    read = daemon.call("knowledge.get", path=keys["path"])
    assert read["body"] == "The keys rotate monthly.\n" and read["path"] == keys["path"]
    by_name = daemon.call("knowledge.get", path=f"knowledge/conventions/keys-{NAME_TOKEN}.md")
    assert by_name["path"] == keys["path"]
    entry = daemon.call("knowledge.get", path="knowledge/conventions/2026-12-05-deploy-creds.md")
    assert not _secrets_in(entry["body"]) and not _secrets_in(entry["title"])
    assert "The deploy bot logs in with [REDACTED:github_token]" in entry["body"]
    rotation = daemon.call("knowledge.get", path="knowledge/conventions/2026-12-05-rotation.md")
    assert not _secrets_in(rotation["title"])
    # The files are the author's: they keep what was written.
    assert TOKEN in (directory / "2026-12-05-deploy-creds.md").read_text()
    assert TITLE_TOKEN in (directory / "2026-12-05-rotation.md").read_text()
    assert (directory / f"keys-{NAME_TOKEN}.md").exists()


def test_knowledge_tools_and_resource_show_the_model_no_secret(daemon):
    _write_entries(daemon.home)
    path = "knowledge/conventions/2026-12-05-deploy-creds.md"

    async def main() -> list[str]:
        async with Client(server_params(daemon.home, "--agent", "codex"),
                          read_timeout_seconds=60) as client:
            got = await client.call_tool("knowledge_get", {"path": path})
            listed = await client.call_tool("knowledge_list", {"category": "conventions"})
            resource = await client.read_resource(
                "minions://knowledge/conventions/2026-12-05-deploy-creds.md")
            return [got.content[0].text, listed.content[0].text, resource.contents[0].text]

    got, listed, resource = anyio.run(main)
    assert "The deploy bot logs in with" in got and "[REDACTED:github_token]" in got
    assert "rotation" in listed
    for text in (got, listed, resource):
        assert not _secrets_in(text), text


def test_digest_get_redacts_a_line_added_to_notes_md_by_hand(daemon):
    notes = daemon.home / "notes.md"
    notes.write_text(f"# Team notes\nops: {TITLE_TOKEN}\n\n---\n\n### 2026-12-04: older\n"
                     "- nothing secret\n\n---\n\n### 2026-12-05: hand-added\n"
                     f"- CI token for releases: {TOKEN}\n")
    digest = daemon.call("digest.get")
    assert digest["total"] == 2
    assert "CI token for releases: [REDACTED:github_token]" in digest["sections"][0]
    assert "nothing secret" in digest["sections"][1]
    assert not _secrets_in(digest["header"]) and "[REDACTED:github_token]" in digest["header"]
    assert not any(_secrets_in(s) for s in digest["sections"])
    assert len(daemon.call("digest.get", limit=1)["sections"]) == 1
    assert TOKEN in notes.read_text()


def test_agents_get_redacts_a_hand_edited_notebook(daemon, short_home):
    (short_home / "config.toml").write_text('[agents.dallas]\nname = "Dallas"\n')
    daemon.stop()
    daemon.start()
    notebook = short_home / "knowledge" / "agents" / "dallas.md"
    notebook.parent.mkdir(parents=True, exist_ok=True)
    notebook.write_text(f"# Dallas\n\n- prefers small commits\n- pushes with {TOKEN}\n")
    shown = daemon.call("agents.get", id="dallas")["notebook_text"]
    assert "prefers small commits" in shown and "pushes with [REDACTED:github_token]" in shown
    assert not _secrets_in(shown)
    assert "notebook_text" not in daemon.call("agents.list")["agents"][0]


def test_memory_add_redacts_the_source_shown_in_every_pack(daemon):
    source = f"import:postgres://importer:{DB_PASSWORD}@db.internal:5432/wiki"
    record_id = daemon.call("memory.add", body="dipperfinch: the wiki import runs nightly",
                            type="semantic", scope="global", trust="agent",
                            source=source)["id"]
    stored = daemon.call("memory.get", id=record_id)["source"]
    assert stored == ("import:postgres://importer:[REDACTED:connection_string]"
                      "@db.internal:5432/wiki")
    prompt = daemon.call("prompt.assemble", task={"id": "T-s", "title": "dipperfinch wiki"})
    assert prompt["retrieval"]["selected"], prompt["retrieval"]
    assert f"source={stored}" in prompt["text"]
    assert DB_PASSWORD not in prompt["text"]
    # A source without a secret is stored as given.
    plain = daemon.call("memory.add", body="dipperfinch: a second note", type="semantic",
                        scope="global", trust="agent", source="import:wiki/page-12")["id"]
    assert daemon.call("memory.get", id=plain)["source"] == "import:wiki/page-12"


def test_a_record_fed_by_a_file_named_with_a_token_shows_its_redacted_path(daemon):
    _write_entries(daemon.home)
    assert daemon.call("maintenance.run", job="kb_sweep")["report"]["imported"] == 3
    found = next(r for r in daemon.call("memory.search", query="keys rotate monthly")["records"]
                 if r["body"].startswith("The keys rotate"))
    shown = "knowledge/conventions/keys-redacted-aws_access_key_id.md"
    record = daemon.call("memory.get", id=found["id"])
    assert record["source"] == shown and record["meta"]["kb_path"] == shown
    assert daemon.call("memory.provenance", id=found["id"])["kb_entries"] == [shown]
    assert daemon.call("knowledge.get", path=shown)["body"] == "The keys rotate monthly.\n"
