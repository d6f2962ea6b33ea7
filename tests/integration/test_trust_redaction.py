"""Trust by author and redaction on the way in, end to end through a running daemon.

SPEC §3.2 (v2): `human` only for `trust.human_authors` (default: the daemon user's login name),
`system` for `engine`, `agent` for everyone else; front matter cannot raise a note's trust.
SPEC §3.1 (v2): secrets are redacted in everything derived from a note (LLM prompt, digest, KB
entry, notebook, SQL record, and so recall packs); the archived original stays as written, 0600.
"""

from __future__ import annotations

import getpass
import json
import os
import stat
from pathlib import Path

import pytest

from minionsd.client import RpcError
from tests.conftest import wait_for
from tests.integration.test_consolidation import archived, drop, home_with, note

# Made-up values in the vendors' shapes (never real credentials).
GITHUB_TOKEN = "ghp_R8fKq2ZtLw91XbNc4VyH7eJm3UaP0sDgQ6iT"
AWS_KEY_ID = "AKIAQ7ZK4NDP2XWM8R5T"
AWS_SECRET = "Jx9vT2mQ/8kLp4RzW7nY+3bCdF6gH1sA0eUoIiKq"
SECRETS = (GITHUB_TOKEN, AWS_KEY_ID, AWS_SECRET)
LEAKY_BODY = (
    "Deploys to the kumquat cluster failed until the runner had fresh credentials.\n\n"
    f"- export GITHUB_TOKEN={GITHUB_TOKEN} before `make release`\n"
    f"- the runner used {AWS_KEY_ID} with aws_secret_access_key = {AWS_SECRET}\n"
    f"- clone with https://x-access-token:{GITHUB_TOKEN}@github.com/acme/kumquat.git\n"
)


def _trusts(daemon, query: str) -> dict[str, str]:
    found = daemon.call("memory.search", query=query, limit=50)["records"]
    return {r["author"]: r["trust"] for r in found}


def test_trust_follows_the_author_only(make_daemon, short_home):
    me = getpass.getuser()
    home = home_with(short_home, "auto_consolidate_memory = false\n")
    daemon = make_daemon()
    inbox = home / "notes" / "inbox"
    drop(inbox, "claude-1.md", note("Session note", "zucchini alpha from a session",
                                    author="claude-session-7"), age_s=5)
    drop(inbox, "mine.md", note("Owner note", "zucchini beta from the owner", author=me),
         age_s=5)
    drop(inbox, "mallory.md", note("Claimed human", "zucchini gamma claims trust",
                                   author="mallory", trust="human"), age_s=5)
    drop(inbox, "dallas-x.md", note("Agent note", "zucchini delta from dallas"), age_s=5)
    drop(inbox, "engine-alert.md", note("Alert", "zucchini epsilon alert", author="engine"),
         age_s=5)
    assert daemon.call("consolidation.run", force=True)["notes"] == 5
    trusts = _trusts(daemon, "zucchini")
    # `author: engine` in a dropped file is a claim anyone can make: only the daemon's own
    # alerts (written through inbox.submit's code, which refuses `engine` over the socket)
    # are `system`.
    assert trusts == {"claude-session-7": "agent", me: "human", "mallory": "agent",
                      "dallas": "agent", "engine": "agent"}
    with pytest.raises(RpcError) as err:
        daemon.call("inbox.submit", body="zucchini zeta", author="engine")
    assert err.value.code == -32602 and "reserved" in str(err.value)

    # A configured list replaces the default: the login name is no longer human by itself.
    daemon.call("config.set", key="trust.human_authors", value=["alice", "mallory"])
    drop(inbox, "alice.md", note("Alice", "rutabaga one by alice", author="alice"), age_s=5)
    drop(inbox, "mine-2.md", note("Owner again", "rutabaga two by the owner", author=me),
         age_s=5)
    drop(inbox, "bob.md", note("Bob", "rutabaga three by bob", author="bob"), age_s=5)
    daemon.call("consolidation.run", force=True)
    assert _trusts(daemon, "rutabaga") == {"alice": "human", me: "agent", "bob": "agent"}
    # Records made before the change keep the trust they had.
    assert _trusts(daemon, "zucchini")["mallory"] == "agent"
    assert _trusts(daemon, "zucchini")[me] == "human"

    # knowledge.create is direct authoring: human trust whoever it names (SPEC §3.6);
    # hand-added KB files follow the author rule.
    made = daemon.call("knowledge.create", category="conventions", title="Parsnip rule",
                       body="parsnip by alice", author="alice")
    other = daemon.call("knowledge.create", category="conventions", title="Parsnip two",
                        body="parsnip by an agent", author="codex-3")
    assert daemon.call("memory.get", id=made["record_id"])["trust"] == "human"
    assert daemon.call("memory.get", id=other["record_id"])["trust"] == "human"
    conventions = home / "knowledge" / "conventions"
    (conventions / "hand-alice.md").write_text("---\nauthor: alice\n---\n# Okra\n\nokra one\n")
    (conventions / "hand-anon.md").write_text("---\ntrust: human\n---\n# Okra\n\nokra two\n")
    daemon.call("maintenance.run", job="kb_sweep")
    by_body = {r["body"].splitlines()[-1]: r["trust"] for r in
               daemon.call("memory.search", query="okra", limit=10)["records"]}
    assert by_body == {"okra one": "human", "okra two": "agent"}


def test_bad_human_authors_value_is_refused(daemon):
    for bad in ("alice", ["alice", 3], [""]):
        with pytest.raises(RpcError) as err:
            daemon.call("config.set", key="trust.human_authors", value=bad)
        assert err.value.code == -32602 and "trust.human_authors" in err.value.detail
    assert daemon.call("config.get", key="trust.human_authors")["value"] == []  # not applied
    config_file = daemon.home / "config.toml"
    assert not config_file.exists() or "trust" not in config_file.read_text()  # nor written


def _all_text(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text(encoding="utf-8", errors="replace")
            for p in root.rglob("*.md") if p.is_file()}


def test_secrets_never_reach_derived_surfaces(make_daemon, short_home, fake_anthropic):
    home = home_with(short_home, "auto_consolidate_memory = false\n")
    with open(home / "config.toml", "a") as handle:
        handle.write(f'[llm]\nbase_url = "{fake_anthropic.url}"\ntimeout_s = 2\n'
                     "max_retries = 0\n")
    daemon = make_daemon(env={"ANTHROPIC_API_KEY": "test-key"})
    # The model fails, so the regex digest is written from the same (redacted) notes the
    # prompt carried: both paths are checked in one batch.
    fake_anthropic.set_mode("error", status=500)
    inbox = home / "notes" / "inbox"
    original = note(f"Kumquat deploy with {GITHUB_TOKEN}", LEAKY_BODY, agent="dallas",
                    project="kumquat")
    drop(inbox, "dallas-deploy.md", original, age_s=5)
    os.chmod(inbox / "dallas-deploy.md", 0o644)
    result = daemon.call("consolidation.run", force=True)
    assert result["mode"] == "regex" and result["notes"] == 1
    prompt = fake_anthropic.requests[-1].prompt
    assert "kumquat" in prompt.lower() and "[REDACTED:github_token]" in prompt
    derived = {"prompt": prompt, "notes.md": (home / "notes.md").read_text()}
    derived |= _all_text(home / "knowledge")
    assert "knowledge/agents/dallas.md" in {f"knowledge/{k}" for k in derived} and \
        len([k for k in derived if k.startswith("project-notes")]) == 1
    found = daemon.call("memory.search", query="kumquat cluster credentials")
    assert found["total"] == 1
    record = daemon.call("memory.get", id=found["records"][0]["id"])
    derived["search"] = json.dumps(found)
    derived["record"] = json.dumps(record)
    pack = daemon.call("prompt.assemble", task={"id": "W-77", "title": "Kumquat deploy fails",
                                                "description": "runner credentials cluster"},
                       project="kumquat", agent="ripley")
    assert "kumquat cluster" in pack["text"]
    derived["pack"] = pack["text"]
    derived["file names"] = "\n".join(str(p) for p in home.rglob("*") if "archive" not in p.parts)
    for surface, text in derived.items():
        for secret in SECRETS:
            assert secret not in text, f"{secret[:8]}... reached {surface}"
    for surface in ("notes.md", "record", "dallas.md"):
        text = next(v for k, v in derived.items() if k.endswith(surface))
        assert "[REDACTED:" in text, surface
    # The archived original is the one copy as written, and only its owner can read it.
    (name,) = archived(home)
    kept = home / "notes" / "archive" / name
    assert kept.read_text() == original
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600


def test_direct_writes_are_redacted(daemon):
    made = daemon.call("knowledge.create", category="conventions",
                       title=f"Token {GITHUB_TOKEN}", body=LEAKY_BODY, author="ripley")
    entry = (daemon.home / made["path"]).read_text()
    added = daemon.call("memory.add", body=LEAKY_BODY, title=f"key {AWS_KEY_ID}",
                        type="semantic", scope="global", trust="agent", source="test")
    texts = [entry, made["path"],
             json.dumps(daemon.call("memory.get", id=made["record_id"])),
             json.dumps(daemon.call("memory.get", id=added["id"]))]
    for text in texts:
        for secret in SECRETS:
            assert secret not in text
    assert "[REDACTED:github_token]" in entry
    wait_for(lambda: daemon.call("memory.search", query="kumquat")["total"] == 2,
             what="both records searchable")


def test_corpus_sample_through_episode_capture(make_daemon, short_home):
    """Every 8th case of both sides of the corpus, as an episode summary on a real daemon."""
    from tests.unit.test_redaction_corpus import NEAR_MISSES, SECRETS, leaked

    short_home.mkdir(parents=True, exist_ok=True)
    (short_home / "config.toml").write_text("[engine]\nmemory_episodic_capture = true\n")
    daemon = make_daemon()

    def captured_body(summary: str, number: int) -> str:
        stored = daemon.call("episode.capture", outcome="success", task_id=f"W-{number}",
                             agent="dallas", summary=summary)
        assert stored["captured"] is True, stored
        return daemon.call("memory.get", id=stored["id"])["body"]

    secrets_sample, near_sample = SECRETS[::8], NEAR_MISSES[::8]
    assert len(secrets_sample) >= 20 and len(near_sample) >= 15
    for case in secrets_sample:
        body = captured_body(case.text, case.line)
        assert not leaked(case, body), body
        assert f"[REDACTED:{case.kind}]" in body
    for line, text in near_sample:
        assert text.strip() in captured_body(text, 10_000 + line)


@pytest.mark.parametrize("crash_at", ["kb:2", "notebook:1", "sql:1", "archive:2"])
def test_redaction_survives_a_crash_and_redo(make_daemon, short_home, crash_at):
    """kill -9 mid-batch, restart: the redo derives the same redacted text (one KB entry per
    note, no secret anywhere derived) and the archive keeps the originals."""
    short_home.mkdir(parents=True)
    (short_home / "config.toml").write_text(
        "[engine]\ninbox_settle_ms = 0\nauto_consolidate_memory = false\n"
        "[agents.dallas]\nname = \"Dallas\"\n")
    inbox = short_home / "notes" / "inbox"
    tokens = [f"ghp_{i}R8fKq2ZtLw91XbNc4VyH7eJm3UaP0sDgQ6i" for i in range(3)]
    for i, token in enumerate(tokens):
        drop(inbox, f"dallas-deploy-{i}.md",
             note(f"Deploy {i}", f"parsnip{i} release used GITHUB_TOKEN={token} today",
                  agent="dallas"), age_s=30 - i)
    doomed = make_daemon(env={"MINIONS_TEST_CRASH_AT": crash_at})
    with pytest.raises(Exception):  # noqa: B017 - the daemon dies mid-call
        doomed.call("consolidation.run", force=True)
    doomed.proc.wait(10)
    daemon = make_daemon()
    wait_for(lambda: daemon.call("consolidation.run", force=True)["mode"] == "nothing",
             what="batch redone")
    derived = _all_text(short_home / "knowledge") | {"notes.md": (short_home / "notes.md")
                                                    .read_text()}
    kb = [k for k in derived if not k.startswith("agents")]
    assert len(kb) == 4  # three entries + notes.md
    archive = _all_text(short_home / "notes" / "archive")
    for i, token in enumerate(tokens):
        found = daemon.call("memory.search", query=f"parsnip{i}")
        assert found["total"] == 1
        assert token not in json.dumps(found)
        assert all(token not in text for text in derived.values())
        assert sum(token in text for text in archive.values()) == 1


def test_a_secret_in_the_note_file_name_reaches_no_derived_surface(make_daemon, short_home):
    """The inbox file name becomes the archive name, the record's source and the KB entry's
    `source:`; a token in it (a note named after a branch or a URL) is redacted there too."""
    home = home_with(short_home, "auto_consolidate_memory = false\n")
    daemon = make_daemon()
    drop(home / "notes" / "inbox", f"dallas-{GITHUB_TOKEN}.md",
         note("Deploy note", "persimmon deploy worked", agent="dallas"), age_s=5)
    result = daemon.call("consolidation.run", force=True)
    assert result["notes"] == 1
    (found,) = daemon.call("memory.search", query="persimmon")["records"]
    record = daemon.call("memory.get", id=found["id"])
    pack = daemon.call("prompt.assemble", task={"id": "W-5", "title": "persimmon deploy"})
    surfaces = {"record": json.dumps(record), "pack": pack["text"],
                "result": json.dumps(result)} | _all_text(home / "knowledge")
    surfaces["file names"] = "\n".join(str(p) for p in home.rglob("*"))
    for surface, text in surfaces.items():
        assert GITHUB_TOKEN not in text, f"the token reached {surface}"
    assert "redacted-github_token" in record["source"]
    assert (home / record["source"]).read_text().startswith("---\n")  # the archived note


def test_a_retraction_reason_is_redacted(daemon):
    """memory_retract is an agent tool, so its reason is written text like a note's."""
    rid = daemon.call("memory.add", body="quince migration uses blue green", type="semantic",
                      scope="global", trust="agent", source="test")["id"]
    done = daemon.call("memory.retract", id=rid, reason=f"wrong; use {GITHUB_TOKEN} instead")
    got = daemon.call("memory.get", id=rid)
    for text in (json.dumps(done), json.dumps(got)):
        assert GITHUB_TOKEN not in text
    assert got["retracted_reason"] == "wrong; use [REDACTED:github_token] instead"
